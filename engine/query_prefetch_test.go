package engine_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
)

// TestQueryPrefetchAfterReopen runs queries over many rows whose blocks are
// all cold (a reopened database, a small block size, so that the query's
// prefetcher runs ahead of it), while another goroutine compacts the files
// away under it, and checks every result, that a query stopped early
// returns, and that no prefetcher outlives its query.
func TestQueryPrefetchAfterReopen(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock(t0)
	opts := func(o *engine.Options) {
		o.BlockSize, o.SealThreshold, o.CompactionInterval = 512, 64<<10, -1
		o.NoWarmup = true // cold blocks, for the prefetcher to read
	}
	db := openTest(t, dir, clk, opts)
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(-1)})
	ctx := context.Background()
	const n = 3000
	for i := 0; i < n; i += 100 {
		b := c.NewBatch()
		for j := i; j < i+100; j++ {
			ttl := ""
			if j%3 == 0 {
				ttl = `,"ttl":5` // a third expire: the compaction below rewrites files
			}
			b.Upsert(fmt.Appendf(nil, `{"id":"d%05d","k":%d,"pad":"%0100d"%s}`, j, j%7, j, ttl))
		}
		if _, err := c.ExecuteBatch(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(6)
	db = openTest(t, dir, clk, opts)
	defer db.Close()
	c, err := db.Container("c")
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	want := 0
	for j := range n {
		if j%7 == 3 && j%3 != 0 {
			want++
		}
	}
	compacted := make(chan error, 1)
	go func() { compacted <- c.Compact(ctx) }()
	for round := range 3 {
		got, last := 0, ""
		for it, err := range c.Query(ctx, "SELECT * FROM c WHERE c.k = 3") {
			if err != nil {
				t.Fatal(err)
			}
			if it.ID <= last {
				t.Fatalf("round %d: %s after %s", round, it.ID, last)
			}
			var j int
			if _, err := fmt.Sscanf(it.ID, "d%05d", &j); err != nil || j%7 != 3 || j%3 == 0 {
				t.Fatalf("round %d: row %s does not match or has expired", round, it.ID)
			}
			got, last = got+1, it.ID
		}
		if got != want {
			t.Fatalf("round %d: %d rows, want %d", round, got, want)
		}
		for it, err := range c.Query(ctx, "SELECT TOP 1 * FROM c WHERE c.k = 3") {
			if err != nil || it.ID != "d00010" {
				t.Fatalf("TOP 1 = %s, %v; want d00010", it.ID, err)
			}
		}
	}
	if err := <-compacted; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Errorf("%d goroutines after the queries, %d before", g, before)
	}
}
