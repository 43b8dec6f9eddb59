package engine

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
)

// A query's window, walk storage and read doc are reused by the queries
// after it (windows, walkBufs): what a query yielded must stay as it was
// while later queries run, and a query run from inside another's loop
// must not share anything with it.
func TestQueryReuseKeepsResults(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk, func(o *Options) { o.CompactionInterval = -1 })
	defer db.Close()
	c := mustCreateContainer(t, db, ContainerProperties{ID: "q", DefaultTTL: TTL(-1)})
	for i := range 200 {
		doc := fmt.Sprintf(`{"id":"i%03d","n":%d,"k":%d,"pad":"%0100d"}`, i, (i*37)%200, i%4, i)
		if i%3 == 0 {
			doc = fmt.Sprintf(`{"id":"i%03d","n":%d,"k":%d,"ttl":1000}`, i, (i*37)%200, i%4)
		}
		if _, err := c.Create(ctx, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	waitIndexed(t, c)
	queries := []string{
		`SELECT TOP 10 * FROM c ORDER BY c.n DESC`,
		`SELECT * FROM c WHERE c.k = 1`,
		`SELECT * FROM c WHERE c.k = 2 ORDER BY c.n`,
		`SELECT * FROM c ORDER BY c.n OFFSET 5 LIMIT 7`,
		`SELECT c.id, c.n FROM c WHERE c.n > 150`,
	}
	type kept struct {
		items []Item
		copy  []Item
	}
	var all []kept
	clone := func(items []Item) []Item {
		out := slices.Clone(items)
		for i := range out {
			out[i].Body = bytes.Clone(out[i].Body)
		}
		return out
	}
	for range 3 {
		for _, sql := range queries {
			items := runQuery(t, c, sql)
			if len(items) == 0 {
				t.Fatalf("%s: no results", sql)
			}
			all = append(all, kept{items, clone(items)})
		}
	}
	for i, k := range all {
		if !slices.EqualFunc(k.items, k.copy, func(a, b Item) bool {
			return a.ID == b.ID && a.ETag == b.ETag && a.TS == b.TS && a.ExpiresAt == b.ExpiresAt && bytes.Equal(a.Body, b.Body)
		}) {
			t.Fatalf("results of query %d (%s) changed while later queries ran", i, queries[i%len(queries)])
		}
	}

	// Nested: each row of an outer TOP query runs the same query inside;
	// both must yield what the query yields alone.
	const sql = `SELECT TOP 10 * FROM c ORDER BY c.n DESC`
	want := resultString(t, sql, runQuery(t, c, sql))
	var outer []Item
	for it, err := range c.Query(ctx, sql) {
		if err != nil {
			t.Fatal(err)
		}
		outer = append(outer, it)
		if got := resultString(t, sql, runQuery(t, c, sql)); got != want {
			t.Fatalf("inner query yielded %s, want %s", got, want)
		}
	}
	if got := resultString(t, sql, outer); got != want {
		t.Fatalf("outer query yielded %s, want %s", got, want)
	}
}
