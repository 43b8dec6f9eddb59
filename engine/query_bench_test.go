package engine

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// Query benchmarks: latency by selectivity, with the secondary index
// (IndexingConsistent) and without (IndexingNone: a scan), over
// EBB_QUERY_BENCH_N items (default 100000) of 7 indexed scalar paths and a
// 3-element array. Run with:
//
//	go test ./engine -run '^$' -bench 'BenchmarkQuery' -benchtime 20x
func benchQueryN() int {
	if s := os.Getenv("EBB_QUERY_BENCH_N"); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
	}
	return 100_000
}

// queryBenchDoc is item i of the query benchmarks: u is unique, k1000 has 1000
// distinct values, k10 has 10, one is the same everywhere.
func queryBenchDoc(i int) []byte {
	return fmt.Appendf(nil, `{"id":"item%07d","u":%d,"k1000":%d,"k10":%d,"one":1,"name":"user-%d","tags":["t%d","t%d","all"],"pad":"%0200d"}`,
		i, i, i%1000, i%10, i%5000, i%7, i%13, 0)
}

// loadHalfExpired fills a container of a new database with the n
// documents doc(0..n-1), every odd one given ttl 10, and moves the clock
// past their expiry once the index has them all: the shape of bench/'s
// query workload. The caller closes the database.
func loadHalfExpired(b *testing.B, n int, doc func(j int) []byte) (*DB, *Container) {
	b.Helper()
	clk := newFakeClock(t0)
	db := openTest(b, b.TempDir(), clk, func(o *Options) { o.NoSync = true; o.CompactionInterval = -1; o.MaxBatchOperations = 500 })
	c := mustCreateContainer(b, db, ContainerProperties{ID: "q", DefaultTTL: TTL(-1)})
	ctx := context.Background()
	for i := 0; i < n; i += 500 {
		batch := c.NewBatch()
		for j := i; j < min(i+500, n); j++ {
			d := doc(j)
			if j%2 == 1 {
				d = append(d[:len(d)-1], `,"ttl":10}`...)
			}
			batch.Upsert(d)
		}
		if _, err := c.ExecuteBatch(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	waitIndexed(b, c)
	clk.Advance(11)
	if got := c.Stats().Items; got != int64((n+1)/2) {
		b.Fatalf("%d items live, want %d", got, (n+1)/2)
	}
	return db, c
}

func loadQueryData(b testing.TB, mode IndexingMode, n int) (*DB, *Container) {
	b.Helper()
	clk := newFakeClock(t0)
	db := openTest(b, b.TempDir(), clk, func(o *Options) { o.NoSync = true; o.CompactionInterval = -1; o.MaxBatchOperations = 500 })
	c := mustCreateContainer(b, db, ContainerProperties{ID: "q", Indexing: mode})
	ctx := context.Background()
	for i := 0; i < n; i += 500 {
		batch := c.NewBatch()
		for j := i; j < min(i+500, n); j++ {
			batch.Upsert(queryBenchDoc(j))
		}
		if _, err := c.ExecuteBatch(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	waitIndexed(b, c)
	return db, c
}

var benchQueries = []struct{ name, sql string }{
	{"eq-1", `SELECT * FROM c WHERE c.u = 4242`},
	{"eq-0.1%", `SELECT * FROM c WHERE c.k1000 = 7`},
	{"eq-10%", `SELECT * FROM c WHERE c.k10 = 3`},
	{"range-1%", `SELECT * FROM c WHERE c.u >= 1000 AND c.u < 2000`},
	{"and-0.1%", `SELECT * FROM c WHERE c.k10 = 3 AND c.k1000 = 3`},
	{"array-contains-1/7", `SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(c.tags, 't3')`},
	{"count-10%", `SELECT VALUE COUNT(1) FROM c WHERE c.k10 = 3`},
	{"count-all", `SELECT VALUE COUNT(1) FROM c WHERE c.one = 1`},
	{"top10-orderby", `SELECT TOP 10 * FROM c ORDER BY c.u DESC`},
}

func BenchmarkQuery(b *testing.B) {
	n := benchQueryN()
	for _, mode := range []IndexingMode{IndexingConsistent, IndexingNone} {
		b.Run(mode.String(), func(b *testing.B) {
			db, c := loadQueryData(b, mode, n)
			defer db.Close()
			for _, q := range benchQueries {
				b.Run(q.name, func(b *testing.B) {
					rows := 0
					for b.Loop() {
						rows = 0
						for _, err := range c.Query(context.Background(), q.sql) {
							if err != nil {
								b.Fatal(err)
							}
							rows++
						}
					}
					b.ReportMetric(float64(rows), "rows")
				})
			}
		})
	}
}

// BenchmarkQueryHalfExpired is the shape of bench/'s query workload: half
// of the items (every odd one) expired, and the expiry settled, before the
// queries, so that every answer walks past as many expired entries as
// live ones.
func BenchmarkQueryHalfExpired(b *testing.B) {
	db, c := loadHalfExpired(b, benchQueryN(), func(j int) []byte { return queryBenchDoc(j) })
	defer db.Close()
	ctx := context.Background()
	for _, q := range []struct{ name, sql string }{
		{"eq-0.1%", `SELECT * FROM c WHERE c.k1000 = 8`},
		{"range-1%", `SELECT * FROM c WHERE c.u >= 1000 AND c.u < 2000`},
		{"top10-orderby", `SELECT TOP 10 * FROM c ORDER BY c.u DESC`},
		{"count-10%", `SELECT VALUE COUNT(1) FROM c WHERE c.k10 = 4`},
		{"all-10%", `SELECT * FROM c WHERE c.k10 = 4`},
	} {
		b.Run(q.name, func(b *testing.B) {
			rows := 0
			for b.Loop() {
				rows = 0
				for _, err := range c.Query(ctx, q.sql) {
					if err != nil {
						b.Fatal(err)
					}
					rows++
				}
			}
			b.ReportMetric(float64(rows), "rows")
		})
	}
}

// TestQueryIndexMemory reports the heap the secondary index costs per item
// and per path: the same data loaded with IndexingConsistent and with
// IndexingNone. It asserts only that the index exists; run with -v for the
// figures. EBB_QUERY_BENCH_N sets the size.
func TestQueryIndexMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 100k items")
	}
	n := benchQueryN()
	if os.Getenv("EBB_QUERY_BENCH_N") == "" {
		n = 20_000 // keep the default test run short
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var sizes [2]uint64
	for i, mode := range []IndexingMode{IndexingNone, IndexingConsistent} {
		before := heap()
		db, c := loadQueryData(t, mode, n)
		sizes[i] = heap() - before
		if mode == IndexingConsistent {
			c.mu.RLock()
			u := c.idx.TermUsage()
			c.mu.RUnlock()
			if u.Postings < int64(n) {
				t.Fatalf("consistent index has %d postings for %d items", u.Postings, n)
			}
			t.Logf("terms: %d paths, %d distinct keys, %d postings, ~%d bytes estimated (%.1f B/item)",
				u.Paths, u.Keys, u.Postings, u.Bytes, float64(u.Bytes)/float64(n))
			for _, p := range u.PerPath {
				t.Logf("  path %-12s %7d keys %8d postings ~%9d bytes (%.1f B/item)", p.Path, p.Keys, p.Postings, p.Bytes, float64(p.Bytes)/float64(n))
			}
		}
		db.Close()
	}
	t.Logf("%d items: heap without index %.1f MiB, with %.1f MiB: the index costs %.1f B/item (7 scalar paths and a 3-element array; ids are the primary index's)",
		n, float64(sizes[0])/(1<<20), float64(sizes[1])/(1<<20), (float64(sizes[1])-float64(sizes[0]))/float64(n))
}

// TestQueryIndexRebuild reports how long Open takes and how long the
// background rebuild of the secondary index takes after it, for
// EBB_QUERY_BENCH_N items (default 20000 in a plain test run). Queries
// are exact throughout; they scan until the rebuild is done.
func TestQueryIndexRebuild(t *testing.T) {
	if testing.Short() {
		t.Skip("loads many items")
	}
	n := benchQueryN()
	if os.Getenv("EBB_QUERY_BENCH_N") == "" {
		n = 20_000
	}
	db, c := loadQueryData(t, IndexingConsistent, n)
	dir := db.dir
	if err := c.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	db = openTest(t, dir, newFakeClock(t0), func(o *Options) { o.CompactionInterval = -1 })
	defer db.Close()
	opened := time.Since(start)
	c, err := db.Container("q")
	if err != nil {
		t.Fatal(err)
	}
	var scanned int
	for _, err := range c.Query(context.Background(), `SELECT VALUE COUNT(1) FROM c WHERE c.k10 = 3`) {
		if err != nil {
			t.Fatal(err)
		}
		scanned++
	}
	waitIndexed(t, c)
	built := time.Since(start)
	got := runQuery(t, c, `SELECT VALUE COUNT(1) FROM c WHERE c.k10 = 3`)
	if want := fmt.Sprint((n + 9 - 3) / 10); len(got) != 1 || string(got[0].Body) != want {
		t.Fatalf("count after rebuild = %v, want %s", got, want)
	}
	t.Logf("%d items: Open %v, index rebuilt %v after Open began (%.1f µs/item)", n, opened.Round(time.Millisecond),
		built.Round(time.Millisecond), float64(built-opened)/float64(time.Microsecond)/float64(n))
}

// BenchmarkWriteIndexing is the write cost of each indexing mode: batches
// of 100 upserts of ~400-byte documents with 8 scalar paths and a 3-element
// array, NoSync so that CPU, not fsync, is measured.
func BenchmarkWriteIndexing(b *testing.B) {
	for _, mode := range allModes {
		b.Run(mode.String(), func(b *testing.B) {
			clk := newFakeClock(t0)
			db := openTest(b, b.TempDir(), clk, func(o *Options) { o.NoSync = true })
			defer db.Close()
			c := mustCreateContainer(b, db, ContainerProperties{ID: "w", Indexing: mode})
			ctx := context.Background()
			i := 0
			for b.Loop() {
				var batch Batch
				for range 100 {
					batch.Upsert(queryBenchDoc(i % 200_000))
					i++
				}
				if _, err := c.ExecuteBatch(ctx, &batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i)/1000, "µs/item")
		})
	}
}
