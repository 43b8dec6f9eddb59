package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/tool"
)

// segNames lists the files in dir's segment folder.
func segNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, dbfile.SegmentDir))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range ents {
		names = append(names, de.Name())
	}
	return names
}

// openSegNames lists the segment files c has open.
func openSegNames(c *Container) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var names []string
	for n := range c.files {
		names = append(names, filepath.Base(c.db.segmentPath(n)))
	}
	slices.Sort(names)
	return names
}

// TestRemovedFilesLeaveDisk: files the compactor drops are unlinked by the
// removal loop, paced; when an explicit Compact returns, and when Close
// returns, none that the database no longer names is left on disk, however
// many were waiting to be unlinked.
func TestRemovedFilesLeaveDisk(t *testing.T) {
	ctx := context.Background()
	for _, how := range []string{"compact", "close"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			clk := newFakeClock(t0)
			db := openTest(t, dir, clk, func(o *Options) {
				o.SealThreshold = 16 << 10 // many small files
				o.CompactionInterval = -1  // nothing merges them
			})
			c := mustCreateContainer(t, db, ContainerProperties{ID: "c", DefaultTTL: TTL(-1)})
			for i := range 3000 { // all expire after 10 s, so every file dies whole
				if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"k%05d","ttl":10,"p":"%0100d"}`, i, i)); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 10 { // and these never do, in the journal
				if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"live%d"}`, i)); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(50 * time.Millisecond) // seals write many small files
			if n := len(openSegNames(c)); n < 20 {
				t.Fatalf("only %d segment files; the test needs many to drop", n)
			}
			clk.Advance(20)
			switch how {
			case "compact":
				if err := c.Compact(ctx); err != nil {
					t.Fatal(err)
				}
				if disk, open := segNames(t, dir), openSegNames(c); !slices.Equal(sorted(disk), open) {
					t.Fatalf("after Compact, on disk %v, open %v", disk, open)
				}
				db.Close()
			case "close":
				// Drop every file whose records all expired, as the
				// background compactor would, and close at once: most
				// of them still wait to be unlinked.
				nums := allFiles(c)
				db.sealMu.Lock()
				err := c.dropFilesLocked(nums, nil)
				db.sealMu.Unlock()
				if err != nil {
					t.Fatal(err)
				}
				// A seal may add files meanwhile (on a loaded machine the
				// last ones of the writes above still run), and on a
				// loaded machine the last file sealed may hold live
				// records too, which must stay: count only the files asked
				// for whose every record is dead.
				left := 0
				for _, n := range allFiles(c) {
					c.mu.RLock()
					dead := c.idx.Usage(n).Records == 0
					c.mu.RUnlock()
					if slices.Contains(nums, n) && dead {
						left++
					}
				}
				if left != 0 {
					t.Fatalf("dropFilesLocked left %d of %d files", left, len(nums))
				}
				db.Close()
				rep, err := tool.Inspect(dir)
				if err != nil {
					t.Fatal(err)
				}
				if len(rep.Orphans) > 0 {
					t.Fatalf("after Close, files the MANIFEST does not name are on disk: %v", rep.Orphans)
				}
			}
			db = openTest(t, dir, clk)
			defer db.Close()
			c, err := db.Container("c")
			if err != nil {
				t.Fatal(err)
			}
			if st := c.Stats(); st.Items != 10 {
				t.Fatalf("reopened: %d items, want 10", st.Items)
			}
		})
	}
}

func sorted(s []string) []string { slices.Sort(s); return s }

// allFiles lists the numbers of c's segment files.
func allFiles(c *Container) []uint32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var nums []uint32
	for n := range c.files {
		nums = append(nums, n)
	}
	return nums
}
