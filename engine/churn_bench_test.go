package engine

// TestChurnBench measures the background compactor under steady TTL churn,
// against ebb's targets:
//
//	under steady churn of 1 KiB items with a 10 s TTL for 60 s, report disk
//	bytes / live bytes over time (target <= 1.25 at steady state), reclaim
//	lag (target: seconds), write amplification (target <= 1.3 for
//	time-ordered TTL data), and foreground p99 latency with the compactor on
//	vs off (target ratio <= 1.2).
//
// It runs on the real wall clock with the default durability (every write
// fsynced), one container with DefaultTTL 10 and never-repeating ids. Writes
// are single Upserts of 1 KiB JSON documents issued at a fixed rate by a
// pacer and served by a pool of writers (group commit shares the fsyncs); a
// concurrent reader reads recently written ids at a fixed rate. Every second
// it samples Container.Metrics and walks the directory. It runs the load
// once with the background compactor on and once with it off
// (CompactionInterval -1) and compares the foreground latencies.
//
// It is skipped unless EBB_CHURN is set to the load's duration:
//
//	EBB_CHURN=60s go test ./engine -run TestChurnBench -v -timeout 20m
//
// Optional settings (environment):
//
//	EBB_CHURN_RATE=2000       writes per second
//	EBB_CHURN_WRITERS=16      concurrent writers
//	EBB_CHURN_READS=1000      point reads per second
//	EBB_CHURN_DRAIN=20s       sampling after the load (compactor on only)
//	EBB_CHURN_MODES=on,off    which runs, in order
//	EBB_CHURN_SEAL=64MiB      Options.SealThreshold
//	EBB_CHURN_JSEG=16MiB      Options.JournalSegmentSize
//	EBB_CHURN_CRATE=64MiB     Options.CompactionRate (bytes/s)
//	EBB_CHURN_INTERVAL=1s     Options.CompactionInterval (compactor on)
//	EBB_CHURN_REWRITE=0.5     Options.RewriteThreshold
//	EBB_CHURN_COMPRESSION=    Options.Compression: zstd, s2 or none
//	EBB_CHURN_SAMPLES=0       print every n-th sample row (0: all)
//	EBB_CHURN_PROF=dir        write mutex and block profiles of each run there,
//	                          and an execution trace of the first run

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
)

const (
	churnDocSize = 1024
	churnTTL     = 10
	// churnReadAge bounds the age of the ids the reader picks, so that
	// every one of them is still live (it expires at _ts+10 >= written+9 s).
	churnReadAge = 8 * time.Second
)

type churnConfig struct {
	dur      time.Duration
	rate     int
	writers  int
	reads    int
	drain    time.Duration
	modes    []string
	every    int
	opts     Options
	settings string // the Options overrides, for the report
}

func churnEnv(t *testing.T) churnConfig {
	v := os.Getenv("EBB_CHURN")
	if v == "" {
		t.Skip("set EBB_CHURN=60s to run the churn benchmark")
	}
	cfg := churnConfig{dur: 60 * time.Second, rate: 2000, writers: 16, reads: 1000,
		drain: 20 * time.Second, modes: []string{"on", "off"}}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		cfg.dur = d
	}
	num := func(name string, def int) int {
		if s := os.Getenv(name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("%s=%q: %v", name, s, err)
			}
			return n
		}
		return def
	}
	size := func(name string) int64 {
		s := os.Getenv(name)
		if s == "" {
			return 0
		}
		n, err := churnParseSize(s)
		if err != nil {
			t.Fatalf("%s=%q: %v", name, s, err)
		}
		return n
	}
	cfg.rate = num("EBB_CHURN_RATE", cfg.rate)
	cfg.writers = num("EBB_CHURN_WRITERS", cfg.writers)
	cfg.reads = num("EBB_CHURN_READS", cfg.reads)
	cfg.every = num("EBB_CHURN_SAMPLES", 0)
	if s := os.Getenv("EBB_CHURN_DRAIN"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("EBB_CHURN_DRAIN=%q: %v", s, err)
		}
		cfg.drain = d
	}
	if s := os.Getenv("EBB_CHURN_MODES"); s != "" {
		cfg.modes = strings.Split(s, ",")
	}
	var set []string
	if n := size("EBB_CHURN_SEAL"); n > 0 {
		cfg.opts.SealThreshold = n
		set = append(set, "SealThreshold="+churnMB(n))
	}
	if n := size("EBB_CHURN_JSEG"); n > 0 {
		cfg.opts.JournalSegmentSize = int(n)
		set = append(set, "JournalSegmentSize="+churnMB(n))
	}
	if n := size("EBB_CHURN_CRATE"); n > 0 {
		cfg.opts.CompactionRate = n
		set = append(set, "CompactionRate="+churnMB(n)+"/s")
	}
	if s := os.Getenv("EBB_CHURN_INTERVAL"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("EBB_CHURN_INTERVAL=%q: %v", s, err)
		}
		cfg.opts.CompactionInterval = d
		set = append(set, "CompactionInterval="+d.String())
	}
	switch s := os.Getenv("EBB_CHURN_COMPRESSION"); s {
	case "":
	case "zstd":
		cfg.opts.Compression = CompressionZstd
	case "s2":
		cfg.opts.Compression = CompressionS2
	case "none":
		cfg.opts.Compression = CompressionNone
	default:
		t.Fatalf("EBB_CHURN_COMPRESSION=%q: want zstd, s2 or none", s)
	}
	if s := os.Getenv("EBB_CHURN_COMPRESSION"); s != "" {
		set = append(set, "Compression="+s)
	}
	if s := os.Getenv("EBB_CHURN_REWRITE"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("EBB_CHURN_REWRITE=%q: %v", s, err)
		}
		cfg.opts.RewriteThreshold = f
		set = append(set, "RewriteThreshold="+s)
	}
	cfg.settings = "defaults"
	if len(set) > 0 {
		cfg.settings = strings.Join(set, " ")
	}
	return cfg
}

// churnParseSize parses "8MiB", "512KiB", "1GiB", "4M" or a plain byte count.
func churnParseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suf string
		m   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suf) {
			s, mult = strings.TrimSuffix(s, u.suf), u.m
			break
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	return int64(f * float64(mult)), err
}

func churnMB(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// Documents: `{"id":"<16>","seq":<12 digits>,"at":<13 digits>,` followed by
// a tail from a pool. Each tail is a realistic session/profile item (strings,
// numbers, a nested object, an array) with random tokens and a free-text
// field of words and numbers, so that it compresses about as well as real
// JSON does, not trivially. The pool is large enough (16 MiB) that no tail
// repeats within a segment block or a seal file's window.

const churnIDLen = 16

var churnWords = []string{
	"order", "shipped", "customer", "pending", "invoice", "account", "payment",
	"delivery", "warehouse", "refund", "priority", "standard", "express", "review",
	"the", "and", "with", "from", "for", "item", "status", "update", "request",
	"Berlin", "London", "Paris", "Tokyo", "Seattle", "note", "retry", "gift",
	"cart", "checkout", "session", "token", "expired", "renewed", "coupon", "discount",
	"return", "exchange", "backorder", "carrier", "tracking", "signature", "address",
	"billing", "shipping", "subscription", "monthly", "annual", "trial", "upgrade",
	"downgrade", "cancel", "support", "ticket", "escalated", "resolved", "callback",
}

func churnTail(seed uint64, size int) []byte {
	r := rand.New(rand.NewPCG(seed, 0x2545f4914f6cdd1d))
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	first, last := pick(perfFirst), pick(perfLast)
	const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	token := make([]byte, 43)
	for i := range token {
		token[i] = b64[r.IntN(64)]
	}
	b := fmt.Appendf(nil,
		`"type":"session","tenantId":"tenant-%03d","status":%q,`+
			`"user":{"name":"%s %s","email":"%s.%s%d@example.com","age":%d,"verified":%t,`+
			`"address":{"street":"%d %s Street","city":%q,"zip":"%05d","geo":[%.6f,%.6f]}},`+
			`"device":%q,"ip":"%d.%d.%d.%d","loginCount":%d,"balance":%.2f,"createdAt":"2024-%02d-%02dT%02d:%02d:%02d.%03dZ",`+
			`"token":"%s","traceId":"%016x%016x",`+
			`"tags":[%q,%q,%q],"metrics":{"views":%d,"clicks":%d,"ratio":%.5f},`,
		r.IntN(200), pick(perfStatus),
		first, last, first, last, r.IntN(1000), 18+r.IntN(60), r.IntN(2) == 0,
		1+r.IntN(400), pick(perfLast), pick(perfCities), r.IntN(100000), r.Float64()*180-90, r.Float64()*360-180,
		pick(perfDevices), r.IntN(256), r.IntN(256), r.IntN(256), r.IntN(256), r.IntN(5000), r.Float64()*10000,
		1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000),
		token, r.Uint64(), r.Uint64(),
		pick(churnWords), pick(churnWords), pick(churnWords), r.IntN(100000), r.IntN(10000), r.Float64())
	pad := size - len(b) - len(`"notes":""}`)
	b = append(b, `"notes":"`...)
	for n := 0; n < pad; {
		var w string
		switch r.IntN(4) {
		case 0:
			w = strconv.Itoa(r.IntN(1_000_000))
		default:
			w = pick(churnWords)
		}
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

type churnDocs struct{ tails [][]byte }

var (
	churnDocsOnce sync.Once
	churnDocPool  *churnDocs
)

const churnHead = len(`{"id":"`) + churnIDLen + len(`","seq":`) + 12 + len(`,"at":`) + 13 + len(`,`)

func churnPool() *churnDocs {
	churnDocsOnce.Do(func() {
		p := &churnDocs{tails: make([][]byte, 16384)}
		for i := range p.tails {
			p.tails[i] = churnTail(uint64(i), churnDocSize-churnHead)
		}
		churnDocPool = p
	})
	return churnDocPool
}

func churnID(dst []byte, prefix string, n int) []byte { return perfID(dst, prefix, uint64(n)) }

// doc returns a new 1 KiB document for item n, written at unix ms at.
func (p *churnDocs) doc(prefix string, n int, at int64) []byte {
	d := make([]byte, 0, churnDocSize)
	d = append(d, `{"id":"`...)
	d = churnID(d, prefix, n)
	d = fmt.Appendf(d, `","seq":%12d,"at":%13d,`, n, at)
	return append(d, p.tails[n%len(p.tails)]...)
}

// procIO is the process's I/O counters (/proc/self/io).
type procIO struct{ wchar, writeBytes, cancelled int64 }

func readProcIO() procIO {
	var io procIO
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return io
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "wchar":
			io.wchar = n
		case "write_bytes":
			io.writeBytes = n
		case "cancelled_write_bytes":
			io.cancelled = n
		}
	}
	return io
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func load1() float64 {
	f, _ := strconv.ParseFloat(strings.Fields(loadAvg() + " 0")[0], 64)
	return f
}

// churnSample is one row of the table.
type churnSample struct {
	t            float64 // seconds since the load started
	writes       int64   // writes acknowledged in the last second
	wp99         time.Duration
	m            Metrics
	metricsTook  time.Duration
	dir, jnl     int64 // bytes under the database directory, and under journal/
	jfiles, segs int
	segAge       float64 // age of the oldest segment file, s
	load1        float64
}

func (s churnSample) dirSA() float64 {
	if s.m.LiveDiskBytes == 0 {
		return 0
	}
	return float64(s.dir) / float64(s.m.LiveDiskBytes)
}

type churnLat struct {
	at       int32 // ms since start, at completion
	svc, e2e time.Duration
}

type churnResult struct {
	mode             string
	samples          []churnSample
	writes           []churnLat
	reads            []time.Duration
	readMiss, errs   int64
	userBytes        int64
	io0, ioLoad, io1 procIO
	final            Metrics
	loadAvg          string
	cpu, wall        time.Duration
	reclaimedAt      float64 // seconds after the load until no segment was left, or -1
	lastExpiry       float64 // seconds since start when the last item expired
	finalDir         int64
	behind           int64 // writes that started more than 100 ms after their schedule
}

func TestChurnBench(t *testing.T) {
	cfg := churnEnv(t)
	p := churnPool()
	{
		d := p.doc("c0-", 123456, time.Now().UnixMilli())
		pd, err := parseDocument(d)
		if len(d) != churnDocSize || err != nil || pd.TTL != 0 {
			t.Fatalf("bad document (%d bytes, ttl %d): %v\n%s", len(d), pd.TTL, err, d)
		}
	}
	t.Logf("churn: %v of %d writes/s (1 KiB docs, %d writers, single Upserts, fsync on), %d reads/s, DefaultTTL %d s; options: %s; GOMAXPROCS %d",
		cfg.dur, cfg.rate, cfg.writers, cfg.reads, churnTTL, cfg.settings, runtime.GOMAXPROCS(0))
	prof := os.Getenv("EBB_CHURN_PROF")
	if prof != "" {
		runtime.SetMutexProfileFraction(1)
		runtime.SetBlockProfileRate(int(10 * time.Microsecond))
		defer runtime.SetMutexProfileFraction(0)
		defer runtime.SetBlockProfileRate(0)
		if f, err := os.Create(filepath.Join(prof, "trace.out")); err == nil {
			trace.Start(f)
			defer f.Close()
		}
	}
	var results []*churnResult
	for i, mode := range cfg.modes {
		r := runChurn(t, cfg, mode, fmt.Sprintf("c%d-", i))
		if prof != "" && i == 0 {
			trace.Stop()
		}
		if prof != "" {
			// Cumulative since the test started: profile one mode per run.
			for _, name := range []string{"mutex", "block"} {
				path := filepath.Join(prof, fmt.Sprintf("%s-%d-%s.pprof", name, i, mode))
				if f, err := os.Create(path); err == nil {
					pprof.Lookup(name).WriteTo(f, 0)
					f.Close()
					t.Logf("wrote %s", path)
				}
			}
		}
		churnReport(t, cfg, r)
		results = append(results, r)
	}
	churnSummary(t, cfg, results)
}

func runChurn(t *testing.T, cfg churnConfig, mode, prefix string) *churnResult {
	ctx := context.Background()
	dir := t.TempDir()
	o := cfg.opts
	on := mode == "on"
	if !on {
		o.CompactionInterval = -1
	}
	db, err := Open(dir, &o)
	if err != nil {
		t.Fatal(err)
	}
	c, err := db.CreateContainer(ctx, ContainerProperties{ID: "churn", DefaultTTL: TTL(churnTTL)})
	if err != nil {
		t.Fatal(err)
	}
	p := churnPool()
	res := &churnResult{mode: mode, reclaimedAt: -1}
	total := int(cfg.dur.Seconds()*float64(cfg.rate)) + cfg.rate
	acked := make([]atomic.Int64, total) // ms since start + 1 when acknowledged
	var hiAcked atomic.Int64             // highest n acknowledged + 1
	var userBytes, errs, readMiss, behind atomic.Int64
	var secWrites atomic.Int64

	type token struct {
		n     int
		sched time.Time
	}
	toks := make(chan token, 4*cfg.rate)
	res.io0 = readProcIO()
	cpu0 := cpuTime()
	start := time.Now()
	stop := start.Add(cfg.dur)

	// Pacer: issues write n at start + n/rate.
	go func() {
		defer close(toks)
		for n := 0; n < total; {
			now := time.Now()
			if !now.Before(stop) {
				return
			}
			due := min(total, int(now.Sub(start).Seconds()*float64(cfg.rate))+1)
			for ; n < due; n++ {
				toks <- token{n, start.Add(time.Duration(n) * time.Second / time.Duration(cfg.rate))}
			}
			time.Sleep(time.Millisecond)
		}
	}()

	var wg sync.WaitGroup
	lats := make([][]churnLat, cfg.writers)
	for w := range cfg.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]churnLat, 0, total/cfg.writers+1024)
			for tok := range toks {
				doc := p.doc(prefix, tok.n, time.Now().UnixMilli())
				t0 := time.Now()
				if t0.Sub(tok.sched) > 100*time.Millisecond {
					behind.Add(1)
				}
				_, err := c.Upsert(ctx, doc)
				t1 := time.Now()
				if err != nil {
					if errs.Add(1) <= 5 {
						t.Errorf("%s: upsert %d: %v", mode, tok.n, err)
					}
					continue
				}
				ms := t1.Sub(start).Milliseconds()
				acked[tok.n].Store(ms + 1)
				for {
					h := hiAcked.Load()
					if int64(tok.n+1) <= h || hiAcked.CompareAndSwap(h, int64(tok.n+1)) {
						break
					}
				}
				userBytes.Add(int64(len(doc)))
				secWrites.Add(1)
				mine = append(mine, churnLat{at: int32(ms), svc: t1.Sub(t0), e2e: t1.Sub(tok.sched)})
			}
			lats[w] = mine
		}()
	}

	// Reader: point reads of ids acknowledged in the last churnReadAge, at a
	// fixed rate.
	var rwg sync.WaitGroup
	var reads []time.Duration
	if cfg.reads > 0 {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			rng := rand.New(rand.NewPCG(7, 11))
			interval := time.Second / time.Duration(cfg.reads)
			next := start
			id := make([]byte, 0, churnIDLen)
			window := int(churnReadAge.Seconds() * float64(cfg.rate))
			for {
				next = next.Add(interval)
				now := time.Now()
				if !now.Before(stop) {
					break
				}
				if d := next.Sub(now); d > 0 {
					time.Sleep(d)
				} else if d < -100*time.Millisecond {
					next = now
				}
				hi := int(hiAcked.Load())
				if hi == 0 {
					continue
				}
				nowMs := time.Since(start).Milliseconds()
				n := -1
				for range 8 {
					k := max(0, hi-window) + rng.IntN(min(hi, window))
					if a := acked[k].Load(); a > 0 && nowMs-(a-1) < churnReadAge.Milliseconds() {
						n = k
						break
					}
				}
				if n < 0 {
					continue
				}
				id = churnID(id[:0], prefix, n)
				t0 := time.Now()
				_, err := c.Read(ctx, string(id))
				d := time.Since(t0)
				if err != nil {
					if isNotFound(err) {
						readMiss.Add(1)
					} else if errs.Add(1) <= 5 {
						t.Errorf("%s: read %s: %v", mode, id, err)
					}
					continue
				}
				reads = append(reads, d)
			}
		}()
	}

	// Sampler: once a second, during the load and the drain after it.
	sample := func(now time.Time) churnSample {
		t0 := time.Now()
		m := c.Metrics()
		took := time.Since(t0)
		s := churnSample{t: now.Sub(start).Seconds(), m: m, metricsTook: took, load1: load1()}
		s.dir, _ = dirBytes(dir)
		s.jnl, s.jfiles = dirBytes(filepath.Join(dir, dbfile.JournalDir))
		ents, _ := os.ReadDir(filepath.Join(dir, dbfile.SegmentDir))
		for _, e := range ents {
			if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
				s.segs++
				s.segAge = max(s.segAge, now.Sub(fi.ModTime()).Seconds())
			}
		}
		return s
	}
	// The per-second write p99 is filled in at the end, from the writers'
	// timings.
	loadDone := make(chan struct{})
	go func() { wg.Wait(); rwg.Wait(); close(loadDone) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	loading := true
	var drainUntil time.Time
	for loading || time.Now().Before(drainUntil) {
		select {
		case <-loadDone:
			loading = false
			res.ioLoad = readProcIO()
			res.wall = time.Since(start)
			if on && cfg.drain > 0 {
				drainUntil = time.Now().Add(cfg.drain)
			}
			loadDone = nil
			continue
		case now := <-tick.C:
			s := sample(now)
			s.writes = secWrites.Swap(0)
			res.samples = append(res.samples, s)
			if !loading && res.reclaimedAt < 0 && s.m.Segments == 0 && s.m.Items == 0 {
				res.reclaimedAt = s.t
			}
		}
	}
	res.final = c.Metrics()
	res.cpu = cpuTime() - cpu0
	res.loadAvg = loadAvg()
	if err := db.Close(); err != nil {
		t.Errorf("%s: close: %v", mode, err)
	}
	res.io1 = readProcIO()
	res.finalDir, _ = dirBytes(dir)
	for _, l := range lats {
		res.writes = append(res.writes, l...)
	}
	res.reads = reads
	res.readMiss, res.errs = readMiss.Load(), errs.Load()
	res.userBytes = userBytes.Load()
	res.behind = behind.Load()
	// Per-second write p99 into the samples.
	bySec := map[int][]time.Duration{}
	for _, l := range res.writes {
		bySec[int(l.at/1000)] = append(bySec[int(l.at/1000)], l.svc)
	}
	for i := range res.samples {
		sec := int(res.samples[i].t+0.5) - 1
		if ls := bySec[sec]; len(ls) > 0 {
			res.samples[i].wp99 = churnPct(ls, 0.99)
		}
	}
	// The last item was written by stop and expires at most TTL s after it,
	// at the next whole second.
	res.lastExpiry = float64(time.Unix(stop.Unix()+churnTTL+1, 0).Sub(start)) / float64(time.Second)
	return res
}

func churnPct(ls []time.Duration, q float64) time.Duration {
	if len(ls) == 0 {
		return 0
	}
	s := slices.Clone(ls)
	slices.Sort(s)
	i := int(q * float64(len(s)))
	return s[min(i, len(s)-1)]
}

func churnMs(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/1e6) }

func mib(n int64) string { return fmt.Sprintf("%.1f", float64(n)/(1<<20)) }

type churnLatStats struct{ p50, p99, p999, max time.Duration }

func churnLats(ls []time.Duration) churnLatStats {
	if len(ls) == 0 {
		return churnLatStats{}
	}
	s := slices.Clone(ls)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(int(q*float64(len(s))), len(s)-1)] }
	return churnLatStats{at(0.50), at(0.99), at(0.999), s[len(s)-1]}
}

func (l churnLatStats) String() string {
	return fmt.Sprintf("p50 %s p99 %s p99.9 %s max %s ms", churnMs(l.p50), churnMs(l.p99), churnMs(l.p999), churnMs(l.max))
}

type churnSteady struct {
	saMean, saMax, dirSAMean, dirSAMax float64
	// strict: directory bytes over the live bytes at the segments'
	// compression ratio ("live compressed bytes"); Metrics
	// counts live records in the journal at their raw size instead.
	strictMean, strictMax float64
	lagMax                time.Duration
	n                     int
}

// ratio estimates the segments' compression ratio (raw/file bytes) from the
// sample whose journal holds the smallest share of the live bytes (just
// after a seal): there the journal's records are all live, at raw size in
// both LiveBytes and LiveDiskBytes, and the rest is in segment files.
func (r *churnResult) ratio() float64 {
	best, share := 0.0, 0.25
	for _, s := range r.samples {
		l, d, j := float64(s.m.LiveBytes), float64(s.m.LiveDiskBytes), float64(s.m.JournalBytes)
		if l > 1<<20 && d > j && j/l < share {
			best, share = (l-j)/(d-j), j/l
		}
	}
	return best
}

// steady summarizes the samples of the second half of the load.
func (r *churnResult) steady(cfg churnConfig) churnSteady {
	var st churnSteady
	half := cfg.dur.Seconds() / 2
	rho := r.ratio()
	for _, s := range r.samples {
		if s.t < half || s.t > cfg.dur.Seconds()+0.5 || s.m.LiveDiskBytes == 0 {
			continue
		}
		st.n++
		st.saMean += s.m.SpaceAmplification
		st.saMax = max(st.saMax, s.m.SpaceAmplification)
		st.dirSAMean += s.dirSA()
		st.dirSAMax = max(st.dirSAMax, s.dirSA())
		strict := 0.0
		if rho > 0 {
			strict = float64(s.dir) * rho / float64(s.m.LiveBytes)
		}
		st.strictMean += strict
		st.strictMax = max(st.strictMax, strict)
		st.lagMax = max(st.lagMax, s.m.ReclaimLag)
	}
	if st.n > 0 {
		st.saMean /= float64(st.n)
		st.dirSAMean /= float64(st.n)
		st.strictMean /= float64(st.n)
	}
	return st
}

// seals counts the samples in which SealedBytes grew, and the seconds
// between the first and the last of them.
func (r *churnResult) seals() (n int, first, last float64) {
	var prev int64
	for _, s := range r.samples {
		if s.m.SealedBytes > prev {
			if n == 0 {
				first = s.t
			}
			n++
			last = s.t
		}
		prev = s.m.SealedBytes
	}
	return n, first, last
}

func (r *churnResult) compWA() float64 {
	if f := r.final; f.SealedBytes > 0 {
		return float64(f.SealedBytes+f.CompactedWrittenBytes) / float64(f.SealedBytes)
	}
	return 0
}

func (r *churnResult) diskWA() (storage, syscalls float64) {
	ub := float64(r.userBytes)
	wb := float64(r.io1.writeBytes - r.io0.writeBytes - (r.io1.cancelled - r.io0.cancelled))
	wc := float64(r.io1.wchar - r.io0.wchar)
	return wb / ub, wc / ub
}

func (r *churnResult) maxLag() time.Duration {
	var lag time.Duration
	for _, s := range r.samples {
		lag = max(lag, s.m.ReclaimLag)
	}
	return lag
}

func (r *churnResult) svc() []time.Duration {
	out := make([]time.Duration, len(r.writes))
	for i, l := range r.writes {
		out[i] = l.svc
	}
	return out
}

func (r *churnResult) e2e() []time.Duration {
	out := make([]time.Duration, len(r.writes))
	for i, l := range r.writes {
		out[i] = l.e2e
	}
	return out
}

func churnReport(t *testing.T, cfg churnConfig, r *churnResult) {
	t.Logf("=== compactor %s: per-second samples (MB = MiB; SA = DiskBytes/LiveDiskBytes from Metrics; dirSA = directory walk/LiveDiskBytes)", r.mode)
	t.Logf("%5s %5s %6s %6s %6s %6s %5s %6s %6s %3s %5s %4s %4s %5s %5s %5s %6s %6s %5s %4s",
		"t", "wr/s", "wp99ms", "items", "liveMB", "diskMB", "SA", "dirMB", "jnlMB", "jf", "dirSA", "lag", "segs", "age", "drop", "rewr", "sealMB", "cmpWMB", "mtMs", "ld1")
	for i, s := range r.samples {
		if cfg.every > 1 && i%cfg.every != 0 && i != len(r.samples)-1 {
			continue
		}
		t.Logf("%5.0f %5d %6s %6d %6s %6s %5.2f %6s %6s %3d %5.2f %4.0f %4d %5.1f %5d %5d %6s %6s %5.1f %4.2f",
			s.t, s.writes, churnMs(s.wp99), s.m.Items, mib(s.m.LiveDiskBytes), mib(s.m.DiskBytes), s.m.SpaceAmplification,
			mib(s.dir), mib(s.jnl), s.jfiles, s.dirSA(), s.m.ReclaimLag.Seconds(), s.m.Segments, s.segAge,
			s.m.FilesDropped, s.m.FilesRewritten, mib(s.m.SealedBytes), mib(s.m.CompactedWrittenBytes), float64(s.metricsTook)/1e6, s.load1)
	}
	st := r.steady(cfg)
	f := r.final
	ub := float64(r.userBytes)
	storage, syscalls := r.diskWA()
	var mt []time.Duration
	for _, s := range r.samples {
		mt = append(mt, s.metricsTook)
	}
	nseal, first, last := r.seals()
	cadence := 0.0
	if nseal > 1 {
		cadence = (last - first) / float64(nseal-1)
	}
	t.Logf("--- compactor %s summary", r.mode)
	t.Logf("load: %d writes acked in %.1fs (%.0f/s, %d started >100ms late), %s MiB user bytes; %d reads (%d not found), %d errors; CPU %.1fs = %.2f cores; loadavg at end %s",
		len(r.writes), r.wall.Seconds(), float64(len(r.writes))/r.wall.Seconds(), r.behind, mib(r.userBytes),
		len(r.reads), r.readMiss, r.errs, r.cpu.Seconds(), r.cpu.Seconds()/r.wall.Seconds(), r.loadAvg)
	t.Logf("space (steady state = last half, %d samples): SA(Metrics) mean %.3f max %.3f; dir walk/LiveDiskBytes mean %.3f max %.3f; dir walk/(LiveBytes/%.2f) mean %.3f max %.3f",
		st.n, st.saMean, st.saMax, st.dirSAMean, st.dirSAMax, r.ratio(), st.strictMean, st.strictMax)
	t.Logf("seals: %d (every %.1fs); reclaim lag: max %v (steady state max %v); last item expired at t=%.0fs; no segment left at t=%.0fs; dir after close %s MiB",
		nseal, cadence, r.maxLag(), st.lagMax, r.lastExpiry, r.reclaimedAt, mib(r.finalDir))
	t.Logf("write amp: compaction (Sealed+CompactedWritten)/Sealed = (%s+%s)/%s MiB = %.3f; sealed/user %.3f; compacted read %s MiB; dropped %d files (%s MiB), rewritten %d",
		mib(f.SealedBytes), mib(f.CompactedWrittenBytes), mib(f.SealedBytes), r.compWA(), float64(f.SealedBytes)/ub,
		mib(f.CompactedReadBytes), f.FilesDropped, mib(f.BytesDropped), f.FilesRewritten)
	t.Logf("write amp: disk bytes written/user bytes (journal included, to close) = storage %.3f (%s MiB), write syscalls %.3f (%s MiB)",
		storage, mib(int64(storage*ub)), syscalls, mib(int64(syscalls*ub)))
	t.Logf("latency write (call): %v", churnLats(r.svc()))
	t.Logf("latency write (from schedule): %v", churnLats(r.e2e()))
	t.Logf("latency read: %v", churnLats(r.reads))
	t.Logf("Metrics() call (holds the container lock): %v", churnLats(mt))
}

func churnSummary(t *testing.T, cfg churnConfig, rs []*churnResult) {
	t.Logf("=== summary (%v, %d writes/s, %d reads/s, options: %s)", cfg.dur, cfg.rate, cfg.reads, cfg.settings)
	t.Logf("%-4s %6s %6s %6s %6s %6s %6s %5s %6s %6s %6s %6s %7s %6s %6s %5s", "mode", "SAmean", "SAmax", "dirSAm", "dirSAx",
		"strSAm", "strSAx", "lag", "compWA", "diskWA", "w.p50", "w.p99", "w.max", "r.p50", "r.p99", "load1")
	pool := map[string]*[3][]time.Duration{"on": {}, "off": {}}
	for _, r := range rs {
		st := r.steady(cfg)
		storage, _ := r.diskWA()
		w, rd := churnLats(r.svc()), churnLats(r.reads)
		t.Logf("%-4s %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f %4.0fs %6.3f %6.3f %6s %6s %7s %6s %6s %5s", r.mode, st.saMean, st.saMax, st.dirSAMean, st.dirSAMax,
			st.strictMean, st.strictMax, r.maxLag().Seconds(), r.compWA(), storage, churnMs(w.p50), churnMs(w.p99), churnMs(w.max),
			churnMs(rd.p50), churnMs(rd.p99), strings.Fields(r.loadAvg)[0])
		if p := pool[r.mode]; p != nil {
			p[0] = append(p[0], r.svc()...)
			p[1] = append(p[1], r.e2e()...)
			p[2] = append(p[2], r.reads...)
		}
	}
	on, off := pool["on"], pool["off"]
	if len(on[0]) > 0 && len(off[0]) > 0 {
		ratio := func(i int) float64 {
			return float64(churnLats(on[i]).p99) / float64(churnLats(off[i]).p99)
		}
		t.Logf("p99 ratio on/off (all runs of each mode pooled): write %.2f (from schedule %.2f), read %.2f (target <= 1.2)",
			ratio(0), ratio(1), ratio(2))
	}
}
