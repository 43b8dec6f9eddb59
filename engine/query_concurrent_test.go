package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/query"
	"github.com/ebbdb/ebb/policy"
)

// concurrentDoc is a random item for TestQueryUnderWrites: n is mostly a small
// number, sometimes a string, an array or missing; some items expire soon.
func concurrentDoc(rng *rand.Rand, id string) string {
	n := strconv.Itoa(rng.IntN(21) - 5)
	switch rng.IntN(12) {
	case 0:
		n = `"s` + strconv.Itoa(rng.IntN(5)) + `"`
	case 1:
		n = "[1]"
	}
	doc := fmt.Sprintf(`{"id":%q,"n":%s,"g":%q`, id, n, []string{"a", "b"}[rng.IntN(2)])
	if rng.IntN(12) == 1 {
		doc = fmt.Sprintf(`{"id":%q,"g":"a"`, id)
	}
	if rng.IntN(5) == 0 {
		doc += fmt.Sprintf(`,"ttl":%d`, 1+rng.IntN(5))
	}
	return doc + "}"
}

// concurrentQueries are queries of every kind the property covers.
var concurrentQueries = []string{
	`SELECT * FROM c WHERE c.n = 3`,
	`SELECT * FROM c WHERE c.n >= 0 AND c.n < 8`,
	`SELECT * FROM c ORDER BY c.n`,
	`SELECT * FROM c ORDER BY c.n DESC`,
	`SELECT TOP 3 * FROM c ORDER BY c.n DESC`,
	`SELECT TOP 4 * FROM c ORDER BY c.n`,
	`SELECT * FROM c WHERE c.n > 1 ORDER BY c.n OFFSET 2 LIMIT 4`,
	`SELECT * FROM c ORDER BY c.n DESC OFFSET 1 LIMIT 5`,
	`SELECT c.id, c.n FROM c WHERE c.g = 'a' ORDER BY c.n`,
	`SELECT VALUE c.id FROM c WHERE c.g = 'b' ORDER BY c.n DESC`,
	`SELECT VALUE COUNT(1) FROM c WHERE c.n > 2`,
	`SELECT TOP 5 c.n FROM c`,
	`SELECT * FROM c WHERE c.g = 'a' OFFSET 3 LIMIT 3`,
	`SELECT * FROM c ORDER BY c.id DESC`,
	`SELECT TOP 4 * FROM c WHERE c.n < 10 ORDER BY c.id`,
	`SELECT * FROM c ORDER BY c.g DESC`,
	`SELECT c.n FROM c WHERE c.n != 3 ORDER BY c.n DESC OFFSET 1 LIMIT 20`,
	`SELECT VALUE COUNT(1) FROM c`,
}

// TestQueryUnderWrites: a query answers from a consistent view even while
// the container changes under it. After each result the test writes,
// deletes, moves the clock (items expire), changes the indexing policy or
// the DefaultTTL (items expire, or would come back if expiry were not
// final), and checks every result: it is a version of the item that was
// live during the query (live and unexpired at its start, or written
// since) and that matches the WHERE; it is not expired when it is yielded,
// by the clock then and the full DefaultTTL history; results come in the
// requested order of those versions; no item comes twice; no more than
// TOP/LIMIT. A COUNT equals the brute-force count at its start.
func TestQueryUnderWrites(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { queryUnderWrites(t, seed) })
	}
}

func queryUnderWrites(t *testing.T, seed uint64) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 18))
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk)
	defer db.Close()
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "w", Indexing: engine.IndexingConsistent, DefaultTTL: engine.TTL(-1)})
	// full is the container's DefaultTTL history, never pruned: what
	// decides whether an item is expired at an instant.
	full := policy.History{}.With(clk.Unix(), engine.TTL(-1))
	const nItems = 30
	versions := map[string][]byte{} // etag → body, of versions live during the query
	write := func() {
		id := "k" + strconv.Itoa(rng.IntN(nItems))
		var err error
		switch r := rng.IntN(20); {
		case r < 2:
			err = c.Delete(ctx, id)
		case r < 4:
			clk.Advance(int64(1 + rng.IntN(3)))
		case r == 4:
			p := c.Properties()
			p.IncludedPaths, p.ExcludedPaths = nil, nil
			if rng.IntN(3) == 0 {
				p.ExcludedPaths = []string{"/g/?"}
			}
			err = c.SetProperties(ctx, p)
		case r == 5:
			p := c.Properties()
			p.DefaultTTL = []*int32{nil, engine.TTL(-1), engine.TTL(3), engine.TTL(8)}[rng.IntN(4)]
			if err = c.SetProperties(ctx, p); err == nil && !sameTTLPtr(p.DefaultTTL, full.Current()) {
				full = full.With(clk.Unix(), p.DefaultTTL)
			}
		default:
			var it engine.Item
			if it, err = c.Upsert(ctx, []byte(concurrentDoc(rng, id))); err == nil {
				versions[it.ETag] = it.Body
			}
		}
		if err != nil && !errors.Is(err, engine.ErrNotFound) {
			t.Fatal(err)
		}
	}
	for i := range nItems {
		if _, err := c.Upsert(ctx, []byte(concurrentDoc(rng, "k"+strconv.Itoa(i)))); err != nil {
			t.Fatal(err)
		}
	}
	checked := 0
	for round := range 60 {
		for range rng.IntN(4) {
			write()
		}
		sql := concurrentQueries[rng.IntN(len(concurrentQueries))]
		pq, err := query.Parse(sql)
		if err != nil {
			t.Fatal(err)
		}
		b, err := pq.Bind(nil)
		if err != nil {
			t.Fatal(err)
		}
		_, desc, ordered := b.OrderBy()
		_, limit := b.Window()
		clear(versions)
		var want int64
		for it, err := range c.Items(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			versions[it.ETag] = it.Body
			if v, _ := query.Decode(it.Body); b.Match(v) {
				want++
			}
		}
		seen := map[string]bool{}
		var lastKey query.Value
		lastID, n := "", int64(0)
		for it, err := range c.Query(ctx, sql) {
			if err != nil {
				t.Fatalf("round %d %s: %v", round, sql, err)
			}
			n++
			if b.IsCount() {
				if got := string(it.Body); got != strconv.FormatInt(want, 10) {
					t.Fatalf("round %d %s: count %s, want %d", round, sql, got, want)
				}
				continue
			}
			body, ok := versions[it.ETag]
			if !ok {
				t.Fatalf("round %d %s: result %s at etag %s was never live during the query", round, sql, it.ID, it.ETag)
			}
			doc, _ := query.Decode(body)
			if !b.Match(doc) {
				t.Fatalf("round %d %s: result %s does not match: %s", round, sql, it.ID, body)
			}
			var sys struct {
				TS  int64 `json:"_ts"`
				TTL int32 `json:"ttl"`
			}
			if err := json.Unmarshal(body, &sys); err != nil {
				t.Fatal(err)
			}
			if exp := full.ExpiresAt(sys.TS, sys.TTL); policy.Expired(exp, clk.Unix()) {
				t.Fatalf("round %d %s: result %s expired at %d, yielded at %d: %s", round, sql, it.ID, exp, clk.Unix(), body)
			}
			if seen[it.ID] {
				t.Fatalf("round %d %s: %s twice", round, sql, it.ID)
			}
			seen[it.ID] = true
			key := b.OrderKey(doc)
			if ordered && lastID != "" && query.CompareOrder(lastKey, lastID, key, it.ID, desc) >= 0 {
				t.Fatalf("round %d %s: %s (%v) after %s (%v)", round, sql, it.ID, key, lastID, lastKey)
			}
			lastKey, lastID = key, it.ID
			if rng.IntN(3) > 0 {
				write()
			}
			checked++
		}
		if limit >= 0 && n > limit {
			t.Fatalf("round %d %s: %d results, limit %d", round, sql, n, limit)
		}
	}
	t.Logf("seed %d: %d results checked", seed, checked)
}

// TestQueryOrderWithWriter is the same property with the changes made by
// another goroutine while queries run (the case the issue reported: n =
// 0..9, i5 upserted to -1 after the first result came out in the middle):
// upserts (some with a ttl, some without n), deletes, the clock moving on
// and policy changes (the ORDER BY path indexed or not, DefaultTTL on, off
// or short). Each SELECT * result matches the WHERE as yielded, results are
// in order, no item comes twice, no more than TOP/LIMIT, and every result
// is a version that was written. (Whether it had expired when yielded is
// left to TestQueryUnderWrites, where the clock stands still meanwhile.)
func TestQueryOrderWithWriter(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk)
	defer db.Close()
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "w", DefaultTTL: engine.TTL(-1)})
	var mu sync.Mutex
	written := map[string]bool{} // etags of every version written
	upsert := func(doc []byte) error {
		it, err := c.Upsert(ctx, doc)
		if err == nil {
			mu.Lock()
			written[it.ETag] = true
			mu.Unlock()
		}
		return err
	}
	for i := range 40 {
		if err := upsert(fmt.Appendf(nil, `{"id":"i%d","n":%d,"f":%d}`, i, i, i%3)); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	done := make(chan error)
	go func() {
		rng := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			id := rng.IntN(40)
			var err error
			switch r := rng.IntN(40); {
			case r < 4:
				if err = c.Delete(ctx, fmt.Sprintf("i%d", id)); errors.Is(err, engine.ErrNotFound) {
					err = nil
				}
			case r < 6:
				clk.Advance(1)
			case r == 6:
				p := engine.ContainerProperties{ID: "w", DefaultTTL: c.Properties().DefaultTTL}
				if rng.IntN(2) == 0 {
					p.ExcludedPaths = []string{"/n/?"}
				}
				err = c.SetProperties(ctx, p)
			case r == 7:
				p := c.Properties()
				p.DefaultTTL = []*int32{nil, engine.TTL(-1), engine.TTL(5)}[rng.IntN(3)]
				err = c.SetProperties(ctx, p)
			case r < 10:
				err = upsert(fmt.Appendf(nil, `{"id":"i%d","f":%d,"ttl":%d}`, id, rng.IntN(3), 1+rng.IntN(4)))
			default:
				err = upsert(fmt.Appendf(nil, `{"id":"i%d","n":%d,"f":%d}`, id, rng.IntN(80)-40, rng.IntN(3)))
			}
			if err != nil {
				done <- err
				return
			}
		}
	}()
	queries := []string{
		`SELECT * FROM c ORDER BY c.n`,
		`SELECT TOP 3 * FROM c ORDER BY c.n DESC`,
		`SELECT * FROM c WHERE c.n > 0 ORDER BY c.n DESC`,
		`SELECT * FROM c ORDER BY c.n OFFSET 5 LIMIT 10`,
		`SELECT TOP 3 * FROM c WHERE c.f != 1 ORDER BY c.n`,
		`SELECT * FROM c WHERE c.n >= -10 AND c.n < 10`,
		`SELECT * FROM c ORDER BY c.id DESC OFFSET 2 LIMIT 8`,
		`SELECT TOP 5 * FROM c WHERE c.f = 2`,
	}
	var etags []string
	for round := range 400 {
		sql := queries[round%len(queries)]
		b, _ := query.Parse(sql)
		bq, _ := b.Bind(nil)
		_, desc, ordered := bq.OrderBy()
		_, limit := bq.Window()
		seen := map[string]bool{}
		var lastKey query.Value
		lastID, n := "", int64(0)
		for it, err := range c.Query(ctx, sql) {
			if err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
			n++
			etags = append(etags, it.ETag)
			doc, err := query.Decode(it.Body)
			if err != nil || !bq.Match(doc) || seen[it.ID] {
				t.Fatalf("%s: result %s (%s) does not match, or comes twice", sql, it.ID, it.Body)
			}
			seen[it.ID] = true
			key := bq.OrderKey(doc)
			if ordered && lastID != "" && query.CompareOrder(lastKey, lastID, key, it.ID, desc) >= 0 {
				t.Fatalf("%s: %s (%v) after %s (%v)", sql, it.ID, key, lastID, lastKey)
			}
			lastKey, lastID = key, it.ID
		}
		if limit >= 0 && n > limit {
			t.Fatalf("%s: %d results, limit %d", sql, n, limit)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, e := range etags {
		if !written[e] {
			t.Fatalf("a result at etag %s, which no write made", e)
		}
	}
	t.Logf("%d results checked", len(etags))
}

// TestQueryOrderIndexDroppedMidWalk: an ORDER BY whose index walk stops
// once it holds the window's worth of items, runs dry after its first
// result (a WHERE the index cannot decide passes over the rest of what was
// walked), and must walk again after the policy stopped indexing the ORDER
// BY path: the query goes on by sorting what is left, in order and without
// the item already yielded. (The second pass used to take the sorted
// candidates for a walk and panic.)
func TestQueryOrderIndexDroppedMidWalk(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), newFakeClock(t0))
	defer db.Close()
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "d"})
	// f != 1 only at n = 0, 20 and 39: the first walkSlack+3 items in
	// either direction hold one match.
	for n := range 40 {
		f := 1
		if n == 0 || n == 20 || n == 39 {
			f = 0
		}
		if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"i%02d","n":%d,"f":%d}`, n, n, f)); err != nil {
			t.Fatal(err)
		}
	}
	for _, order := range []string{"", " DESC"} {
		if err := c.SetProperties(ctx, engine.ContainerProperties{ID: "d"}); err != nil {
			t.Fatal(err)
		}
		waitIndexed(t, c)
		sql := "SELECT TOP 3 * FROM c WHERE c.f != 1 ORDER BY c.n" + order
		var got []string
		for it, err := range c.Query(ctx, sql) {
			if err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
			got = append(got, it.ID)
			if len(got) == 1 {
				if err := c.SetProperties(ctx, engine.ContainerProperties{ID: "d", ExcludedPaths: []string{"/n/?"}}); err != nil {
					t.Fatal(err)
				}
			}
		}
		want := []string{"i00", "i20", "i39"}
		if order != "" {
			slices.Reverse(want)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s, the index on /n dropped after the first result: %v, want %v", sql, got, want)
		}
	}
}

// sameTTLPtr reports whether two DefaultTTLs are the same setting.
func sameTTLPtr(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
