package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/tool"
	"github.com/ebbdb/ebb/engine/vfs"
)

// After every seal the journal keeps no sealed entry on disk (its folder
// holds only the records written since), and the disk figures add up to
// the directory: the containers' Stats.DiskBytes and Metrics.DiskBytes sum
// to a walk of it, and so do Inspect's, with the database open or closed,
// whatever else the directory holds (files ebb did not write, at the top
// and in each of its folders; for Inspect, a segment file no MANIFEST
// lists).
func TestJournalSpaceAndDiskFigures(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 11))
			ctx := context.Background()
			clk := newFakeClock(t0)
			dir := t.TempDir()
			opts := func(o *Options) {
				o.JournalSegmentSize = 4 << 20 // far more than the test writes
				o.SealThreshold = 1 << 30
				o.CompactionInterval = -1
			}
			db := openTest(t, dir, clk, opts)
			defer func() { db.Close() }()
			ncont := 1 + rnd.IntN(3)
			var cs []*Container
			for i := range ncont {
				cs = append(cs, mustCreateContainer(t, db, ContainerProperties{ID: fmt.Sprint("c", i), DefaultTTL: TTL(5)}))
			}
			checkFigures := func(when string) {
				t.Helper()
				// A first pass lets the answers persist the clock (the CLOCK
				// file appears when an answer first leaves an item out).
				// Then the clock's high mark is written out here, so that
				// the background tick, which writes CLOCK through a
				// CLOCK.tmp whenever the mark moved, has nothing to write
				// while the directory is walked: the fake clock stands
				// still until the figures are checked.
				for _, c := range cs {
					c.Stats()
					c.Metrics()
				}
				if err := db.persistClock(); err != nil {
					t.Fatal(err)
				}
				var stats, metrics int64
				for _, c := range cs {
					st, m := c.Stats(), c.Metrics()
					if st.DiskBytes != m.DiskBytes {
						t.Fatalf("%s: container %s: Stats.DiskBytes %d, Metrics.DiskBytes %d", when, c.ID(), st.DiskBytes, m.DiskBytes)
					}
					stats += st.DiskBytes
					metrics += m.DiskBytes
				}
				if walk := treeBytes(t, dir); stats != walk {
					t.Fatalf("%s: the containers' DiskBytes add up to %d, the directory holds %d", when, stats, walk)
				}
				rep, err := tool.Inspect(dir)
				if err != nil {
					t.Fatal(err)
				}
				var sum int64
				for _, cr := range rep.Containers {
					sum += cr.DiskBytes
				}
				if walk := treeBytes(t, dir); rep.DiskBytes != walk || sum != walk {
					t.Fatalf("%s: Inspect says %d in all, %d for the containers; the directory holds %d", when, rep.DiskBytes, sum, walk)
				}
			}
			foreign := map[string]int64{} // bytes of files ebb did not write, by folder
			for round := range 12 {
				for range 1 + rnd.IntN(200) {
					c := cs[rnd.IntN(len(cs))]
					doc := fmt.Sprintf(`{"id":"k%d","ttl":%d,"pad":"%0*d"}`, rnd.IntN(500), 1+rnd.IntN(4), rnd.IntN(400), 0)
					if _, err := c.Upsert(ctx, []byte(doc)); err != nil {
						t.Fatal(err)
					}
				}
				checkFigures(fmt.Sprintf("round %d before the seal", round))
				forceSeal(t, db)
				if n := treeBytes(t, filepath.Join(dir, dbfile.JournalDir)) - foreign[dbfile.JournalDir]; n != 0 {
					t.Fatalf("round %d: %d bytes in journal/ right after a seal, want 0", round, n)
				}
				checkFigures(fmt.Sprintf("round %d after the seal", round))
				if rnd.IntN(3) == 0 {
					// Files ebb did not write, which it leaves alone.
					sub := []string{"", dbfile.SegmentDir, dbfile.JournalDir, dbfile.BrokenDir}[rnd.IntN(4)]
					if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
						t.Fatal(err)
					}
					size := 1 + rnd.IntN(5000)
					name := filepath.Join(dir, sub, fmt.Sprintf("notes-%d.txt", round))
					if err := os.WriteFile(name, make([]byte, size), 0o644); err != nil {
						t.Fatal(err)
					}
					foreign[sub] += int64(size)
					checkFigures(fmt.Sprintf("round %d with files ebb did not write", round))
				}
				clk.Advance(int64(rnd.IntN(3)))
				if rnd.IntN(4) == 0 {
					db.Close()
					db = openTest(t, dir, clk, opts)
					for i := range cs {
						var err error
						if cs[i], err = db.Container(fmt.Sprint("c", i)); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			db.Close()
			// An orphan segment file, as a crash leaves (the next Open
			// removes it).
			orphan := filepath.Join(dir, dbfile.SegmentDir, dbfile.SegmentFileName(90_000_000))
			if err := os.WriteFile(orphan, make([]byte, 1+rnd.IntN(5000)), 0o644); err != nil {
				t.Fatal(err)
			}
			rep, err := tool.Inspect(dir)
			if err != nil {
				t.Fatal(err)
			}
			var sum int64
			for _, cr := range rep.Containers {
				sum += cr.DiskBytes
			}
			if walk := treeBytes(t, dir); rep.DiskBytes != walk || sum != walk {
				t.Fatalf("closed: Inspect says %d in all, %d for the containers; the directory holds %d", rep.DiskBytes, sum, walk)
			}
		})
	}
}

// TestSegListing: what the segment folder holds besides segment files is
// counted whole after every change: a file added, grown, removed, a
// folder; a change made at the very time stamp of the last listing is
// seen too while that stamp is too recent to trust (coarse file system
// clocks); and a folder left alone long enough is not listed again.
func TestSegListing(t *testing.T) {
	seg := t.TempDir()
	write := func(name string, size int) {
		t.Helper()
		p := filepath.Join(seg, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var l segListing
	check := func(when string) {
		t.Helper()
		var want int64
		for _, e := range must(os.ReadDir(seg)) {
			if _, ok := dbfile.SegmentFileNum(e.Name()); !ok || e.IsDir() {
				want += treeBytes(t, filepath.Join(seg, e.Name()))
			}
		}
		if got := l.otherBytes(vfs.OS, seg); got != want {
			t.Fatalf("%s: %d bytes besides segment files, want %d", when, got, want)
		}
	}
	write(dbfile.SegmentFileName(1), 5000)
	write(dbfile.SegmentFileName(2), 7000)
	check("segment files only")
	write("notes.txt", 10)
	check("a note")
	write("notes.txt", 300)
	check("the note grown")
	write("sub/"+dbfile.SegmentFileName(3), 40)
	check("a folder holding a segment file's name")
	// A change at the time stamp the listing saw, while it is recent.
	fi := must(os.Stat(seg))
	write("late.txt", 20)
	if err := os.Chtimes(seg, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	check("a change at the same time stamp")
	os.Remove(filepath.Join(seg, "notes.txt"))
	check("the note removed")
	// Settled: stamped well before the listing, then changed.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(seg, old, old); err != nil {
		t.Fatal(err)
	}
	check("settled")
	write("new.txt", 5)
	check("a change after it settled")
	// Settled and unchanged, the listing is reused: a file slipped in
	// under the same old time stamp (which no file system clock does) is
	// not seen.
	if err := os.Chtimes(seg, old, old); err != nil {
		t.Fatal(err)
	}
	check("settled again")
	before := l.otherBytes(vfs.OS, seg)
	write("hidden.txt", 7)
	if err := os.Chtimes(seg, old, old); err != nil {
		t.Fatal(err)
	}
	if got := l.otherBytes(vfs.OS, seg); got != before {
		t.Fatalf("a settled, unchanged folder was listed again: %d bytes, then %d", before, got)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
