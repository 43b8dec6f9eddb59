package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/ebbdb/ebb/engine"
)

// TestBlockCacheWarmup checks where the block cache's blocks come from: a
// seal puts the blocks it writes in the cache; after a reopen the warm-up
// reads every file in, so that reading every item adds no block (none
// missed); with NoWarmup the cache starts empty and fills as items are
// read; and reads are right either way.
func TestBlockCacheWarmup(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock(t0)
	const n = 3000
	small := func(o *engine.Options) { o.BlockSize, o.SealThreshold, o.CompactionInterval = 1024, 64<<10, -1 }
	db := openTest(t, dir, clk, small, func(o *engine.Options) { o.NoWarmup = true })
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "c"})
	ctx := context.Background()
	doc := func(i int) string { return fmt.Sprintf(`{"id":"d%05d","pad":"%0200d"}`, i, i) }
	for i := 0; i < n; i += 100 {
		b := c.NewBatch()
		for j := i; j < i+100; j++ {
			b.Upsert([]byte(doc(j)))
		}
		if _, err := c.ExecuteBatch(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Compact(ctx); err != nil { // seals what is left
		t.Fatal(err)
	}
	if engine.CachedBlocks(db) == 0 {
		t.Fatal("no block cached after sealing 3000 items")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if engine.CachedBlocks(db) != 0 {
		t.Fatalf("%d blocks cached after Close", engine.CachedBlocks(db))
	}

	readAll := func(c *engine.Container) {
		t.Helper()
		for i := range n {
			it, err := c.Read(ctx, fmt.Sprintf("d%05d", i))
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Appendf(nil, `"pad":"%0200d"`, i); !bytes.Contains(it.Body, want) {
				t.Fatalf("item %d: body %s", i, it.Body)
			}
		}
	}
	for _, warm := range []bool{true, false} {
		db := openTest(t, dir, clk, small, func(o *engine.Options) { o.NoWarmup = !warm })
		c, err := db.Container("c")
		if err != nil {
			t.Fatal(err)
		}
		engine.WaitWarmup(db)
		warmed := engine.CachedBlocks(db)
		if warm != (warmed > 0) {
			t.Fatalf("warm-up %v: %d blocks cached after Open", warm, warmed)
		}
		readAll(c)
		readAll(c) // from the cache
		if after := engine.CachedBlocks(db); warm && after != warmed {
			t.Fatalf("reading every item after the warm-up cached %d more blocks: it missed", after-warmed)
		} else if !warm && after == 0 {
			t.Fatal("reads cached nothing")
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
