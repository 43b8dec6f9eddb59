package engine

// Fault-injection tests: disk full (ENOSPC) and I/O errors (EIO) injected
// through vfs.FaultFS at every place the engine writes or reads its files.
// For each site and each cause: the request that needed the failing
// operation gets an error wrapping the cause, nothing unacknowledged becomes
// visible, the DB keeps working (or refuses writes with ErrReadOnly after a
// journal failure), and once the fault clears (and again after the DB is
// reopened) every acknowledged item reads back exactly and no
// expired or deleted one is back.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/vfs"
)

// ftCauses are the errors every site is tested with.
var ftCauses = []syscall.Errno{syscall.ENOSPC, syscall.EIO}

// ftInjected totals the faults injected by all the tests of this file, per
// operation, for the log.
var ftInjected = struct {
	sync.Mutex
	n map[vfs.Op]int64
}{n: map[vfs.Op]int64{}}

// ftEnv is a DB on a FaultFS with a model of what it must hold: the
// acknowledged version of each item (ids absent from it were deleted or
// never written), and the versions that writes which failed may have left.
type ftEnv struct {
	t    *testing.T
	dir  string
	fs   *vfs.FaultFS
	clk  *fakeClock
	mod  func(*Options)
	db   *DB
	c    *Container
	next int

	acked map[string]ftVersion
	maybe map[string][]int // values an unacknowledged write may have left
}

type ftVersion struct {
	v   int
	ts  int64
	ttl int32 // 0: none
}

func newFtEnv(t *testing.T, mod func(*Options)) *ftEnv {
	e := &ftEnv{
		t: t, dir: t.TempDir(), fs: vfs.NewFaultFS(vfs.OS, 1), clk: newFakeClock(t0), mod: mod,
		acked: map[string]ftVersion{}, maybe: map[string][]int{},
	}
	t.Cleanup(func() {
		if e.db != nil {
			e.db.Close()
		}
		ftInjected.Lock()
		for op, n := range e.fs.Counts() {
			ftInjected.n[op] += n
		}
		ftInjected.Unlock()
	})
	e.open()
	// DefaultTTL -1: TTL on, items live until their own ttl says.
	if _, err := e.db.CreateContainer(context.Background(), ContainerProperties{ID: "c", DefaultTTL: TTL(-1)}); err != nil {
		t.Fatal(err)
	}
	e.c = e.container()
	return e
}

func (e *ftEnv) open() {
	e.t.Helper()
	e.db = openTest(e.t, e.dir, e.clk, func(o *Options) {
		o.FS = e.fs
		o.CompactionInterval = -1
		if e.mod != nil {
			e.mod(o)
		}
	})
	if c, err := e.db.Container("c"); err == nil {
		e.c = c
		// The secondary index is rebuilt in the background after Open,
		// reading segments: let it finish before faults are injected, so
		// that they hit the request the test means.
		waitIndexed(e.t, c)
	}
}

func (e *ftEnv) container() *Container {
	e.t.Helper()
	c, err := e.db.Container("c")
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// reopen closes the DB (whatever Close says), clears the faults and opens it
// ftPad returns n letters that do not compress (the journal and segment
// files compress what they store, and the tests that fill a disk need
// every byte to count), drawn from seed.
func ftPad(n int, seed uint64) string {
	b := make([]byte, n)
	x := seed*0x9E3779B97F4A7C15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = 'a' + byte(x%26)
	}
	return string(b)
}

// again.
func (e *ftEnv) reopen() {
	e.t.Helper()
	e.db.Close()
	e.db = nil
	e.fs.Clear()
	e.open()
}

func ftBody(id string, v int, ttl int32, pad int) []byte {
	doc := fmt.Sprintf(`{"id":%q,"v":%d,"pad":%q`, id, v, ftPad(pad, uint64(v)))
	if ttl != 0 {
		doc += fmt.Sprintf(`,"ttl":%d`, ttl)
	}
	return []byte(doc + "}")
}

// upsert writes a new version of id and records the outcome in the model.
func (e *ftEnv) upsert(id string, ttl int32, pad int) error {
	e.next++
	v := e.next
	_, err := e.c.Upsert(context.Background(), ftBody(id, v, ttl, pad))
	if err == nil {
		e.acked[id] = ftVersion{v: v, ts: e.clk.Unix(), ttl: ttl}
	} else {
		e.maybe[id] = append(e.maybe[id], v)
	}
	return err
}

// del deletes id and records the outcome; an id that is not there is fine.
func (e *ftEnv) del(id string) error {
	err := e.c.Delete(context.Background(), id)
	switch {
	case err == nil || errors.Is(err, ErrNotFound):
		delete(e.acked, id)
		return nil
	default:
		e.maybe[id] = append(e.maybe[id], -1) // -1: the delete may have happened
	}
	return err
}

// load writes n items acknowledged: ids k0..k(n-1), every fifth with a
// 5-second ttl (gone once the clock moves), then deletes every seventh.
func (e *ftEnv) load(n, pad int) {
	e.t.Helper()
	for i := range n {
		ttl := int32(0)
		if i%5 == 4 {
			ttl = 5
		}
		if err := e.upsert(fmt.Sprintf("k%d", i), ttl, pad); err != nil {
			e.t.Fatalf("load: %v", err)
		}
	}
	for i := 0; i < n; i += 7 {
		if err := e.del(fmt.Sprintf("k%d", i)); err != nil {
			e.t.Fatalf("load: %v", err)
		}
	}
}

// check compares the DB with the model. strict: the versions left by failed
// writes must not be visible (in a DB that is still open, nothing
// unacknowledged is); otherwise each such id may hold one of them.
func (e *ftEnv) check(strict bool) {
	e.t.Helper()
	ctx := context.Background()
	now := e.clk.Unix()
	want := map[string]int{}
	for id, ver := range e.acked {
		if ver.ttl == 0 || ver.ts+int64(ver.ttl) > now {
			want[id] = ver.v
		}
	}
	ok := func(id string, got int) bool {
		if w, live := want[id]; live && w == got {
			return true
		}
		return !strict && slices.Contains(e.maybe[id], got)
	}
	ids := slices.Sorted(maps.Keys(e.acked))
	for id := range e.maybe {
		if _, dup := e.acked[id]; !dup {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		it, err := e.c.Read(ctx, id)
		got := -1
		switch {
		case err == nil:
			got = int(bodyField(e.t, it, "v").(float64))
		case !errors.Is(err, ErrNotFound):
			e.t.Fatalf("Read(%s): %v", id, err)
		}
		if got == -1 {
			if _, live := want[id]; live && (strict || !slices.Contains(e.maybe[id], -1)) {
				e.t.Fatalf("Read(%s): not found, want v=%d", id, want[id])
			}
			continue
		}
		if !ok(id, got) {
			e.t.Fatalf("Read(%s): v=%d, want %v (acknowledged) or one of %v (unacknowledged, strict=%v)", id, got, want[id], e.maybe[id], strict)
		}
	}
	seen := 0
	for it, err := range e.c.Items(ctx) {
		if err != nil {
			e.t.Fatalf("Items: %v", err)
		}
		if !ok(it.ID, int(bodyField(e.t, it, "v").(float64))) {
			e.t.Fatalf("Items yields %s, not in the model", it.Body)
		}
		if _, live := want[it.ID]; live {
			seen++
		}
	}
	if strict && seen != len(want) {
		e.t.Fatalf("Items yields %d live items, want %d", seen, len(want))
	}
}

// segFilesOnDisk lists the segment files in the directory.
func (e *ftEnv) segFilesOnDisk() []string {
	e.t.Helper()
	ents, err := os.ReadDir(filepath.Join(e.dir, dbfile.SegmentDir))
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, de := range ents {
		names = append(names, de.Name())
	}
	sort.Strings(names)
	return names
}

// segFilesOpen lists the container's open segment files, by name.
func (e *ftEnv) segFilesOpen() []string {
	e.c.mu.RLock()
	defer e.c.mu.RUnlock()
	var names []string
	for n := range e.c.files {
		names = append(names, filepath.Base(e.db.segmentPath(n)))
	}
	sort.Strings(names)
	return names
}

// expectCause checks that err wraps cause and is not a corruption.
func expectCause(t *testing.T, what string, err, cause error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want one wrapping %v", what, cause)
	}
	if !errors.Is(err, cause) {
		t.Fatalf("%s: %v, want it to wrap %v", what, err, cause)
	}
	if errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: %v: an I/O error reported as corruption", what, err)
	}
}

func TestFaults(t *testing.T) {
	t.Run("journal", testFaultJournal)
	t.Run("seal", testFaultSeal)
	t.Run("manifest", testFaultManifest)
	t.Run("clock", testFaultClock)
	t.Run("compaction", testFaultCompaction)
	t.Run("read", testFaultRead)
	t.Run("open", testFaultOpen)
	ftInjected.Lock()
	defer ftInjected.Unlock()
	var total int64
	for _, op := range vfs.Ops() {
		if n := ftInjected.n[op]; n > 0 {
			t.Logf("faults injected: %-8s %d", op, n)
			total += n
		}
	}
	t.Logf("faults injected: total    %d", total)
}

// testFaultJournal: a failed journal write, fsync, segment-file creation or
// folder fsync fails its group with the cause and ErrReadOnly, applies none
// of it, and makes the DB refuse writes while it still serves reads. After
// a reopen everything acknowledged is back, and the failed write is whole
// or absent.
func testFaultJournal(t *testing.T) {
	sites := []struct {
		name string
		rule vfs.Rule
	}{
		{"write", vfs.Rule{Op: vfs.OpWrite, Path: "journal/"}},
		{"sync", vfs.Rule{Op: vfs.OpSync, Path: "journal/"}},
		{"create", vfs.Rule{Op: vfs.OpCreate, Path: "journal/"}},
		{"syncdir", vfs.Rule{Op: vfs.OpSyncDir, Path: "/journal"}},
	}
	for _, site := range sites {
		for _, cause := range ftCauses {
			t.Run(site.name+"/"+cause.Error(), func(t *testing.T) {
				// 4 KiB journal files: a new one every few writes, so that
				// creation and folder fsyncs happen under the workload.
				e := newFtEnv(t, func(o *Options) { o.JournalSegmentSize = 4 << 10 })
				e.load(40, 100)
				rule := site.rule
				rule.Err, rule.Count = cause, 1
				e.fs.Inject(rule)
				var err error
				var failed string
				for i := 0; i < 200 && err == nil; i++ {
					failed = fmt.Sprintf("k%d", i%40)
					err = e.upsert(failed, 0, 100)
				}
				expectCause(t, "the write that hit the fault", err, cause)
				if !errors.Is(err, ErrReadOnly) {
					t.Fatalf("the write that hit the fault: %v, want ErrReadOnly", err)
				}
				if e.fs.Injected(site.rule.Op) != 1 {
					t.Fatalf("%d faults injected, want 1", e.fs.Injected(site.rule.Op))
				}
				// Read-only from now on, even with the fault gone.
				e.fs.Clear()
				e.check(true)
				if err := e.upsert("new", 0, 10); !errors.Is(err, ErrReadOnly) {
					t.Fatalf("write after the failure: %v, want ErrReadOnly", err)
				}
				if err := e.del("k1"); !errors.Is(err, ErrReadOnly) {
					t.Fatalf("delete after the failure: %v, want ErrReadOnly", err)
				}
				if _, err := e.db.CreateContainer(context.Background(), ContainerProperties{ID: "d"}); !errors.Is(err, ErrReadOnly) {
					t.Fatalf("CreateContainer after the failure: %v, want ErrReadOnly", err)
				}
				if err := e.c.Compact(context.Background()); !errors.Is(err, ErrReadOnly) {
					t.Fatalf("Compact after the failure: %v, want ErrReadOnly", err)
				}
				if st := e.c.Stats(); st.Items == 0 {
					t.Fatalf("Stats after the failure: %+v", st)
				}
				e.check(true)
				if err := e.db.Close(); err == nil {
					t.Log("Close after a journal failure returned nil")
				}
				// The lock is released: the directory opens again.
				e.db = nil
				e.open()
				e.check(false)
				e.clk.Advance(10) // the 5-second ttls run out
				e.check(false)
				if err := e.upsert("after", 0, 10); err != nil {
					t.Fatalf("write after reopening: %v", err)
				}
				e.reopen()
				e.check(false)
			})
		}
	}
}

// testFaultSeal: a seal that fails (creating, writing or fsyncing a
// segment file, fsyncing the folder, or writing the manifest) leaves no
// partial file, keeps every record in the journal and memtables, and is
// retried; writers go on until the memtables reach their limit, then get an
// error naming the seal failure; once the fault clears, the next seal
// succeeds and writers proceed.
func testFaultSeal(t *testing.T) {
	sites := []struct {
		name string
		rule vfs.Rule
	}{
		{"segment-create", vfs.Rule{Op: vfs.OpCreate, Path: "seg/"}},
		{"segment-write", vfs.Rule{Op: vfs.OpWrite, Path: "seg/", Partial: true}},
		{"segment-sync", vfs.Rule{Op: vfs.OpSync, Path: "seg/"}},
		{"segment-syncdir", vfs.Rule{Op: vfs.OpSyncDir, Path: "/seg"}},
		// A seal appends one MANIFEST edit and fsyncs it (after a failed
		// one, the next attempt rewrites the whole file).
		{"manifest-write", vfs.Rule{Op: vfs.OpWrite, Path: "MANIFEST"}},
		{"manifest-sync", vfs.Rule{Op: vfs.OpSync, Path: "MANIFEST"}},
	}
	for _, site := range sites {
		for _, cause := range ftCauses {
			t.Run(site.name+"/"+cause.Error(), func(t *testing.T) {
				e := newFtEnv(t, func(o *Options) { o.SealThreshold = 16 << 10 })
				e.load(30, 200)
				rule := site.rule
				rule.Err = cause
				e.fs.Inject(rule)
				var err error
				acked := 0
				for i := 0; i < 2000 && err == nil; i++ {
					if err = e.upsert(fmt.Sprintf("s%d", i), 0, 500); err == nil {
						acked++
					}
				}
				expectCause(t, "a write over the memory limit while sealing fails", err, cause)
				if !strings.Contains(err.Error(), "seal") || errors.Is(err, ErrReadOnly) {
					t.Fatalf("write over the memory limit: %v, want a seal failure", err)
				}
				if acked*500 < 4*16<<10 {
					t.Fatalf("only %d writes went through before the refusal", acked)
				}
				if e.fs.Injected(site.rule.Op) == 0 {
					t.Fatal("no fault injected")
				}
				if site.rule.Path == "seg/" || site.rule.Path == "/seg" {
					if err := e.c.Compact(context.Background()); !errors.Is(err, cause) {
						t.Fatalf("Compact while sealing fails: %v, want %v", err, cause)
					}
				}
				e.check(true)
				// No partial segment file is left behind (after a failed
				// manifest write the sealed files are open and will be named
				// by the next manifest).
				e.db.sealMu.Lock() // no seal retry in progress
				disk, open := e.segFilesOnDisk(), e.segFilesOpen()
				e.db.sealMu.Unlock()
				if !slices.Equal(disk, open) {
					t.Fatalf("segment files on disk %v, open %v", disk, open)
				}
				// The fault clears: a retry seals and writers go on.
				e.fs.Clear()
				deadline := time.Now().Add(10 * time.Second)
				for {
					if err = e.upsert("retry", 0, 10); err == nil {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("writes still refused after the fault cleared: %v", err)
					}
					time.Sleep(20 * time.Millisecond)
				}
				for i := range 50 {
					if err := e.upsert(fmt.Sprintf("t%d", i), 0, 500); err != nil {
						t.Fatalf("write after the seal recovered: %v", err)
					}
				}
				e.check(true)
				if err := e.c.Compact(context.Background()); err != nil {
					t.Fatalf("Compact after the fault cleared: %v", err)
				}
				e.check(true)
				e.clk.Advance(10)
				e.reopen()
				e.check(true)
			})
		}
	}
}

// testFaultManifest: a request that must write the manifest (a container
// created, deleted, or its properties changed) fails with the cause when
// the write, its fsync or its rename fails, and changes nothing. Such a
// request appends an edit to the MANIFEST (open, write, fsync; a failed
// append is cut off again); the rename cases force the full rewrite that
// follows an append whose tail could not be cut off ("truncate": the
// fsync fails, and so does the cut).
func testFaultManifest(t *testing.T) {
	ctx := context.Background()
	ops := []vfs.Op{vfs.OpCreate, vfs.OpWrite, vfs.OpSync, vfs.OpRename, vfs.OpTruncate}
	for _, op := range ops {
		for _, cause := range ftCauses {
			t.Run(op.String()+"/"+cause.Error(), func(t *testing.T) {
				e := newFtEnv(t, nil)
				e.load(20, 50)
				inject := func() {
					switch op {
					case vfs.OpRename:
						e.db.man.Lock()
						e.db.man.log.rewrite = true
						e.db.man.Unlock()
					case vfs.OpTruncate:
						e.fs.Inject(vfs.Rule{Op: vfs.OpSync, Path: "MANIFEST", Err: cause, Count: 1})
					}
					e.fs.Inject(vfs.Rule{Op: op, Path: "MANIFEST", Err: cause, Count: 1})
				}

				inject()
				_, err := e.db.CreateContainer(ctx, ContainerProperties{ID: "d"})
				expectCause(t, "CreateContainer", err, cause)
				if _, err := e.db.Container("d"); !errors.Is(err, ErrNotFound) {
					t.Fatalf("the container whose creation failed: %v", err)
				}

				inject()
				err = e.c.SetProperties(ctx, ContainerProperties{ID: "c", DefaultTTL: TTL(1)})
				expectCause(t, "SetProperties", err, cause)
				if p := e.c.Properties(); p.DefaultTTL == nil || *p.DefaultTTL != -1 {
					t.Fatalf("properties after a failed SetProperties: %+v", p)
				}

				inject()
				err = e.db.DeleteContainer(ctx, "c")
				expectCause(t, "DeleteContainer", err, cause)
				e.clk.Advance(2) // a DefaultTTL of 1 would have expired everything
				e.check(true)

				// The fault is gone (Count 1): the same requests succeed.
				if _, err := e.db.CreateContainer(ctx, ContainerProperties{ID: "d"}); err != nil {
					t.Fatal(err)
				}
				if err := e.upsert("m", 0, 10); err != nil {
					t.Fatal(err)
				}
				e.reopen()
				e.check(true)
				if got := e.db.Containers(); !slices.Equal(got, []string{"c", "d"}) {
					t.Fatalf("containers after reopening: %v", got)
				}
			})
		}
	}
}

// testFaultClock: a failed write of the CLOCK file is retried by the
// background persistence until it succeeds.
func testFaultClock(t *testing.T) {
	for _, cause := range ftCauses {
		t.Run(cause.Error(), func(t *testing.T) {
			e := newFtEnv(t, nil)
			e.load(10, 10)
			e.fs.Inject(vfs.Rule{Op: vfs.OpWrite, Path: "CLOCK", Err: cause, Count: 1})
			e.clk.Advance(1000)
			e.upsert("tick", 0, 10) // observe the new time
			want := e.clk.Unix()
			deadline := time.Now().Add(10 * time.Second)
			for {
				f, _, err := dbfile.LoadClockFile(vfs.OS, e.dir)
				if err != nil {
					t.Fatal(err)
				}
				h := f.High
				if h >= want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("CLOCK holds %d after 10 s, want %d (injected %d)", h, want, e.fs.Injected(vfs.OpWrite))
				}
				time.Sleep(50 * time.Millisecond)
			}
			if e.fs.Injected(vfs.OpWrite) != 1 {
				t.Fatalf("%d CLOCK write faults injected, want 1", e.fs.Injected(vfs.OpWrite))
			}
			e.check(true)
		})
	}
}

// testFaultCompaction: a compaction whose output cannot be created, written
// or fsynced, or whose manifest swap fails, returns the cause, removes its
// outputs, keeps the old files readable and what readers see unchanged; the
// next compaction succeeds. The background compactor retries by itself.
func testFaultCompaction(t *testing.T) {
	ctx := context.Background()
	sites := []struct {
		name string
		rule vfs.Rule
	}{
		{"create", vfs.Rule{Op: vfs.OpCreate, Path: "seg/"}},
		{"write", vfs.Rule{Op: vfs.OpWrite, Path: "seg/", Partial: true}},
		{"sync", vfs.Rule{Op: vfs.OpSync, Path: "seg/"}},
		{"syncdir", vfs.Rule{Op: vfs.OpSyncDir, Path: "/seg"}},
		{"read", vfs.Rule{Op: vfs.OpRead, Path: "seg/"}},
		// The swap is one MANIFEST edit: appended, then fsynced.
		{"manifest-write", vfs.Rule{Op: vfs.OpWrite, Path: "MANIFEST", Partial: true}},
		{"manifest-sync", vfs.Rule{Op: vfs.OpSync, Path: "MANIFEST"}},
	}
	for _, site := range sites {
		for _, cause := range ftCauses {
			t.Run(site.name+"/"+cause.Error(), func(t *testing.T) {
				e := newFtEnv(t, func(o *Options) { o.BlockCacheSize = 1 })
				e.load(200, 100)
				if err := e.c.Compact(ctx); err != nil {
					t.Fatal(err)
				}
				for i := 0; i < 200; i += 3 {
					if err := e.del(fmt.Sprintf("k%d", i)); err != nil {
						t.Fatal(err)
					}
				}
				if err := e.c.Compact(ctx); err != nil { // seals the deletes
					t.Fatal(err)
				}
				e.clk.Advance(10)
				before := e.segFilesOnDisk()
				rule := site.rule
				rule.Err, rule.Count = cause, 1
				e.fs.Inject(rule)
				err := e.c.Compact(ctx)
				expectCause(t, "Compact", err, cause)
				e.check(true)
				if !strings.HasPrefix(site.name, "manifest-") {
					if after := e.segFilesOnDisk(); !slices.Equal(after, before) {
						t.Fatalf("segment files after a failed compaction %v, before %v", after, before)
					}
				}
				if err := e.upsert("w", 0, 10); err != nil {
					t.Fatalf("write after a failed compaction: %v", err)
				}
				if err := e.c.Compact(ctx); err != nil {
					t.Fatalf("Compact after the fault: %v", err)
				}
				e.check(true)
				e.reopen()
				e.check(true)
			})
		}
	}
	t.Run("background", func(t *testing.T) {
		e := newFtEnv(t, func(o *Options) {
			o.CompactionInterval = 20 * time.Millisecond
			o.SealThreshold = 8 << 10
		})
		e.load(300, 100)
		e.fs.Inject(vfs.Rule{Op: vfs.OpWrite, Path: "seg/", Err: syscall.ENOSPC})
		for i := 0; i < 300; i++ {
			e.del(fmt.Sprintf("k%d", i))
		}
		deadline := time.Now().Add(10 * time.Second)
		for e.fs.Injected(vfs.OpWrite) < 3 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if e.fs.Injected(vfs.OpWrite) < 3 {
			t.Fatalf("%d faults injected in 10 s", e.fs.Injected(vfs.OpWrite))
		}
		e.check(true)
		e.fs.Clear()
		for {
			if m := e.c.Metrics(); m.Segments == 0 && len(e.segFilesOnDisk()) == 0 {
				break
			}
			if time.Now().After(deadline.Add(10 * time.Second)) {
				t.Fatalf("background compaction did not recover: %+v, files %v", e.c.Stats(), e.segFilesOnDisk())
			}
			time.Sleep(20 * time.Millisecond)
		}
		e.check(true)
	})
}

// testFaultRead: an I/O error reading a segment file fails the read, scan
// or compaction that needed it with the cause, never as corruption, and
// changes nothing.
func testFaultRead(t *testing.T) {
	ctx := context.Background()
	for _, cause := range ftCauses {
		t.Run(cause.Error(), func(t *testing.T) {
			e := newFtEnv(t, func(o *Options) { o.BlockCacheSize = 1 })
			e.load(50, 100)
			if err := e.c.Compact(ctx); err != nil {
				t.Fatal(err)
			}
			e.reopen() // an empty block cache
			e.fs.Inject(vfs.Rule{Op: vfs.OpRead, Path: "seg/", Err: cause, Count: 1})
			_, err := e.c.Read(ctx, "k1")
			expectCause(t, "Read", err, cause)
			e.fs.Inject(vfs.Rule{Op: vfs.OpRead, Path: "seg/", Err: cause, Count: 1})
			var ierr error
			for _, err := range e.c.Items(ctx) {
				if err != nil {
					ierr = err
					break
				}
			}
			expectCause(t, "Items", ierr, cause)
			if e.fs.Injected(vfs.OpRead) != 2 {
				t.Fatalf("%d read faults injected, want 2", e.fs.Injected(vfs.OpRead))
			}
			e.check(true)
			if err := e.upsert("k1", 0, 10); err != nil {
				t.Fatal(err)
			}
			e.reopen()
			e.check(true)
		})
	}
}

// testFaultOpen: Open fails with the cause, not as corruption, when the
// MANIFEST, the CLOCK or a segment file cannot be read, and opens once the
// fault is gone.
func testFaultOpen(t *testing.T) {
	ctx := context.Background()
	sites := []struct {
		name string
		rule vfs.Rule
	}{
		{"manifest", vfs.Rule{Op: vfs.OpRead, Path: "MANIFEST"}},
		{"clock", vfs.Rule{Op: vfs.OpRead, Path: "CLOCK"}},
		{"segment", vfs.Rule{Op: vfs.OpRead, Path: "seg/"}},
		{"segment-open", vfs.Rule{Op: vfs.OpOpen, Path: "seg/"}},
		{"journal-list", vfs.Rule{Op: vfs.OpReadDir, Path: "/journal"}},
	}
	for _, site := range sites {
		for _, cause := range ftCauses {
			t.Run(site.name+"/"+cause.Error(), func(t *testing.T) {
				e := newFtEnv(t, nil)
				e.load(30, 50)
				if err := e.c.Compact(ctx); err != nil {
					t.Fatal(err)
				}
				e.clk.Advance(3)
				e.upsert("x", 0, 10)
				if err := e.db.Close(); err != nil {
					t.Fatal(err)
				}
				e.db = nil
				rule := site.rule
				rule.Err, rule.Count = cause, 1
				e.fs.Inject(rule)
				db, err := Open(e.dir, &Options{Clock: e.clk.Now, FS: e.fs, CompactionInterval: -1})
				if err == nil {
					db.Close()
				}
				expectCause(t, "Open", err, cause)
				e.open()
				e.check(true)
			})
		}
	}
}

// TestFaultIndexBuild: an I/O error while the secondary index is rebuilt
// (after Open, or here after an indexing-policy change) does not let the
// build finish without the unreadable items: it is retried, and until it
// is done queries scan; afterwards an exact COUNT from the index counts
// every item.
func TestFaultIndexBuild(t *testing.T) {
	ctx := context.Background()
	e := newFtEnv(t, func(o *Options) { o.BlockCacheSize = 1 })
	e.load(200, 100)
	if err := e.c.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	e.fs.Inject(vfs.Rule{Op: vfs.OpRead, Path: "seg/", Err: syscall.EIO, Skip: 5, Count: 20})
	p := e.c.Properties()
	p.ExcludedPaths = []string{"/nothing/?"} // a policy change: every item is indexed again
	if err := e.c.SetProperties(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitIndexed(t, e.c)
	if n := e.fs.Injected(vfs.OpRead); n == 0 {
		t.Fatal("no read fault reached the index build")
	}
	const count = `SELECT VALUE COUNT(1) FROM c WHERE c.pad >= ''`
	if s, _ := e.c.Explain(count); !strings.Contains(s, "no document is read") {
		t.Fatalf("COUNT is not answered from the index:\n%s", s)
	}
	got := runQuery(t, e.c, count)
	if want := fmt.Sprint(e.c.Stats().Items); string(got[0].Body) != want {
		t.Fatalf("after a build that met %d read faults, COUNT from the index = %s, want %s", e.fs.Injected(vfs.OpRead), got[0].Body, want)
	}
}
