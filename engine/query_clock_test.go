package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// A query reads the clock for a row only when the row's item has an
// expiry instant (nowWhenNeeded). Rows of items that never expire and rows
// of items that do alternate here, and the latter expire while the query
// runs: each must be checked against the clock as it is read, whichever
// way the query reads its rows, however many never-expiring rows came
// before it.
func TestQueryMixedExpiryMidQuery(t *testing.T) {
	ctx := context.Background()
	for _, sql := range []string{
		`SELECT * FROM c WHERE c.k = 1`,
		`SELECT c.id FROM c WHERE c.k = 1`,
		`SELECT * FROM c ORDER BY c.n`,
		`SELECT TOP 30 * FROM c ORDER BY c.n`,
		`SELECT * FROM c WHERE c.k = 1 ORDER BY c.id`,
	} {
		t.Run(sql, func(t *testing.T) {
			clk := newFakeClock(t0)
			db := openTest(t, t.TempDir(), clk, func(o *Options) { o.CompactionInterval = -1 })
			defer db.Close()
			c := mustCreateContainer(t, db, ContainerProperties{ID: "q", DefaultTTL: TTL(-1)})
			for i := range 40 {
				ttl := "" // even items never expire
				if i%2 == 1 {
					ttl = `,"ttl":50`
				}
				if _, err := c.Create(ctx, fmt.Appendf(nil, `{"id":"i%02d","k":1,"n":%d%s}`, i, i, ttl)); err != nil {
					t.Fatal(err)
				}
			}
			waitIndexed(t, c)
			var seen, want []string
			for i := range 40 {
				if i < 6 || i%2 == 0 {
					want = append(want, fmt.Sprintf("i%02d", i))
				}
			}
			for it, err := range c.Query(ctx, sql) {
				if err != nil {
					t.Fatal(err)
				}
				seen = append(seen, it.ID)
				if it.ID == "i05" {
					clk.Advance(50) // the odd items expire now (at this very second), unmarked
				}
			}
			if !slices.Equal(seen, want) {
				t.Fatalf("yielded %v, want %v", seen, want)
			}
		})
	}
}
