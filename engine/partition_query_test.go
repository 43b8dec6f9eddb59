package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
)

// seedPartitions writes items 0..5 in each of the tenants a, b and c, with
// n = 10*tenant index + i, into container k keyed by /tenant.
func seedPartitions(t *testing.T, c *engine.Container) {
	t.Helper()
	ctx := context.Background()
	for ti, tenant := range []string{"a", "b", "c"} {
		b := c.Partition(engine.StringKey(tenant)).NewBatch()
		for i := range 6 {
			b.Create(fmt.Appendf(nil, `{"id":"i%d","tenant":%q,"n":%d,"i":%d,"odd":%v}`, i, tenant, 10*ti+i, i, i%2 == 1))
		}
		if _, err := c.ExecuteBatch(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
}

// rows runs a query and lists its results as "key/id" or, for VALUE
// queries, the bodies.
func rows(t *testing.T, seq func(func(engine.Item, error) bool)) []string {
	t.Helper()
	var out []string
	for it, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		if it.ID == "" {
			out = append(out, string(it.Body))
			continue
		}
		out = append(out, it.PartitionKey.String()+"/"+it.ID)
	}
	return out
}

func TestPartitionQueries(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []engine.IndexingMode{engine.IndexingConsistent, engine.IndexingLazy, engine.IndexingNone} {
		t.Run(mode.String(), func(t *testing.T) {
			db := openTest(t, t.TempDir(), newFakeClock(t0))
			defer db.Close()
			c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "k", PartitionKeyPath: "/tenant", Indexing: mode})
			seedPartitions(t, c)
			waitIndexed(t, c)
			b := c.Partition(engine.StringKey("b"))
			cases := []struct {
				name string
				seq  func(func(engine.Item, error) bool)
				want string
			}{
				{"cross-partition, key then id order", c.Query(ctx, `SELECT * FROM c WHERE c.i < 2`),
					`["a"]/i0 ["a"]/i1 ["b"]/i0 ["b"]/i1 ["c"]/i0 ["c"]/i1`},
				{"scoped", b.Query(ctx, `SELECT * FROM c WHERE c.odd`), `["b"]/i1 ["b"]/i3 ["b"]/i5`},
				{"scoped, no WHERE", b.Query(ctx, `SELECT * FROM c`), `["b"]/i0 ["b"]/i1 ["b"]/i2 ["b"]/i3 ["b"]/i4 ["b"]/i5`},
				{"scoped ORDER BY DESC TOP", b.Query(ctx, `SELECT TOP 2 * FROM c ORDER BY c.n DESC`), `["b"]/i5 ["b"]/i4`},
				{"cross ORDER BY TOP", c.Query(ctx, `SELECT TOP 4 * FROM c ORDER BY c.n DESC`), `["c"]/i5 ["c"]/i4 ["c"]/i3 ["c"]/i2`},
				{"cross ORDER BY ties by key then id", c.Query(ctx, `SELECT TOP 4 * FROM c ORDER BY c.odd`), `["a"]/i0 ["a"]/i2 ["a"]/i4 ["b"]/i0`},
				{"scoped COUNT", b.Query(ctx, `SELECT VALUE COUNT(1) FROM c`), `6`},
				{"scoped COUNT WHERE", b.Query(ctx, `SELECT VALUE COUNT(1) FROM c WHERE c.n >= 13`), `3`},
				{"cross COUNT", c.Query(ctx, `SELECT VALUE COUNT(1) FROM c`), `18`},
				{"cross COUNT on the key path", c.Query(ctx, `SELECT VALUE COUNT(1) FROM c WHERE c.tenant = 'c'`), `6`},
				{"equality on the key path", c.Query(ctx, `SELECT * FROM c WHERE c.tenant = 'a' AND c.n > 3`), `["a"]/i4 ["a"]/i5`},
				{"scoped equality on another key", b.Query(ctx, `SELECT * FROM c WHERE c.tenant = 'a'`), ``},
				{"id across partitions", c.Query(ctx, `SELECT * FROM c WHERE c.id = 'i3'`), `["a"]/i3 ["b"]/i3 ["c"]/i3`},
				{"id IN across partitions", c.Query(ctx, `SELECT * FROM c WHERE c.id IN ('i3', 'i9')`), `["a"]/i3 ["b"]/i3 ["c"]/i3`},
				{"id in a partition", b.Query(ctx, `SELECT * FROM c WHERE c.id = 'i3'`), `["b"]/i3`},
				{"ORDER BY id across partitions, ties by key ascending", c.Query(ctx, `SELECT TOP 4 * FROM c ORDER BY c.id DESC`), `["a"]/i5 ["b"]/i5 ["c"]/i5 ["a"]/i4`},
				{"ORDER BY id in a partition", b.Query(ctx, `SELECT TOP 2 * FROM c ORDER BY c.id`), `["b"]/i0 ["b"]/i1`},
				{"OFFSET LIMIT", c.Query(ctx, `SELECT * FROM c OFFSET 5 LIMIT 2`), `["a"]/i5 ["b"]/i0`},
				{"VALUE projection", b.Query(ctx, `SELECT VALUE c.n FROM c WHERE c.id = 'i2'`), `["b"]/i2`},
			}
			for _, tc := range cases {
				if got := strings.Join(rows(t, tc.seq), " "); got != tc.want {
					t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
				}
			}
			// Deleting in one partition leaves the others' items of that id.
			if err := b.Delete(ctx, "i3"); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(rows(t, c.Query(ctx, `SELECT * FROM c WHERE c.id = 'i3'`)), " "); got != `["a"]/i3 ["c"]/i3` {
				t.Errorf("after delete in b: %q", got)
			}
		})
	}
}

func TestPartitionKeyPathIndexed(t *testing.T) {
	db := openTest(t, t.TempDir(), newFakeClock(t0))
	defer db.Close()
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "k", PartitionKeyPath: "/tenant"})
	seedPartitions(t, c)
	waitIndexed(t, c)
	plan, err := c.Explain(`SELECT * FROM c WHERE c.tenant = 'b'`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "/tenant") || strings.Contains(plan, "scan") {
		t.Errorf("equality on the key path is not answered by the index:\n%s", plan)
	}
	if plan, _ = c.Explain(`SELECT * FROM c WHERE c.id = 'i1'`); !strings.Contains(plan, "/id") {
		t.Errorf("c.id across partitions does not use the /id terms:\n%s", plan)
	}
}

func TestPartitionTTL(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk)
	defer db.Close()
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "k", PartitionKeyPath: "/tenant", DefaultTTL: engine.TTL(100)})
	a, b := c.Partition(engine.StringKey("a")), c.Partition(engine.StringKey("b"))
	if _, err := a.Create(ctx, []byte(`{"id":"x","tenant":"a","ttl":10}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, []byte(`{"id":"x","tenant":"b"}`)); err != nil { // DefaultTTL: 100 s
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, []byte(`{"id":"y","tenant":"b","ttl":-1}`)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10)
	if _, err := a.Read(ctx, "x"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("a/x after its ttl: %v", err)
	}
	if it, err := b.Read(ctx, "x"); err != nil || it.ExpiresAt != t0+100 {
		t.Errorf("b/x: %v, expires %d", err, it.ExpiresAt)
	}
	if got := rows(t, c.Query(ctx, `SELECT * FROM c WHERE c.id = 'x'`)); !slices.Equal(got, []string{`["b"]/x`}) {
		t.Errorf("query after a/x expired: %v", got)
	}
	// a/x expired: a new a/x may be created, and b's is untouched.
	if _, err := a.Create(ctx, []byte(`{"id":"x","tenant":"a"}`)); err != nil {
		t.Errorf("create over the expired a/x: %v", err)
	}
	clk.Advance(95) // t0+105: b/x expired at t0+100, the new a/x expires at t0+110
	if _, err := b.Read(ctx, "x"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("b/x after DefaultTTL: %v", err)
	}
	if got := itemNames(t, c.Items(ctx)); !slices.Equal(got, []string{`["a"]/x`, `["b"]/y`}) {
		t.Errorf("Items = %v", got)
	}
	if err := c.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Items != 2 || st.ExpiredPending != 0 {
		t.Errorf("Stats after compaction: %+v", st)
	}
}

func TestPartitionBatch(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), newFakeClock(t0))
	defer db.Close()
	c := keyed(t, db, "/tenant")
	a := c.Partition(engine.StringKey("a"))
	if _, err := c.Partition(engine.StringKey("b")).Create(ctx, []byte(`{"id":"x","tenant":"b"}`)); err != nil {
		t.Fatal(err)
	}
	items, err := c.ExecuteBatch(ctx, a.NewBatch().
		Create([]byte(`{"id":"x","tenant":"a"}`)). // b has an x: no conflict
		Upsert([]byte(`{"id":"y","tenant":"a"}`)))
	if err != nil {
		t.Fatal(err)
	}
	if items[0].ID != "x" || items[0].PartitionKey != engine.StringKey("a") {
		t.Errorf("batch item 0: %q %v", items[0].ID, items[0].PartitionKey)
	}
	for _, tc := range []struct {
		name  string
		b     *engine.Batch
		index int
		want  error
	}{
		{"conflict", a.NewBatch().Upsert([]byte(`{"id":"z","tenant":"a"}`)).Create([]byte(`{"id":"x","tenant":"a"}`)), 1, engine.ErrConflict},
		{"not found", a.NewBatch().Upsert([]byte(`{"id":"z","tenant":"a"}`)).Upsert([]byte(`{"id":"w","tenant":"a"}`)).Delete("nope"), 2, engine.ErrNotFound},
		{"precondition", a.NewBatch().Replace([]byte(`{"id":"x","tenant":"a"}`), engine.IfMatch(`"0"`)), 0, engine.ErrPreconditionFailed},
		{"other partition's document", a.NewBatch().Upsert([]byte(`{"id":"z","tenant":"a"}`)).Upsert([]byte(`{"id":"x","tenant":"b"}`)), 1, engine.ErrInvalidPartitionKey},
		{"invalid document", a.NewBatch().Upsert([]byte(`{"id":"z","tenant":"a"}`)).Upsert([]byte(`{}`)), 1, engine.ErrInvalidDocument},
		{"same item twice", a.NewBatch().Upsert([]byte(`{"id":"z","tenant":"a"}`)).Delete("z"), 1, engine.ErrInvalidDocument},
	} {
		_, err := c.ExecuteBatch(ctx, tc.b)
		var be *engine.BatchError
		if !errors.As(err, &be) || be.Index != tc.index || !errors.Is(err, tc.want) {
			t.Errorf("%s: %v (%T), want a BatchError at %d wrapping %v", tc.name, err, err, tc.index, tc.want)
		}
	}
	// Nothing of a failed batch was written.
	if _, err := a.Read(ctx, "z"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("a/z after failed batches: %v", err)
	}
	if _, err := c.ExecuteBatch(ctx, a.NewBatch().Delete("x").Delete("y")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Partition(engine.StringKey("b")).Read(ctx, "x"); err != nil {
		t.Errorf("b/x after deleting a/x in a batch: %v", err)
	}
	// A one-operation batch reports its failure as a BatchError too.
	_, err = c.ExecuteBatch(ctx, a.NewBatch().Delete("x"))
	var be *engine.BatchError
	if !errors.As(err, &be) || be.Index != 0 || !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("one-op batch: %v", err)
	}
}

func TestPartitionChangeFeed(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(t0)
	dir := t.TempDir()
	db := openTest(t, dir, clk)
	props := engine.ContainerProperties{ID: "k", PartitionKeyPath: "/tenant", DefaultTTL: engine.TTL(-1), ChangeFeedRetention: time.Hour}
	c := mustCreateContainer(t, db, props)
	a, b := c.Partition(engine.StringKey("a")), c.Partition(engine.NumberKey(7))
	must := func(_ engine.Item, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.Create(ctx, []byte(`{"id":"x","tenant":"a"}`)))
	clk.Advance(1)
	must(b.Create(ctx, []byte(`{"id":"x","tenant":7,"ttl":5}`)))
	clk.Advance(1)
	must(a.Replace(ctx, []byte(`{"id":"x","tenant":"a","v":2}`)))
	if err := a.Delete(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10) // b/x expires at t0+6
	feed := func(db *engine.DB, mode engine.ChangeFeedMode, from string) []string {
		t.Helper()
		c, err := db.Container("k")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for ch, err := range c.ChangeFeed(ctx, engine.ChangeFeedOptions{Mode: mode, Continuation: from}) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s %s/%s exp=%v", ch.Op, ch.PartitionKey, ch.ID, ch.TTLExpired))
		}
		return out
	}
	want := []string{
		`create ["a"]/x exp=false`,
		`create [7]/x exp=false`,
		`replace ["a"]/x exp=false`,
		`delete ["a"]/x exp=false`,
		`delete [7]/x exp=true`,
	}
	if got := feed(db, engine.AllVersionsAndDeletes, ""); !slices.Equal(got, want) {
		t.Errorf("all versions:\n got %q\nwant %q", got, want)
	}
	must(b.Create(ctx, []byte(`{"id":"x","tenant":7}`)))
	if got := feed(db, engine.LatestVersion, ""); !slices.Equal(got, []string{`replace [7]/x exp=false`}) {
		t.Errorf("latest version: %q", got)
	}
	// Continuations resume after the same change across a restart.
	var tokens []string
	for ch, err := range c.ChangeFeed(ctx, engine.ChangeFeedOptions{Mode: engine.AllVersionsAndDeletes}) {
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, ch.Continuation)
	}
	db.Close()
	db = openTest(t, dir, clk)
	defer db.Close()
	if got := feed(db, engine.AllVersionsAndDeletes, tokens[1]); !slices.Equal(got, append(want[2:], `create [7]/x exp=false`)) {
		t.Errorf("from token 1 after reopen: %q", got)
	}
}

// TestPartitionScopeExact: a partition's query and listing hold exactly its
// items, whether they start from the index's terms at the key path
// (consistent indexing) or from the item keys: a nested key path whose
// object repeats the name (the last one is the key, while the index may
// hold a term for each) and None, which has no term.
func TestPartitionScopeExact(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []engine.IndexingMode{engine.IndexingConsistent, engine.IndexingNone} {
		db := openTest(t, t.TempDir(), newFakeClock(t0))
		c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "k", PartitionKeyPath: "/a/b", Indexing: mode})
		for _, doc := range []string{
			`{"id":"x","a":{"b":"p","b":"q"}}`, // key "q"
			`{"id":"y","a":{"b":"p"}}`,
			`{"id":"z","a":{"c":"p"}}`, // None
			`{"id":"w"}`,               // None
		} {
			if _, err := c.Create(ctx, []byte(doc)); err != nil {
				t.Fatal(err)
			}
		}
		waitIndexed(t, c)
		for _, tc := range []struct {
			key  engine.PartitionKey
			want string
		}{{engine.StringKey("p"), `["p"]/y`}, {engine.StringKey("q"), `["q"]/x`}, {engine.NoneKey(), `[{}]/w [{}]/z`}} {
			p := c.Partition(tc.key)
			if got := strings.Join(rows(t, p.Query(ctx, `SELECT * FROM c`)), " "); got != tc.want {
				t.Errorf("%v: query of %v = %q, want %q", mode, tc.key, got, tc.want)
			}
			if got := strings.Join(itemNames(t, p.Items(ctx)), " "); got != tc.want {
				t.Errorf("%v: Items of %v = %q, want %q", mode, tc.key, got, tc.want)
			}
		}
		db.Close()
	}
}
