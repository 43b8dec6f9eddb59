package engine

// Benchmarks of the write and read paths against ebb's targets
// (README, "Benchmarks"). They use the public API only, with the default durability
// (every acknowledged write fsynced, shared by group commit) unless the
// benchmark's name says NoSync.
//
// Each reports, besides ns/op, a throughput (writes/s, items/s or reads/s)
// and the p50/p99 latency of one call in µs, from per-call timings sorted
// after the run. Run them with, for example:
//
//	go test ./engine -run '^$' -bench 'Write|Read' -benchtime 2s

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
)

// perfDocSize is the size of the documents written by the write and read
// benchmarks.
const perfDocSize = 1024

// perfIDLen is the length of the ids the benchmarks write: "doc-" and 12 digits.
const perfIDLen = 16

// perfID appends the id of item n to dst.
func perfID(dst []byte, prefix string, n uint64) []byte {
	dst = append(dst, prefix...)
	var num [20]byte
	s := strconv.AppendUint(num[:0], n, 10)
	for i := len(prefix) + len(s); i < perfIDLen; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

var perfWords = []string{
	"order", "shipped", "customer", "pending", "invoice", "account", "payment",
	"delivery", "warehouse", "refund", "priority", "standard", "express", "review",
	"the", "and", "with", "from", "for", "item", "status", "update", "request",
	"Berlin", "London", "Paris", "Tokyo", "Seattle", "note", "retry", "gift",
}

var (
	perfFirst   = []string{"Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Radia", "Leslie"}
	perfLast    = []string{"Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson", "Perlman", "Lamport"}
	perfCities  = []string{"London", "Berlin", "Paris", "Tokyo", "Seattle", "Lagos", "Lima", "Oslo"}
	perfStatus  = []string{"active", "pending", "suspended", "closed"}
	perfDevices = []string{"ios", "android", "web", "desktop"}
)

// perfTail returns the rest of a document after `{"id":"<id>",`: a typical
// profile/session item with a few strings, numbers, a nested object and an
// array, padded with text to size bytes in all (for an id of perfIDLen).
// The values vary with seed, the shape does not, as in real containers.
func perfTail(seed uint64, size int) []byte {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	first, last := pick(perfFirst), pick(perfLast)
	b := fmt.Appendf(nil,
		`"ttl":3600,"type":"session","tenantId":"tenant-%03d","status":%q,`+
			`"user":{"name":"%s %s","email":"%s.%s@example.com","age":%d,"verified":%t,`+
			`"address":{"street":"%d %s Street","city":%q,"zip":"%05d","geo":[%.4f,%.4f]}},`+
			`"device":%q,"loginCount":%d,"balance":%.2f,"createdAt":"2024-%02d-%02dT%02d:%02d:%02dZ",`+
			`"tags":[%q,%q,%q],"metrics":{"views":%d,"clicks":%d,"ratio":%.5f},`,
		r.IntN(200), pick(perfStatus),
		first, last, first, last, 18+r.IntN(60), r.IntN(2) == 0,
		1+r.IntN(400), pick(perfLast), pick(perfCities), r.IntN(100000), r.Float64()*180-90, r.Float64()*360-180,
		pick(perfDevices), r.IntN(5000), r.Float64()*10000, 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60),
		pick(perfWords), pick(perfWords), pick(perfWords), r.IntN(100000), r.IntN(10000), r.Float64())
	pad := size - len(`{"id":"`) - perfIDLen - len(`",`) - len(b) - len(`"notes":""}`)
	b = append(b, `"notes":"`...)
	for n := 0; n < pad; {
		w := pick(perfWords)
		if n > 0 {
			w = " " + w
		}
		if n+len(w) > pad {
			w = "................"[:pad-n]
		}
		b = append(b, w...)
		n += len(w)
	}
	return append(b, `"}`...)
}

// perfDocs is a pool of document tails: a write takes one and puts its own
// id in front, so that generating documents costs almost nothing in the
// timed loops. 4096 distinct tails are far more than a segment block holds.
type perfDocs struct {
	tails [][]byte
}

func newPerfDocs(size int) *perfDocs {
	p := &perfDocs{tails: make([][]byte, 4096)}
	for i := range p.tails {
		p.tails[i] = perfTail(uint64(i), size)
	}
	return p
}

// doc returns a new document for item n: each call allocates, since a
// caller hands the engine a document it no longer touches.
func (p *perfDocs) doc(prefix string, n uint64) []byte {
	tail := p.tails[n%uint64(len(p.tails))]
	d := make([]byte, 0, len(`{"id":"",`)+perfIDLen+len(tail))
	d = append(d, `{"id":"`...)
	d = perfID(d, prefix, n)
	d = append(d, `",`...)
	return append(d, tail...)
}

var (
	perfDocsOnce sync.Once
	perfDocs1K   *perfDocs
)

func docs1K() *perfDocs {
	perfDocsOnce.Do(func() { perfDocs1K = newPerfDocs(perfDocSize) })
	return perfDocs1K
}

func TestPerfDocs(t *testing.T) {
	p := docs1K()
	for _, n := range []uint64{0, 1, 4095, 123456789} {
		d := p.doc("doc-", n)
		if len(d) != perfDocSize {
			t.Errorf("doc %d is %d bytes, want %d: %s", n, len(d), perfDocSize, d)
		}
		pd, err := parseDocument(d)
		if err != nil {
			t.Fatalf("doc %d: %v\n%s", n, err, d)
		}
		if want := string(perfID(nil, "doc-", n)); pd.ID != want || pd.TTL != 3600 {
			t.Errorf("doc %d: id %q ttl %d, want %q 3600", n, pd.ID, pd.TTL, want)
		}
	}
}

// perfOpen opens a new database in a temporary directory with one
// container, "bench", whose DefaultTTL is an hour.
func perfOpen(b *testing.B, dir string, o *Options) (*DB, *Container) {
	b.Helper()
	return perfOpenIn(b, dir, o, nil)
}

// perfOpenIn is perfOpen with the container's ExcludedPaths (when it is
// created).
func perfOpenIn(b testing.TB, dir string, o *Options, excluded []string) (*DB, *Container) {
	b.Helper()
	db, err := Open(dir, o)
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	c, err := db.Container("bench")
	if errors.Is(err, ErrNotFound) {
		c, err = db.CreateContainer(context.Background(), ContainerProperties{ID: "bench", DefaultTTL: TTL(3600), ExcludedPaths: excluded})
	}
	if err != nil {
		b.Fatalf("container: %v", err)
	}
	return db, c
}

// reportLatency reports the 50th and 99th percentiles and the maximum of
// lats in µs.
func reportLatency(b *testing.B, lats []time.Duration) {
	if len(lats) == 0 {
		return
	}
	slices.Sort(lats)
	q := func(p float64) float64 {
		i := int(p * float64(len(lats)))
		if i >= len(lats) {
			i = len(lats) - 1
		}
		return float64(lats[i]) / float64(time.Microsecond)
	}
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(float64(lats[len(lats)-1])/float64(time.Microsecond), "max-µs")
}

// reportCPU reports the process's CPU time (cpuTime) since start per each of n
// events, as unit. On a shared machine it moves less than the rates do: other
// work slows a run down but does not add to its CPU time.
func reportCPU(b *testing.B, start time.Duration, n int, unit string) {
	if n > 0 {
		b.ReportMetric(float64(cpuTime()-start)/float64(time.Microsecond)/float64(n), unit)
	}
}

// reportRate reports n events per second of measured time, as unit.
func reportRate(b *testing.B, n int, unit string) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(n)/s, unit)
	}
}

// BenchmarkWrite: Upsert of 1 KiB documents with unique ids, fsynced, by 1
// writer and by 64 concurrent writers sharing group commits.
func BenchmarkWrite(b *testing.B) {
	for _, w := range []int{1, 64} {
		b.Run(fmt.Sprintf("writers=%d", w), func(b *testing.B) { benchUpsert(b, w, nil) })
	}
}

// BenchmarkWriteNoSync is BenchmarkWrite with Options.NoSync, for comparison.
func BenchmarkWriteNoSync(b *testing.B) {
	for _, w := range []int{1, 64} {
		b.Run(fmt.Sprintf("writers=%d", w), func(b *testing.B) { benchUpsert(b, w, &Options{NoSync: true}) })
	}
}

func benchUpsert(b *testing.B, writers int, o *Options) { benchUpsertIn(b, writers, o, nil) }

// benchUpsertIn is benchUpsert in a container with the given ExcludedPaths.
func benchUpsertIn(b *testing.B, writers int, o *Options, excluded []string) {
	p := docs1K()
	db, c := perfOpenIn(b, b.TempDir(), o, excluded)
	defer db.Close()
	ctx := context.Background()
	b.SetBytes(perfDocSize)
	b.ReportAllocs()
	var next atomic.Uint64
	lats := make([][]time.Duration, writers)
	errc := make(chan error, writers)
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu := cpuTime()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			l := make([]time.Duration, 0, b.N/writers+1)
			for {
				n := next.Add(1) - 1
				if n >= uint64(b.N) {
					break
				}
				d := p.doc("doc-", n)
				start := time.Now()
				if _, err := c.Upsert(ctx, d); err != nil {
					errc <- err
					return
				}
				l = append(l, time.Since(start))
			}
			lats[w] = l
		}(w)
	}
	wg.Wait()
	b.StopTimer()
	close(errc)
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	reportRate(b, b.N, "writes/s")
	reportCPU(b, cpu, b.N, "cpu-µs/write")
	reportLatency(b, slices.Concat(lats...))
}

// BenchmarkWriteBatch100: one op is an ExecuteBatch of 100 upserts of 1 KiB
// each (building the batch, which parses the documents, included).
func BenchmarkWriteBatch100(b *testing.B) { benchBatch(b, 100, nil) }

// BenchmarkWriteBatch100NoSync is BenchmarkWriteBatch100 with Options.NoSync.
func BenchmarkWriteBatch100NoSync(b *testing.B) { benchBatch(b, 100, &Options{NoSync: true}) }

// BenchmarkWriteBatch100NoIndex is BenchmarkWriteBatch100NoSync in a
// container that indexes no path (ExcludedPaths ["/*"]), as a key-value
// store is used; its ratio to BenchmarkWriteBatch100NoSync is the cost of
// indexing every path.
func BenchmarkWriteBatch100NoIndex(b *testing.B) {
	benchBatchIn(b, 100, &Options{NoSync: true}, []string{"/*"})
}

// BenchmarkWriteBatch100Sync is BenchmarkWriteBatch100NoIndex with fsync
// on: the shape of bench/'s fill of one writer of batches.
func BenchmarkWriteBatch100Sync(b *testing.B) { benchBatchIn(b, 100, nil, []string{"/*"}) }

// BenchmarkWriteNoIndex is BenchmarkWrite (fsynced) in a container that
// indexes no path.
func BenchmarkWriteNoIndex(b *testing.B) {
	for _, w := range []int{1, 64} {
		b.Run(fmt.Sprintf("writers=%d", w), func(b *testing.B) { benchUpsertIn(b, w, nil, []string{"/*"}) })
	}
}

// BenchmarkWriteNoIndexNoSync is BenchmarkWriteNoIndex with Options.NoSync:
// the shape of bench/'s fill of single writers with --nosync, where the
// write path's CPU is all there is to measure.
func BenchmarkWriteNoIndexNoSync(b *testing.B) {
	for _, w := range []int{1, 64} {
		b.Run(fmt.Sprintf("writers=%d", w), func(b *testing.B) { benchUpsertIn(b, w, &Options{NoSync: true}, []string{"/*"}) })
	}
}

func benchBatch(b *testing.B, size int, o *Options) { benchBatchIn(b, size, o, nil) }

// benchBatchIn is benchBatch in a container with the given ExcludedPaths.
func benchBatchIn(b *testing.B, size int, o *Options, excluded []string) {
	p := docs1K()
	db, c := perfOpenIn(b, b.TempDir(), o, excluded)
	defer db.Close()
	ctx := context.Background()
	b.SetBytes(int64(size) * perfDocSize)
	b.ReportAllocs()
	lats := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		var batch Batch
		for j := 0; j < size; j++ {
			batch.Upsert(p.doc("doc-", uint64(i*size+j)))
		}
		if _, err := c.ExecuteBatch(ctx, &batch); err != nil {
			b.Fatal(err)
		}
		lats = append(lats, time.Since(start))
	}
	b.StopTimer()
	reportRate(b, b.N*size, "items/s")
	reportCPU(b, cpu, b.N*size, "cpu-µs/item")
	reportLatency(b, lats)
}

// perfReadItems is how many items BenchmarkRead loads: the size at which
// issue 11 compared point reads with the peers (200 MB of records, three
// times the default block cache).
const perfReadItems = 200_000

// perfReadSeal is the SealThreshold of BenchmarkRead: small enough that
// most of the 200 MB loaded is sealed into segments and the newest few MB
// stay in the memtable.
const perfReadSeal = 8 << 20

// BenchmarkRead: point reads of random ids after loading 200k 1 KiB items,
// most of them sealed into segment files, the newest in the memtable, and
// reopening. /hit reads ids that exist with the default block cache (sized
// to the machine's memory, so the 200 MB loaded fit once each block has been
// read: the first reads of each block decompress it), /miss ids that do
// not. /hit-warm-into reads with ReadInto into one reused buffer, so that
// the loop allocates only the etag. /hit-64MiB-cache reopens with a 64 MiB block cache, a third of the
// data, so that most reads decompress a block.
func BenchmarkRead(b *testing.B) {
	p := docs1K()
	dir := b.TempDir()
	ctx := context.Background()

	// Load with NoSync (durability does not change reads), then reopen
	// with the defaults so that the unsealed tail is replayed into the
	// memtable as after any restart.
	load := &Options{NoSync: true, SealThreshold: perfReadSeal}
	db, c := perfOpen(b, dir, load)
	start := time.Now()
	for i := 0; i < perfReadItems; i += 100 {
		var batch Batch
		for j := i; j < i+100 && j < perfReadItems; j++ {
			batch.Upsert(p.doc("doc-", uint64(j)))
		}
		if _, err := c.ExecuteBatch(ctx, &batch); err != nil {
			b.Fatal(err)
		}
	}
	loadTime := time.Since(start)
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	segBytes, segFiles := dirBytes(filepath.Join(dir, dbfile.SegmentDir))
	jnlBytes, _ := dirBytes(filepath.Join(dir, dbfile.JournalDir))
	start = time.Now()
	db, c = perfOpen(b, dir, &Options{SealThreshold: perfReadSeal})
	openTime := time.Since(start)
	defer db.Close()
	st := c.Stats()
	if st.Items != perfReadItems {
		b.Fatalf("loaded %d items, want %d", st.Items, perfReadItems)
	}
	b.Logf("loaded %d items in %v; %d segment files, %.1f MB; journal (memtable after open) %.1f MB; open %v",
		st.Items, loadTime.Round(time.Millisecond), segFiles, float64(segBytes)/1e6, float64(jnlBytes)/1e6, openTime.Round(time.Millisecond))

	ids := make([]string, perfReadItems)
	missing := make([]string, perfReadItems)
	for i := range ids {
		ids[i] = string(perfID(nil, "doc-", uint64(i)))
		missing[i] = string(perfID(nil, "doc-", uint64(perfReadItems+i*7+3)))
	}
	run := func(name string, ids []string, hit bool) {
		b.Run(name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			into := strings.HasSuffix(name, "-into") // ReadInto with one reused buffer
			var buf []byte
			b.ReportAllocs()
			lats := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			cpu, faults := cpuTime(), minorFaults()
			for i := 0; i < b.N; i++ {
				id := ids[r.IntN(len(ids))]
				start := time.Now()
				var it Item
				var err error
				if into {
					if it, err = c.ReadInto(ctx, id, buf); err == nil {
						buf = it.Body
					}
				} else {
					it, err = c.Read(ctx, id)
				}
				lats = append(lats, time.Since(start))
				if hit && (err != nil || it.ID != id) {
					b.Fatalf("Read(%q) = %q, %v", id, it.ID, err)
				}
				if !hit && !errors.Is(err, ErrNotFound) {
					b.Fatalf("Read(%q) = %v, want ErrNotFound", id, err)
				}
			}
			b.StopTimer()
			reportRate(b, b.N, "reads/s")
			reportCPU(b, cpu, b.N, "cpu-µs/read")
			b.ReportMetric(float64(minorFaults()-faults)/float64(b.N), "faults/read")
			reportLatency(b, lats)
		})
	}
	run("hit", ids, true)
	run("hit-warm", ids, true)
	run("hit-warm-into", ids, true)
	run("miss", missing, false)

	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	db, c = perfOpen(b, dir, &Options{SealThreshold: perfReadSeal, BlockCacheSize: 64 << 20})
	defer db.Close()
	run("hit-64MiB-cache", ids, true)
}

// dirBytes returns the total size of the regular files under dir, and their count.
func dirBytes(dir string) (bytes int64, files int) {
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				bytes += fi.Size()
				files++
			}
		}
		return nil
	})
	return bytes, files
}

// BenchmarkExpiryStorm: 200,000 items of 1 KiB expire in the same second
// (a fake clock jumps past their ttl) while a reader reads items that never
// expire, one read every 100 µs, and the background compactor marks,
// drops and purges the storm. It reports the reads' latency from the jump
// until the storm's files are gone and a little after, and how long the
// disk took to give the space back. Work that holds the container's lock
// for long (marking or purging the storm in one go, sealing with the lock
// held) shows as a max in the milliseconds. b.N is ignored: one storm per
// run.
func BenchmarkExpiryStorm(b *testing.B) {
	const storm, steady = 200_000, 1_000
	ctx := context.Background()
	clk := newFakeClock(t0)
	db := openTest(b, b.TempDir(), clk, func(o *Options) { o.NoSync = true; o.CompactionInterval = 50 * time.Millisecond })
	defer db.Close()
	c := mustCreateContainer(b, db, ContainerProperties{ID: "c", DefaultTTL: TTL(-1), ExcludedPaths: []string{"/*"}})
	p := docs1K()
	for i := 0; i < storm; i += 100 {
		var batch Batch
		for j := i; j < i+100; j++ {
			batch.Upsert(p.doc("s-", uint64(j))) // ttl 3600
		}
		if _, err := c.ExecuteBatch(ctx, &batch); err != nil {
			b.Fatal(err)
		}
	}
	for i := range steady {
		doc := fmt.Appendf(nil, `{"id":"%s","ttl":-1,"v":%d}`, perfID(nil, "f-", uint64(i)), i)
		if _, err := c.Upsert(ctx, doc); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(time.Second) // seals settle
	var stop atomic.Bool
	var lats []time.Duration
	done := make(chan error, 1)
	b.ResetTimer()
	go func() {
		for i := 0; !stop.Load(); i++ {
			id := string(perfID(nil, "f-", uint64(i%steady)))
			start := time.Now()
			if _, err := c.Read(ctx, id); err != nil {
				done <- err
				return
			}
			lats = append(lats, time.Since(start))
			time.Sleep(100 * time.Microsecond)
		}
		done <- nil
	}()
	clk.Advance(4000)
	start := time.Now()
	for c.Stats().Items > steady || c.Metrics().DiskBytes > 100<<20 {
		if time.Since(start) > 30*time.Second {
			b.Fatal("the storm's space did not come back within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	back := time.Since(start)
	time.Sleep(200 * time.Millisecond)
	stop.Store(true)
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(back.Seconds(), "s-to-space-back")
	reportLatency(b, lats)
}
