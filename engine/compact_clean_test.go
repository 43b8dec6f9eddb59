package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// TestCompactLeavesCleanFiles: Container.Compact leaves a file whose every
// record is live and newest as it is (same file, not rewritten), removes
// every dead record of the other files, and keeps no tombstone: the clean
// files hold no older version of anything, whatever their id filters say.
func TestCompactLeavesCleanFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := newFakeClock(t0)
	db := openTest(t, dir, clk, func(o *Options) { o.CompactionInterval = -1 })
	c := mustCreateContainer(t, db, ContainerProperties{ID: "c", DefaultTTL: TTL(-1)})
	for i := range 300 {
		if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"live%03d","p":"%080d"}`, i, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := SealNow(ctx, db); err != nil {
		t.Fatal(err)
	}
	clean := allFiles(c)
	slices.Sort(clean)
	if len(clean) == 0 {
		t.Fatal("the seal wrote no file")
	}
	// Then items that expire, and items written and deleted: their files
	// die whole or hold tombstones.
	for i := range 300 {
		if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"tmp%03d","ttl":10,"p":"%080d"}`, i, i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		id := fmt.Sprintf("del%03d", i)
		if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":%q}`, id)); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := SealNow(ctx, db); err != nil {
		t.Fatal(err)
	}
	if len(allFiles(c)) == len(clean) {
		t.Fatal("the second seal wrote no file")
	}
	clk.Advance(20)
	before := c.Metrics()
	if err := c.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	after := allFiles(c)
	slices.Sort(after)
	if !slices.Equal(after, clean) {
		t.Fatalf("after Compact the files are %v, want the clean ones %v untouched", after, clean)
	}
	if m := c.Metrics(); m.CompactedWrittenBytes != before.CompactedWrittenBytes {
		t.Fatalf("Compact wrote %d bytes; only dead files needed removing", m.CompactedWrittenBytes-before.CompactedWrittenBytes)
	}
	c.mu.RLock()
	for n, f := range c.files {
		if st := f.r.Stats(); st.Deletes != 0 {
			t.Errorf("file %d after Compact: %+v", n, st)
		}
	}
	c.mu.RUnlock()
	if disk, open := segNames(t, dir), openSegNames(c); !slices.Equal(sorted(disk), open) {
		t.Fatalf("after Compact, on disk %v, open %v", disk, open)
	}
	check := func(c *Container) {
		t.Helper()
		if st := c.Stats(); st.Items != 300 {
			t.Fatalf("%d items, want 300", st.Items)
		}
		for _, id := range []string{"live000", "live299"} {
			if _, err := c.Read(ctx, id); err != nil {
				t.Fatalf("Read(%s): %v", id, err)
			}
		}
		for _, id := range []string{"tmp000", "del000"} {
			if _, err := c.Read(ctx, id); !isNotFound(err) {
				t.Fatalf("Read(%s) = %v, want not found", id, err)
			}
		}
	}
	check(c)
	db.Close()
	db = openTest(t, dir, clk, func(o *Options) { o.CompactionInterval = -1 })
	defer db.Close()
	c, err := db.Container("c")
	if err != nil {
		t.Fatal(err)
	}
	check(c)
}
