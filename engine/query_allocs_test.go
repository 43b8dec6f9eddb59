package engine

import (
	"context"
	"fmt"
	"math"
	"testing"
)

// TestQueryAllocs bounds the allocations of a TOP 10 over an ORDER BY
// index and of an equality query per row, items read from segment files
// and the memtable alike: the fixed cost of a query is mostly its
// allocations, and a row's body and etag share theirs with other rows'.
//
// It runs without -race in scripts/test.sh.
func TestQueryAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts")
	}
	if raceEnabled {
		t.Skip("allocation counts vary under the race detector; scripts/test.sh runs this test without it")
	}
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk, func(o *Options) { o.CompactionInterval = -1 }) // nothing allocating in the background
	c := mustCreateContainer(t, db, ContainerProperties{ID: "a"})
	ctx := context.Background()
	const n = 400
	for i := range n {
		if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"i%04d","n":%d,"cat":"c%d","pad":"%0100d"}`, i, i*7%n, i%4, 0)); err != nil {
			t.Fatal(err)
		}
		if i == n/2 {
			forceSeal(t, db)
		}
	}
	waitIndexed(t, c)
	count := func(sql string, want int, params ...Param) float64 {
		t.Helper()
		// The least of three measures: a background goroutine's allocation
		// during one can only add to it.
		least := math.Inf(1)
		for range 3 {
			least = min(least, testing.AllocsPerRun(50, func() {
				rows := 0
				for _, err := range c.Query(ctx, sql, params...) {
					if err != nil {
						t.Fatal(err)
					}
					rows++
				}
				if rows != want {
					t.Fatalf("%s: %d rows, want %d", sql, rows, want)
				}
			}))
		}
		return least
	}
	if a := count(`SELECT TOP 10 * FROM c ORDER BY c.n DESC`, 10); a > maxTopAllocs {
		t.Errorf("TOP 10: %.1f allocations a query, want at most %d", a, maxTopAllocs)
	} else {
		t.Logf("TOP 10: %.1f allocations a query", a)
	}
	a := count(`SELECT * FROM c WHERE c.cat = @c`, n/4, Param{"@c", "c1"})
	if perRow := a / (n / 4); perRow > maxRowAllocs {
		t.Errorf("equality: %.1f allocations for %d rows, %.2f a row, want at most %.2f", a, n/4, perRow, maxRowAllocs)
	} else {
		t.Logf("equality: %.1f allocations for %d rows", a, n/4)
	}
}

// The bounds of TestQueryAllocs: the query's own storage (bound query,
// plan, window bits) and one slab of bodies and one of etags for a TOP 10;
// a slab of bodies for every dozen rows or so and of etags for every 32.
const (
	maxTopAllocs = 6
	maxRowAllocs = 0.5
)
