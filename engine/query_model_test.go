package engine

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ebbdb/ebb/engine/internal/pkey"
	"github.com/ebbdb/ebb/engine/query"
)

// bruteQuery answers a query the slow, obvious way: every live item from
// Items, through query's brute-force Run (match, sort, window, project).
// The planner, the secondary index and its upkeep are checked against it.
func bruteQuery(t testing.TB, c *Container, sql string, params []Param) []string {
	return bruteQueryOf(t, c, c.Items(context.Background()), sql, params)
}

// bruteQueryOf is bruteQuery over the items of seq (a partition's). Ties
// are broken by item key (key value, then id), as a container with a
// partition key breaks them.
func bruteQueryOf(t testing.TB, c *Container, seq iter.Seq2[Item, error], sql string, params []Param) []string {
	t.Helper()
	q, err := c.prepareQuery(context.Background(), sql, params)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var docs []query.Value
	var keys []string
	for it, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		v, err := query.Decode(it.Body)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, v)
		key := it.ID
		if c.kp != nil {
			key = pkey.Compose(it.PartitionKey.k, it.ID)
		}
		keys = append(keys, key)
	}
	var out []string
	for _, v := range q.RunKeyed(docs, keys) {
		out = append(out, canonicalJSON(t, v.AppendJSON(nil)))
	}
	return out
}

// queryGen makes random queries over the fields that qmDoc writes.
type queryGen struct{ rng *rand.Rand }

func (g queryGen) pick(s ...string) string { return s[g.rng.IntN(len(s))] }

func (g queryGen) num() string { return strconv.Itoa(g.rng.IntN(8)) }

func (g queryGen) str() string { return "'" + g.pick("", "a", "ab", "abc", "b", "ba") + "'" }

func (g queryGen) pred(depth int) string {
	if depth > 0 && g.rng.IntN(3) == 0 {
		op := g.pick("AND", "OR")
		return "(" + g.pred(depth-1) + " " + op + " " + g.pred(depth-1) + ")"
	}
	switch g.rng.IntN(15) {
	case 13:
		return "c.id " + g.pick("=", "<", ">=") + " 'k" + strconv.Itoa(g.rng.IntN(40)) + "'"
	case 14:
		return "c.id IN ('k" + strconv.Itoa(g.rng.IntN(40)) + "', 'k" + strconv.Itoa(g.rng.IntN(40)) + "', 3)"
	case 0:
		return "c.n = " + g.num()
	case 1:
		return "c.n " + g.pick("<", "<=", ">", ">=") + " " + g.num()
	case 2:
		return "c.s = " + g.str()
	case 3:
		return "c.s " + g.pick("<", ">=") + " " + g.str()
	case 4:
		return "STARTSWITH(c.s, " + g.str() + ")"
	case 5:
		return "ARRAY_CONTAINS(c.tags, " + g.str() + ")"
	case 6:
		return "c.n IN (" + g.num() + ", " + g.num() + ", " + g.str() + ")"
	case 7:
		return "c.o.x " + g.pick("=", "<", ">") + " " + g.num()
	case 8:
		return "c.b = " + g.pick("true", "false")
	case 9:
		return "NOT (" + g.pred(depth-1) + ")"
	case 10:
		return "IS_DEFINED(c." + g.pick("n", "s", "o.x", "b") + ")"
	case 11:
		return "c.n != " + g.num()
	default:
		return "c.n = @p"
	}
}

func (g queryGen) query() (string, []Param) {
	sel := g.pick("*", "*", "VALUE c.n", "VALUE c.s", "c.n, c.s", "VALUE COUNT(1)")
	var b strings.Builder
	b.WriteString("SELECT ")
	top := sel != "VALUE COUNT(1)" && g.rng.IntN(6) == 0
	if top {
		fmt.Fprintf(&b, "TOP %d ", g.rng.IntN(5))
	}
	b.WriteString(sel + " FROM c")
	if g.rng.IntN(5) != 0 {
		b.WriteString(" WHERE " + g.pred(2))
	}
	if sel != "VALUE COUNT(1)" {
		if g.rng.IntN(3) == 0 {
			b.WriteString(" ORDER BY c." + g.pick("n", "s", "o.x", "id") + g.pick("", " ASC", " DESC"))
		}
		if !top && g.rng.IntN(5) == 0 {
			fmt.Fprintf(&b, " OFFSET %d LIMIT %d", g.rng.IntN(4), g.rng.IntN(6))
		}
	}
	sql := b.String()
	var params []Param
	if strings.Contains(sql, "@p") {
		params = []Param{{Name: "@p", Value: g.rng.IntN(8)}}
	}
	return sql, params
}

// qmDoc is a random document over a small domain, so that queries hit.
func qmDoc(rng *rand.Rand, id string) string {
	var f []string
	f = append(f, strconv.Quote("id")+":"+strconv.Quote(id))
	switch rng.IntN(6) {
	case 0: // n absent
	case 1:
		f = append(f, `"n":"`+strconv.Itoa(rng.IntN(8))+`"`)
	case 2:
		f = append(f, `"n":null`)
	default:
		f = append(f, `"n":`+strconv.Itoa(rng.IntN(8)))
	}
	if rng.IntN(5) != 0 {
		f = append(f, `"s":"`+[]string{"", "a", "ab", "abc", "b", "ba", "c"}[rng.IntN(7)]+`"`)
	}
	if rng.IntN(2) == 0 {
		f = append(f, `"b":`+strconv.FormatBool(rng.IntN(2) == 0))
	}
	if rng.IntN(3) != 0 {
		var tags []string
		for range rng.IntN(4) {
			tags = append(tags, `"`+[]string{"a", "ab", "b", "x"}[rng.IntN(4)]+`"`)
		}
		f = append(f, `"tags":[`+strings.Join(tags, ",")+`]`)
	}
	if rng.IntN(2) == 0 {
		f = append(f, `"o":{"x":`+strconv.Itoa(rng.IntN(8))+`}`)
	}
	if rng.IntN(3) == 0 {
		f = append(f, `"ttl":`+strconv.Itoa(1+rng.IntN(30)))
	}
	rng.Shuffle(len(f), func(i, j int) { f[i], f[j] = f[j], f[i] })
	return "{" + strings.Join(f, ",") + "}"
}

// TestQueryModel drives random writes, deletes, clock moves, indexing
// policy changes, compactions and restarts, and after each step checks
// random queries against bruteQuery. EBB_QUERY_ROUNDS runs more.
func TestQueryModel(t *testing.T) {
	rounds := 12
	if s := os.Getenv("EBB_QUERY_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	for seed := range uint64(rounds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { queryModelRound(t, seed) })
	}
}

func queryModelRound(t *testing.T, seed uint64) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 77))
	gen := queryGen{rng}
	clk := newFakeClock(t0)
	dir := t.TempDir()
	small := func(o *Options) {
		o.SealThreshold = 4 << 10
		o.BlockSize = 512
		o.CompactionInterval = -1
	}
	db := openTest(t, dir, clk, small)
	defer func() { db.Close() }()
	mode := allModes[rng.IntN(3)]
	props := ContainerProperties{ID: "m", Indexing: mode}
	keyed := seed%3 == 2 // a container with a partition key: scoped and cross-partition queries
	if keyed {
		props.PartitionKeyPath = "/p"
	}
	keys := []PartitionKey{NoneKey(), StringKey("x"), NumberKey(1)}
	if mode != IndexingNone {
		props.DefaultTTL = TTL(int32(20 + rng.IntN(40)))
	}
	c := mustCreateContainer(t, db, props)
	checks := 0
	// Now and then the index loop is held from a step's writes to its
	// queries: a consistent query then sets the queued terms itself.
	held := false
	release := func() {
		if held {
			db.indexHold.Unlock()
			held = false
		}
	}
	defer release() // before Close, which waits for the loop
	for step := range 60 {
		if held = rng.IntN(3) == 0; held {
			db.indexHold.Lock()
		}
		for range 1 + rng.IntN(20) {
			id := "k" + strconv.Itoa(rng.IntN(40))
			doc, k := qmDoc(rng, id), keys[rng.IntN(len(keys))]
			if keyed && !k.IsNone() {
				doc = `{"p":` + strings.Trim(k.String(), "[]") + "," + doc[1:]
			}
			var err error
			switch rng.IntN(10) {
			case 0:
				if keyed {
					err = c.Partition(k).Delete(ctx, id)
				} else {
					err = c.Delete(ctx, id)
				}
			case 1:
				_, err = c.Replace(ctx, []byte(doc))
			default:
				_, err = c.Upsert(ctx, []byte(doc))
			}
			if err != nil && !isNotFound(err) {
				t.Fatal(err)
			}
		}
		act := rng.IntN(12)
		if act == 4 || act == 5 {
			release() // Close waits for the loop, and a build needs it
		}
		switch act {
		case 0, 1, 2:
			clk.Advance(int64(rng.IntN(15)))
		case 3:
			if err := c.Compact(ctx); err != nil {
				t.Fatal(err)
			}
		case 4: // restart: the index is rebuilt from the documents
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = openTest(t, dir, clk, small)
			var err error
			if c, err = db.Container("m"); err != nil {
				t.Fatal(err)
			}
		case 5: // indexing policy change
			p := c.Properties()
			if p.DefaultTTL == nil {
				p.Indexing = allModes[rng.IntN(3)]
			} else {
				p.Indexing = allModes[rng.IntN(2)]
			}
			p.IncludedPaths, p.ExcludedPaths = nil, nil
			switch rng.IntN(3) {
			case 0:
				p.ExcludedPaths = []string{"/" + gen.pick("n", "s", "tags", "o") + "/*"}
			case 1:
				p.IncludedPaths = []string{"/" + gen.pick("n", "s", "o") + "/?", "/tags/[]/?"}
				p.ExcludedPaths = []string{"/*"}
			}
			if err := c.SetProperties(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		if rng.IntN(2) == 0 {
			release()
			waitIndexed(t, c) // otherwise queries may run while the index builds
		}
		for range 8 {
			sql, params := gen.query()
			// A lazy index may lag behind the writes; the test writes
			// nothing while it queries, so one caught up before the query
			// stays so.
			c.mu.RLock()
			lagging := c.indexLaggingLocked()
			c.mu.RUnlock()
			var got []string
			seq, items := c.Query(ctx, sql, params...), c.Items(ctx)
			if keyed && rng.IntN(2) == 0 {
				p := c.Partition(keys[rng.IntN(len(keys))])
				seq, items = p.Query(ctx, sql, params...), p.Items(ctx)
			}
			for it, err := range seq {
				if err != nil {
					t.Fatalf("step %d: %s: %v", step, sql, err)
				}
				got = append(got, canonicalJSON(t, it.Body))
			}
			if lagging {
				continue
			}
			want := bruteQueryOf(t, c, items, sql, params)
			if !slices.Equal(got, want) {
				plan, _ := c.Explain(sql, params...)
				t.Fatalf("seed %d step %d: %s %v\nplan:\n%s\n got %v\nwant %v", seed, step, sql, params, plan, got, want)
			}
			checks++
		}
		release()
	}
	t.Logf("seed %d: %d queries checked against the brute-force evaluator (mode %s)", seed, checks, mode)
}
