package engine

// BenchmarkOpen measures Open of a database holding many items, as the
// bench module's scale workload does: one container with DefaultTTL -1 and
// no indexed path, filled with 1 KiB items (ttl ten years) in batches of 1000,
// closed, then opened and read once per iteration. It reports ms per Open
// (with the one Read) and the live heap the open database holds per item.
//
//	EBB_OPEN_ITEMS=1000000        items to fill (default 100000)
//	EBB_OPEN_DIR=/tmp/ebb-open    keep the filled database there and reuse
//	                              it on the next run (default: a temporary one)
//
// For example, a CPU profile of Open at a million items:
//
//	EBB_OPEN_ITEMS=1e6 EBB_OPEN_DIR=/tmp/ebb-open go test ./engine -run '^$' \
//	    -bench '^BenchmarkOpen$' -benchtime 10x -cpuprofile /tmp/open.prof

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
)

// openBenchContainer is the container BenchmarkOpen fills.
const openBenchContainer = "bench"

func openBenchOptions() *Options {
	return &Options{NoSync: true, MaxBatchOperations: 10_000, MaxBatchBytes: 256 << 20}
}

func BenchmarkOpen(b *testing.B) {
	n := 100_000
	if s := os.Getenv("EBB_OPEN_ITEMS"); s != "" {
		f, err := strconv.ParseFloat(s, 64) // accepts 1e6
		if err != nil || f < 1 {
			b.Fatalf("EBB_OPEN_ITEMS=%q: not an item count", s)
		}
		n = int(f)
	}
	dir := os.Getenv("EBB_OPEN_DIR")
	if dir == "" {
		dir = filepath.Join(b.TempDir(), "db")
	}
	openBenchFill(b, dir, n)
	probe := string(perfID(nil, "doc-", uint64(n/2)))

	before := liveHeap()
	db, _ := openBenchOnce(b, dir, probe)
	heap := int64(liveHeap()) - int64(before)
	runtime.KeepAlive(db)
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	var total time.Duration
	var faults int64
	var cpu time.Duration
	var gcs uint32
	for range b.N {
		// Each Open starts from a small heap whose free pages went back to
		// the system, as in a process that has just started (and as the
		// bench module's scale workload measures it): the collector runs
		// several times while Open builds the index, and every page of it
		// is new to the process. Both are part of what Open costs.
		b.StopTimer()
		debug.FreeOSMemory()
		b.StartTimer()
		f0, cpu0, gc0 := minorFaults(), cpuTime(), numGC()
		db, took := openBenchOnce(b, dir, probe)
		total += took
		faults += minorFaults() - f0
		cpu += cpuTime() - cpu0
		gcs += numGC() - gc0
		b.StopTimer()
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "open-ms")
	b.ReportMetric(float64(heap)/float64(n), "heap-B/item")
	b.ReportMetric(float64(faults)/float64(b.N), "faults/op")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms")
	b.ReportMetric(float64(gcs)/float64(b.N), "gcs/op")
	b.ReportMetric(0, "ns/op") // open-ms says it without Close
}

// minorFaults is the number of page faults the process has taken that
// needed no disk read: on a virtual machine, first touches of memory new to
// the process cost several microseconds each.
func minorFaults() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Minflt
}

// numGC is the number of garbage collections completed so far.
func numGC() uint32 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.NumGC
}

// openBenchOnce opens dir and reads probe, returning the open database and
// the time both took.
func openBenchOnce(b *testing.B, dir, probe string) (*DB, time.Duration) {
	b.Helper()
	start := time.Now()
	db, err := Open(dir, openBenchOptions())
	if err != nil {
		b.Fatal(err)
	}
	c, err := db.Container(openBenchContainer)
	if err != nil {
		b.Fatal(err)
	}
	it, err := c.Read(context.Background(), probe)
	if err != nil || it.ID != probe {
		b.Fatalf("first Read(%q) after Open = %q, %v", probe, it.ID, err)
	}
	return db, time.Since(start)
}

// openBenchFill fills dir with n items unless it already holds them (a
// database BenchmarkOpen filled before, with the same n).
func openBenchFill(b *testing.B, dir string, n int) {
	b.Helper()
	marker := dir + ".items"
	if got, err := os.ReadFile(marker); err == nil && string(got) == strconv.Itoa(n) {
		return
	} else if err == nil {
		b.Fatalf("%s holds %s items, want %d: remove it or give another EBB_OPEN_DIR", dir, got, n)
	} else if !errors.Is(err, os.ErrNotExist) {
		b.Fatal(err)
	}
	ctx := context.Background()
	db, err := Open(dir, openBenchOptions())
	if err != nil {
		b.Fatal(err)
	}
	c, err := db.CreateContainer(ctx, ContainerProperties{
		ID: openBenchContainer, DefaultTTL: TTL(-1), ExcludedPaths: []string{"/*"},
	})
	if err != nil {
		b.Fatal(err)
	}
	docs := docs1K()
	const batchSize = 1000
	for i := 0; i < n; i += batchSize {
		bt := c.NewBatch()
		for j := i; j < i+batchSize && j < n; j++ {
			// The items expire, as the scale workload's do, but not within
			// the years a kept EBB_OPEN_DIR may be reused for.
			bt.Upsert(bytes.Replace(docs.doc("doc-", uint64(j)), []byte(`"ttl":3600,`), []byte(`"ttl":315360000,`), 1))
		}
		if _, err := c.ExecuteBatch(ctx, bt); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	// The marker sits beside the database, not in it: Open refuses a
	// directory holding files ebb did not create.
	if err := os.WriteFile(marker, []byte(strconv.Itoa(n)), 0o644); err != nil {
		b.Fatal(err)
	}
	segs, files := dirBytes(filepath.Join(dir, dbfile.SegmentDir))
	jnl, _ := dirBytes(filepath.Join(dir, dbfile.JournalDir))
	b.Logf("filled %d items: %d segment files of %.1f MB, journal %.1f MB", n, files, float64(segs)/1e6, float64(jnl)/1e6)
}
