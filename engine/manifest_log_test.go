package engine

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/internal/testutil"
	"github.com/ebbdb/ebb/engine/vfs"
)

// TestCreateHoldsCommitQueueForOneEdit: the commit queue, which every write
// of every container goes through, does for a CreateContainer one append
// of one edit, of a size that does not grow with the number of containers,
// and one fsync: no rewrite of the MANIFEST, whose size does grow. The
// rewrites that keep the edit log short happen too, but once the queue is
// left. The MANIFEST operations are counted by whether the queue has a
// leader when they are made (only the test writes), not timed.
func TestCreateHoldsCommitQueueForOneEdit(t *testing.T) {
	ctx := context.Background()
	cfs := &manCountFS{FS: vfs.OS}
	db := openTest(t, fastDir(t), newFakeClock(t0), func(o *Options) { o.FS = cfs; o.CompactionInterval = -1 })
	defer db.Close()
	leading := func() bool {
		db.commit.Lock()
		defer db.commit.Unlock()
		return db.commit.leading
	}
	cfs.inQueue.Store(&leading)
	n := 3000
	if testing.Short() {
		n = 1000
	}
	var editBytes int64
	for i := range n {
		before := cfs.snapshot()
		if _, err := db.CreateContainer(ctx, ContainerProperties{ID: fmt.Sprintf("c%06d", i)}); err != nil {
			t.Fatal(err)
		}
		d := cfs.snapshot().minus(before)
		if d.loopSyncs != 1 || d.loopRenames != 0 || d.loopSyncDirs != 0 {
			t.Fatalf("create %d: in the commit queue %d MANIFEST fsyncs, %d renames, %d folder fsyncs; want 1, 0, 0",
				i, d.loopSyncs, d.loopRenames, d.loopSyncDirs)
		}
		if i == 1 {
			editBytes = d.loopBytes
		}
		if i > 0 && d.loopBytes != editBytes {
			t.Fatalf("create %d (%d containers): the commit queue wrote %d MANIFEST bytes, the second create %d",
				i, i, d.loopBytes, editBytes)
		}
	}
	c := cfs.snapshot()
	if c.renames == 0 {
		t.Fatalf("%d creates and no rewrite of the MANIFEST: the edit log was never compacted", n)
	}
	// The whole cost, rewrites included, stays linear: the bytes written
	// for n creates are a small multiple of n edits.
	if lim := int64(n) * editBytes * (2 + 2*manifestLogFactor); c.bytes > lim+manifestLogMin*4 {
		t.Fatalf("%d creates wrote %d MANIFEST bytes (%d rewrites), more than %d", n, c.bytes, c.renames, lim)
	}
	t.Logf("%d creates: %d-byte edits, %d rewrites, %d MANIFEST bytes in all", n, editBytes, c.renames, c.bytes)
}

// manCountFS counts the operations on the MANIFEST (and its temporary
// file), and those of them made while inQueue reports true.
type manCountFS struct {
	vfs.FS
	inQueue atomic.Pointer[func() bool] // whether the commit queue has a leader
	renamed atomic.Bool                 // the MANIFEST was renamed since the last folder fsync
	mu      sync.Mutex
	c       manCounts
}

type manCounts struct {
	bytes, syncs, renames                           int64
	loopBytes, loopSyncs, loopRenames, loopSyncDirs int64
}

func (c manCounts) minus(o manCounts) manCounts {
	return manCounts{c.bytes - o.bytes, c.syncs - o.syncs, c.renames - o.renames,
		c.loopBytes - o.loopBytes, c.loopSyncs - o.loopSyncs, c.loopRenames - o.loopRenames, c.loopSyncDirs - o.loopSyncDirs}
}

func (f *manCountFS) snapshot() manCounts {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.c
}

func (f *manCountFS) count(fn func(c *manCounts, onLoop bool)) {
	onLoop := false
	if in := f.inQueue.Load(); in != nil {
		onLoop = (*in)()
	}
	f.mu.Lock()
	fn(&f.c, onLoop)
	f.mu.Unlock()
}

func (f *manCountFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.Contains(name, dbfile.ManifestName) {
		return file, err
	}
	return &manCountFile{File: file, fs: f}, nil
}

func (f *manCountFS) Rename(oldname, newname string) error {
	if strings.Contains(newname, dbfile.ManifestName) {
		defer f.renamed.Store(true)
		f.count(func(c *manCounts, onLoop bool) {
			c.renames++
			if onLoop {
				c.loopRenames++
			}
		})
	}
	return f.FS.Rename(oldname, newname)
}

// SyncDir counts the folder fsyncs that make a MANIFEST rename durable:
// those after a rename of it. Others (the CLOCK file's, which a background
// seal may write while a create is in the queue; the journal's) are not the
// MANIFEST's cost.
func (f *manCountFS) SyncDir(dir string) error {
	if f.renamed.Swap(false) {
		f.count(func(c *manCounts, onLoop bool) {
			if onLoop {
				c.loopSyncDirs++
			}
		})
	}
	return f.FS.SyncDir(dir)
}

type manCountFile struct {
	vfs.File
	fs *manCountFS
}

func (f *manCountFile) Write(b []byte) (int, error) {
	f.fs.count(func(c *manCounts, onLoop bool) {
		c.bytes += int64(len(b))
		if onLoop {
			c.loopBytes += int64(len(b))
		}
	})
	return f.File.Write(b)
}

func (f *manCountFile) Sync() error {
	f.fs.count(func(c *manCounts, onLoop bool) {
		c.syncs++
		if onLoop {
			c.loopSyncs++
		}
	})
	return f.File.Sync()
}

// TestManifestEditsConcurrent: containers created, changed and deleted from
// several goroutines at once, while the edit log is compacted off the lock
// more than once, leave a MANIFEST that opens (copied while the database
// is open, as a crash would leave it) with exactly the containers and
// properties acknowledged.
func TestManifestEditsConcurrent(t *testing.T) {
	ctx := context.Background()
	dir := fastDir(t)
	clk := newFakeClock(t0)
	db := openTest(t, dir, clk, func(o *Options) { o.CompactionInterval = -1 })
	defer db.Close()
	const workers, each = 4, 700
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := fmt.Sprintf("w%d-%04d", w, i)
				c, err := db.CreateContainer(ctx, ContainerProperties{ID: id})
				if err == nil && i%3 == 0 {
					err = c.SetProperties(ctx, ContainerProperties{ID: id, DefaultTTL: TTL(int32(i + 1))})
				}
				if err == nil && i%5 == 0 {
					err = db.DeleteContainer(ctx, id)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	db.man.Lock()
	rewrites := db.man.log.rewrites
	db.man.Unlock()
	if rewrites < 2 {
		t.Fatalf("%d MANIFEST rewrites: the edit log was not compacted while changes went on", rewrites)
	}
	want := db.Containers()
	copyDir := testutil.MustCopyDir(t, dir, filepath.Join(t.TempDir(), "copy"))
	db2 := openTest(t, copyDir, clk)
	defer db2.Close()
	if got := db2.Containers(); !slices.Equal(got, want) {
		t.Fatalf("the copy holds %d containers, the database %d", len(got), len(want))
	}
	for _, id := range want {
		var i int
		fmt.Sscanf(id[strings.IndexByte(id, '-')+1:], "%d", &i)
		c, err := db2.Container(id)
		if err != nil {
			t.Fatal(err)
		}
		d := c.Properties().DefaultTTL
		if i%3 == 0 && (d == nil || *d != int32(i+1)) || i%3 != 0 && d != nil {
			t.Fatalf("container %s: DefaultTTL %v after reopening", id, d)
		}
	}
}

// TestManifestEditKeepsReplayStart: a metadata change (create, properties,
// delete) logged while a seal is under way — its files written and the
// DB's journalFrom moved past their records, the MANIFEST not yet
// rewritten to list those files — must not move the replay start the
// MANIFEST holds: after a crash at that moment, every acknowledged item is
// there. The test puts the DB in that state by moving journalFrom as a
// seal does at that point, with seals held off, and copies the directory
// as a crash would leave it.
func TestManifestEditKeepsReplayStart(t *testing.T) {
	ctx := context.Background()
	for _, change := range []string{"create", "properties", "delete"} {
		t.Run(change, func(t *testing.T) {
			dir := t.TempDir()
			clk := newFakeClock(t0)
			db := openTest(t, dir, clk, func(o *Options) { o.CompactionInterval = -1 })
			defer db.Close()
			a := mustCreateContainer(t, db, ContainerProperties{ID: "a"})
			b := mustCreateContainer(t, db, ContainerProperties{ID: "b"})
			const n = 50
			for i := range n {
				if _, err := a.Upsert(ctx, fmt.Appendf(nil, `{"id":"x%d"}`, i)); err != nil {
					t.Fatal(err)
				}
			}
			db.sealMu.Lock()
			db.man.Lock()
			was := db.man.journalFrom
			db.man.journalFrom = db.jnl.NextSeq() // as a seal does before its MANIFEST write
			db.man.Unlock()
			var err error
			switch change {
			case "create":
				_, err = db.CreateContainer(ctx, ContainerProperties{ID: "c"})
			case "properties":
				err = b.SetProperties(ctx, ContainerProperties{ID: "b", DefaultTTL: TTL(100)})
			case "delete":
				err = db.DeleteContainer(ctx, "b")
			}
			if err != nil {
				t.Fatal(err)
			}
			crashed := testutil.MustCopyDir(t, dir, filepath.Join(t.TempDir(), "crashed"))
			db.man.Lock()
			db.man.journalFrom = was
			db.man.Unlock()
			db.sealMu.Unlock()

			db2 := openTest(t, crashed, clk)
			defer db2.Close()
			a2, err := db2.Container("a")
			if err != nil {
				t.Fatal(err)
			}
			got := 0
			for _, err := range a2.Items(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				got++
			}
			if got != n {
				t.Fatalf("after a %s logged mid-seal and a crash, container a holds %d of %d acknowledged items", change, got, n)
			}
		})
	}
}

// TestCompactionLogsOneEdit: a compaction, one that rewrites a container's
// files or one that drops files whose records all expired, and a seal of
// one container's writes, make their change durable with one MANIFEST edit
// for that container alone: the bytes each writes to the MANIFEST are the
// same with 1 or 2,000 other containers, and it rewrites nothing (no
// rename). Counted, not timed.
func TestCompactionLogsOneEdit(t *testing.T) {
	ctx := context.Background()
	cost := func(others int) (rewrite, drop, sealed manCounts) {
		cfs := &manCountFS{FS: vfs.OS}
		clk := newFakeClock(t0)
		db := openTest(t, t.TempDir(), clk, func(o *Options) { o.FS = cfs; o.CompactionInterval = -1 })
		defer db.Close()
		for i := range others {
			mustCreateContainer(t, db, ContainerProperties{ID: fmt.Sprintf("o%05d", i)})
		}
		c := mustCreateContainer(t, db, ContainerProperties{ID: "x", DefaultTTL: TTL(-1)})
		seal := func() {
			db.sealMu.Lock()
			defer db.sealMu.Unlock()
			if err := db.sealNowLocked(ctx); err != nil {
				t.Fatal(err)
			}
		}
		files := func() []uint32 {
			c.mu.RLock()
			defer c.mu.RUnlock()
			var nums []uint32
			for n := range c.files {
				nums = append(nums, n)
			}
			slices.Sort(nums)
			return nums
		}
		for round := range 2 {
			for i := range 20 {
				if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"k%d","r":%d}`, i, round)); err != nil {
					t.Fatal(err)
				}
			}
			seal()
		}
		before := cfs.snapshot()
		db.sealMu.Lock()
		err := c.rewriteLocked(ctx, files(), nil, nil)
		db.sealMu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		rewrite = cfs.snapshot().minus(before)

		for i := range 20 {
			if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"t%d","ttl":5}`, i)); err != nil {
				t.Fatal(err)
			}
		}
		before = cfs.snapshot()
		seal()
		sealed = cfs.snapshot().minus(before)
		clk.Advance(10) // every record of the new file has expired
		kept := files()
		before = cfs.snapshot()
		db.sealMu.Lock()
		err = c.dropFilesLocked(kept[len(kept)-1:], nil)
		db.sealMu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		drop = cfs.snapshot().minus(before)
		if n := len(files()); n != len(kept)-1 {
			t.Fatalf("dropFilesLocked left %d of %d files", n, len(kept))
		}
		return rewrite, drop, sealed
	}
	r1, d1, s1 := cost(1)
	r2, d2, s2 := cost(2000)
	for _, x := range []struct {
		what         string
		small, large manCounts
	}{{"rewrite", r1, r2}, {"drop", d1, d2}, {"seal", s1, s2}} {
		if x.small.syncs != 1 || x.large.syncs != 1 || x.small.renames+x.large.renames != 0 {
			t.Fatalf("%s: %d and %d MANIFEST fsyncs, %d and %d renames; want one fsync and no rename",
				x.what, x.small.syncs, x.large.syncs, x.small.renames, x.large.renames)
		}
		if x.small.bytes == 0 || x.large.bytes != x.small.bytes {
			t.Fatalf("%s: %d MANIFEST bytes with 1 other container, %d with 2,000", x.what, x.small.bytes, x.large.bytes)
		}
	}
}
