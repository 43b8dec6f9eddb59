package engine

// TestScale measures, as the data grows, the two costs that must
// grow linearly or better: the heap the index needs per item
// and the time Open takes. It is skipped unless EBB_SCALE lists the item
// counts, for example:
//
//	EBB_SCALE=100000,1000000 go test ./engine -run TestScale -v -timeout 30m
//
// EBB_SCALE_IDLEN sets the id length (default 36, the length of a UUID).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
)

// scaleDocSize is the size of the documents TestScale writes.
const scaleDocSize = 200

// scaleID is the id of item n: n hashed and spelled as lowercase hex (UUID
// style when idLen is 36), so that ids arrive in no particular order.
func scaleID(n uint64, idLen int) string {
	r := rand.New(rand.NewPCG(n, 0x5851f42d4c957f2d))
	const hex = "0123456789abcdef"
	b := make([]byte, idLen)
	for i := range b {
		if idLen == 36 && (i == 8 || i == 13 || i == 18 || i == 23) {
			b[i] = '-'
			continue
		}
		b[i] = hex[r.IntN(16)]
	}
	// The tail spells n itself, which keeps ids unique whatever the hash does.
	s := strconv.FormatUint(n, 16)
	if len(s) <= idLen {
		copy(b[idLen-len(s):], s)
	}
	return string(b)
}

// scaleDoc returns an item of about scaleDocSize bytes: a small event.
func scaleDoc(id string, n uint64) []byte {
	r := rand.New(rand.NewPCG(n, 1))
	d := fmt.Appendf(nil, `{"id":%q,"tenant":"t-%03d","kind":%q,"n":%d,"score":%.4f,"tags":[%q,%q],"meta":{"src":%q,"v":%d},"msg":"`,
		id, r.IntN(100), perfWords[r.IntN(len(perfWords))], r.IntN(1_000_000), r.Float64(),
		perfWords[r.IntN(len(perfWords))], perfWords[r.IntN(len(perfWords))], perfDevices[r.IntN(len(perfDevices))], r.IntN(10))
	for len(d) < scaleDocSize-2 {
		d = append(d, perfWords[r.IntN(len(perfWords))]...)
		d = append(d, ' ')
	}
	d = d[:scaleDocSize-2]
	return append(d, `"}`...)
}

// cpuTime is the user and system CPU time the process has used so far: a
// measure of work that other processes on the machine do not inflate.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// liveHeap returns the live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

type scaleRow struct {
	n                      int
	loadRate               float64 // items/s, NoSync, batches of 1000
	diskAfterLoad          int64   // bytes of segments and journal
	diskCompacted          int64
	openLoaded, openCompac time.Duration // best of 3
	cpuLoaded, cpuCompac   time.Duration // CPU time of the fastest Open
	loadCPU, compactCPU    time.Duration
	compactTime            time.Duration
	heapLoaded, heapCompac int64 // growth of the live heap across Open, minus an empty DB's
}

func TestScale(t *testing.T) {
	spec := os.Getenv("EBB_SCALE")
	if spec == "" {
		t.Skip("set EBB_SCALE=100000,1000000 to run")
	}
	idLen := 36
	if s := os.Getenv("EBB_SCALE_IDLEN"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 8 || n > MaxIDLength {
			t.Fatalf("EBB_SCALE_IDLEN=%q: want 8..%d", s, MaxIDLength)
		}
		idLen = n
	}
	var counts []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.ParseFloat(strings.TrimSpace(f), 64) // accepts 1e6
		if err != nil || n < 1 {
			t.Fatalf("EBB_SCALE=%q: %q is not an item count", spec, f)
		}
		counts = append(counts, int(n))
	}

	base := scaleBaseline(t)
	t.Logf("empty DB with one container: %d B of heap after Open (subtracted below)", base)
	var rows []scaleRow
	for _, n := range counts {
		rows = append(rows, scaleOne(t, n, idLen, base))
	}

	t.Logf("items of %d B, ids of %d chars, DefaultTTL 3600; heap = live-heap growth across Open minus an empty DB's; open = best of 3, warm page cache", scaleDocSize, idLen)
	t.Logf("(ld = just loaded: sealed segments plus a journal tail replayed into the memtable; cp = after Compact: all in segments, memtable empty)")
	t.Logf("%9s %6s %9s %8s %8s %10s %10s %10s %10s %9s %9s %10s %10s",
		"items", "id len", "load it/s", "disk MB", "disk cp", "open ld", "cpu ld", "open cp", "cpu cp", "cp µs/it", "compact", "heap/it ld", "heap/it cp")
	for _, r := range rows {
		t.Logf("%9d %6d %9.0f %8.1f %8.1f %10v %10v %10v %10v %9.2f %9v %8.1f B %8.1f B",
			r.n, idLen, r.loadRate, float64(r.diskAfterLoad)/1e6, float64(r.diskCompacted)/1e6,
			r.openLoaded.Round(time.Millisecond), r.cpuLoaded.Round(time.Millisecond),
			r.openCompac.Round(time.Millisecond), r.cpuCompac.Round(time.Millisecond),
			float64(r.openCompac.Microseconds())/float64(r.n), r.compactTime.Round(100*time.Millisecond),
			float64(r.heapLoaded)/float64(r.n), float64(r.heapCompac)/float64(r.n))
	}
}

func scaleOptions() *Options {
	return &Options{NoSync: true, MaxBatchOperations: 1000, MaxBatchBytes: 64 << 20}
}

// scaleBaseline is the heap an Open of a DB with one empty container
// holds: the fixed cost, not the per-item one.
func scaleBaseline(t *testing.T) int64 {
	dir := t.TempDir()
	db, err := Open(dir, scaleOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateContainer(context.Background(), ContainerProperties{ID: "scale", DefaultTTL: TTL(3600)}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, _, grow := scaleOpen(t, dir, -1)
	return grow
}

// scaleOpen opens dir, checks that it holds want items (unless want < 0)
// and returns the time Open took and the growth of the live heap across it.
func scaleOpen(t *testing.T, dir string, want int) (time.Duration, time.Duration, int64) {
	t.Helper()
	before := liveHeap()
	cpu0, start := cpuTime(), time.Now()
	db, err := Open(dir, scaleOptions())
	took, cpu := time.Since(start), cpuTime()-cpu0
	if err != nil {
		t.Fatal(err)
	}
	grow := int64(liveHeap()) - int64(before)
	c, err := db.Container("scale")
	if err != nil {
		t.Fatal(err)
	}
	if want >= 0 {
		if st := c.Stats(); st.Items != int64(want) {
			t.Fatalf("open: %d items, want %d", st.Items, want)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(db)
	return took, cpu, grow
}

// bestOpen opens dir three times and returns the fastest Open, its CPU
// time, and the heap growth of the first.
func bestOpen(t *testing.T, dir string, want int) (time.Duration, time.Duration, int64) {
	best, bestCPU, grow := scaleOpen(t, dir, want)
	for range 2 {
		if d, cpu, _ := scaleOpen(t, dir, want); d < best {
			best, bestCPU = d, cpu
		}
	}
	return best, bestCPU, grow
}

func scaleOne(t *testing.T, n, idLen int, base int64) scaleRow {
	ctx := context.Background()
	dir := t.TempDir()
	row := scaleRow{n: n}
	db, err := Open(dir, scaleOptions())
	if err != nil {
		t.Fatal(err)
	}
	c, err := db.CreateContainer(ctx, ContainerProperties{ID: "scale", DefaultTTL: TTL(3600)})
	if err != nil {
		t.Fatal(err)
	}
	const batchSize = 1000
	cpu0, start := cpuTime(), time.Now()
	for i := 0; i < n; i += batchSize {
		b := c.NewBatch()
		for j := i; j < i+batchSize && j < n; j++ {
			b.Upsert(scaleDoc(scaleID(uint64(j), idLen), uint64(j)))
		}
		if _, err := c.ExecuteBatch(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	row.loadRate = float64(n) / time.Since(start).Seconds()
	row.loadCPU = cpuTime() - cpu0
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := dirBytes(filepath.Join(dir, dbfile.SegmentDir))
	jnl, _ := dirBytes(filepath.Join(dir, dbfile.JournalDir))
	row.diskAfterLoad = segs + jnl
	t.Logf("%d items loaded at %.0f items/s (CPU %v): segments %.1f MB, journal %.1f MB",
		n, row.loadRate, row.loadCPU.Round(time.Millisecond), float64(segs)/1e6, float64(jnl)/1e6)

	var grow int64
	row.openLoaded, row.cpuLoaded, grow = bestOpen(t, dir, n)
	row.heapLoaded = grow - base

	db, err = Open(dir, scaleOptions())
	if err != nil {
		t.Fatal(err)
	}
	c, err = db.Container("scale")
	if err != nil {
		t.Fatal(err)
	}
	cpu0, start = cpuTime(), time.Now()
	if err := c.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	row.compactTime, row.compactCPU = time.Since(start), cpuTime()-cpu0
	// A few reads, to be sure the compacted data is what was written.
	for _, j := range []int{0, n / 2, n - 1} {
		id := scaleID(uint64(j), idLen)
		if it, err := c.Read(ctx, id); err != nil || it.ID != id {
			t.Fatalf("after Compact: Read(%q) = %q, %v", id, it.ID, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ = dirBytes(filepath.Join(dir, dbfile.SegmentDir))
	jnl, _ = dirBytes(filepath.Join(dir, dbfile.JournalDir))
	row.diskCompacted = segs + jnl
	t.Logf("%d items compacted in %v (CPU %v): segments %.1f MB, journal %.1f MB",
		n, row.compactTime.Round(time.Millisecond), row.compactCPU.Round(time.Millisecond), float64(segs)/1e6, float64(jnl)/1e6)

	row.openCompac, row.cpuCompac, grow = bestOpen(t, dir, n)
	row.heapCompac = grow - base
	return row
}
