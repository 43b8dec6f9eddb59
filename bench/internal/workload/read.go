package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ebbdb/ebb/bench/internal/gen"
	"github.com/ebbdb/ebb/bench/internal/measure"
	"github.com/ebbdb/ebb/bench/internal/store"
)

// ReadResult is the outcome of the read workload.
type ReadResult struct {
	Config ReadConfig `json:"config"`
	Rows   []ReadRow  `json:"rows"`
}

// ReadRow is one store, one number of readers, hits or misses.
type ReadRow struct {
	Store       string          `json:"store"`
	Readers     int             `json:"readers"`
	Kind        string          `json:"kind"` // "hit" or "miss"
	Reads       int64           `json:"reads"`
	ReadsPerSec float64         `json:"reads_per_sec"`
	Latency     measure.Summary `json:"latency"`
	// Wrong counts hits that missed and misses that hit: it must be 0.
	Wrong      int64   `json:"wrong"`
	OpenMillis float64 `json:"open_ms"`
}

// Name implements Result.
func (*ReadResult) Name() string { return "read" }

// RunRead fills each store with N items (batches, one writer), closes and
// reopens it, then reads random keys: existing ones (hits) and never
// written ones from the same key space (misses), with each number of
// readers.
func RunRead(ctx context.Context, cfg *Config) (*ReadResult, error) {
	c := cfg.Read
	g := gen.Shared(cfg.DocSize)
	res := &ReadResult{Config: c}
	keys := readKeys(c.N)
	for _, name := range cfg.Stores {
		rows, err := readOne(ctx, cfg, g, keys, name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		res.Rows = append(res.Rows, rows...)
	}
	return res, nil
}

func readOne(ctx context.Context, cfg *Config, g *gen.Generator, keys []string, name string) ([]ReadRow, error) {
	c := cfg.Read
	dir, err := cfg.storeDir("read", name)
	if err != nil {
		return nil, err
	}
	defer cfg.cleanup(dir)
	s, err := store.Open(name, dir, cfg.Store)
	if err != nil {
		return nil, err
	}
	f := &filler{s: s, g: g, prefix: "doc-", ttl: constTTL(3600), batch: 100, writers: 1, n: c.N,
		bar: cfg.bar(int64(c.N), "read "+name+" (fill)")}
	n, _, _, err := f.run(ctx)
	f.bar.done()
	if err == nil && n != c.N {
		err = fmt.Errorf("filled %d of %d items", n, c.N)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	if err := s.Close(); err != nil {
		return nil, err
	}
	s, open, err := timedOpen(ctx, name, dir, cfg.Store, gen.Key("doc-", 0))
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var rows []ReadRow
	for _, readers := range c.Readers {
		for _, kind := range []string{"hit", "miss"} {
			stop := cfg.timeBar(c.Phase, fmt.Sprintf("read %s %s/%dr", name, kind, readers))
			row, err := readPhase(ctx, s, c, keys, readers, kind == "hit")
			stop()
			if err != nil {
				return nil, err
			}
			row.Store, row.OpenMillis = name, float64(open)/float64(time.Millisecond)
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// readKeys returns the keys of the read phases: the n written ("doc-" 0 to
// n-1, the hits) and n never written after them (the misses), made once so
// that the timed loop allocates nothing of its own: what the collector does
// during a phase is then the store's doing.
func readKeys(n int) []string {
	keys := make([]string, 2*n)
	for i := range keys {
		keys[i] = gen.Key("doc-", uint64(i))
	}
	return keys
}

// readPhase reads keys at random from readers goroutines for c.Phase: the
// first c.N keys (hits) or the next c.N (misses).
func readPhase(ctx context.Context, s store.Store, c ReadConfig, keys []string, readers int, hit bool) (ReadRow, error) {
	row := ReadRow{Readers: readers, Kind: "miss"}
	if hit {
		row.Kind = "hit"
	}
	lat := measure.NewHistogram()
	var reads, wrong atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	deadline := time.Now().Add(c.Phase)
	start := time.Now()
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), uint64(time.Now().UnixNano())))
			local := measure.NewHistogram()
			defer lat.Merge(local)
			var val []byte   // each read's value, its storage reused (Store.GetInto)
			var n, bad int64 // counted here, added once: no shared counter in the loop
			defer func() { reads.Add(n); wrong.Add(bad) }()
			for i := 0; ctx.Err() == nil; i++ {
				if i%64 == 0 && time.Now().After(deadline) {
					return
				}
				k := rng.IntN(c.N)
				if !hit {
					k += c.N
				}
				t0 := time.Now()
				v, found, err := s.GetInto(ctx, keys[k], val)
				local.Record(time.Since(t0))
				if found {
					val = v
				}
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				if found != hit {
					bad++
				}
				n++
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	row.Reads, row.Wrong = reads.Load(), wrong.Load()
	row.ReadsPerSec = float64(row.Reads) / elapsed.Seconds()
	row.Latency = lat.Summary()
	return row, firstErr
}

// Markdown implements Result.
func (r *ReadResult) Markdown() string {
	ref := map[string]ReadRow{}
	for _, row := range r.Rows {
		if row.Store == "ebb" {
			ref[row.Kind+fmt.Sprint(row.Readers)] = row
		}
	}
	t := table{head: []string{"store", "readers", "kind", "reads/s", "× ebb", "p50 µs", "p99 µs", "p999 µs", "p99 × ebb", "wrong"}}
	for _, row := range r.Rows {
		e := ref[row.Kind+fmt.Sprint(row.Readers)]
		t.row(row.Store, fmt.Sprint(row.Readers), row.Kind, num(row.ReadsPerSec), ratio(row.ReadsPerSec, e.ReadsPerSec),
			num(row.Latency.P50), num(row.Latency.P99), num(row.Latency.P999), ratio(row.Latency.P99, e.Latency.P99),
			fmt.Sprint(row.Wrong))
	}
	return t.String()
}
