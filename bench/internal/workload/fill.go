package workload

import (
	"context"
	"fmt"
	"time"

	"github.com/ebbdb/ebb/bench/internal/gen"
	"github.com/ebbdb/ebb/bench/internal/measure"
	"github.com/ebbdb/ebb/bench/internal/store"
)

// FillResult is the outcome of the fill workload.
type FillResult struct {
	Config FillConfig `json:"config"`
	Rows   []FillRow  `json:"rows"`
}

// FillRow is one store in one mode.
type FillRow struct {
	Store   string `json:"store"`
	Mode    string `json:"mode"` // "batch" or "single"
	Writers int    `json:"writers"`
	// Items written: N, or fewer when MaxTime cut the mode short.
	Items        int             `json:"items"`
	Seconds      float64         `json:"seconds"`
	WritesPerSec float64         `json:"writes_per_sec"`
	Commit       measure.Summary `json:"commit_latency"` // one Put
	// DiskPerItem: bytes on disk per item, measured after Close.
	DiskPerItem float64      `json:"disk_bytes_per_item"`
	Disk        measure.Disk `json:"disk"`
	// HeapPerItem: growth of the Go heap per item while the store is open
	// and full.
	HeapPerItem float64 `json:"heap_bytes_per_item"`
	// OpenMillis: open after close, plus one read.
	OpenMillis  float64            `json:"open_ms"`
	StoreReport map[string]float64 `json:"store_report,omitempty"`
}

// Name implements Result.
func (*FillResult) Name() string { return "fill" }

type fillMode struct {
	batch   int
	writers int
}

func (m fillMode) name() string {
	if m.batch == 1 {
		return "single"
	}
	return "batch"
}

// RunFill writes N items of DocSize bytes with TTL to each store in each
// mode (batches and single writes, by each count of writers), each mode into
// a fresh directory, and measures the write rate, then the bytes on disk and
// Go heap per item and the time to reopen.
func RunFill(ctx context.Context, cfg *Config) (*FillResult, error) {
	c := cfg.Fill
	g := gen.Shared(cfg.DocSize)
	res := &FillResult{Config: c}
	var modes []fillMode
	for _, b := range []int{c.Batch, 1} {
		for _, w := range c.Writers {
			modes = append(modes, fillMode{batch: b, writers: w})
		}
	}
	for _, name := range cfg.Stores {
		for _, m := range modes {
			row, err := fillOne(ctx, cfg, g, name, m)
			if err != nil {
				return nil, fmt.Errorf("fill %s %s/%d: %w", name, m.name(), m.writers, err)
			}
			res.Rows = append(res.Rows, row)
		}
	}
	return res, nil
}

func fillOne(ctx context.Context, cfg *Config, g *gen.Generator, name string, m fillMode) (FillRow, error) {
	c := cfg.Fill
	row := FillRow{Store: name, Mode: m.name(), Writers: m.writers}
	dir, err := cfg.storeDir("fill", name, fmt.Sprintf("%s-%d", m.name(), m.writers))
	if err != nil {
		return row, err
	}
	defer cfg.cleanup(dir)
	heap0 := measure.Heap()
	s, err := store.Open(name, dir, cfg.Store)
	if err != nil {
		return row, err
	}
	f := &filler{s: s, g: g, prefix: "doc-", ttl: constTTL(c.TTL), batch: m.batch, writers: m.writers, n: c.N,
		bar: cfg.bar(int64(c.N), fmt.Sprintf("fill %s %s/%dw", name, m.name(), m.writers))}
	if c.MaxTime > 0 {
		f.until = time.Now().Add(c.MaxTime)
	}
	n, lat, elapsed, err := f.run(ctx)
	f.bar.done()
	if err != nil {
		s.Close()
		return row, err
	}
	row.Items, row.Seconds, row.Commit = n, elapsed.Seconds(), lat.Summary()
	row.WritesPerSec = float64(n) / elapsed.Seconds()
	row.HeapPerItem = float64(measure.Heap()-heap0) / float64(max(n, 1))
	if r, ok := s.(store.Reporter); ok {
		row.StoreReport = r.Report()
	}
	if err := s.Close(); err != nil {
		return row, fmt.Errorf("close: %w", err)
	}
	if row.Disk, err = measure.DiskUsage(dir); err != nil {
		return row, err
	}
	row.DiskPerItem = float64(row.Disk.Allocated) / float64(max(n, 1))
	s, open, err := timedOpen(ctx, name, dir, cfg.Store, gen.Key("doc-", uint64(n/2)))
	if err != nil {
		return row, err
	}
	row.OpenMillis = float64(open) / float64(time.Millisecond)
	return row, s.Close()
}

// Markdown implements Result.
func (r *FillResult) Markdown() string {
	ref := map[string]FillRow{}
	for _, row := range r.Rows {
		if row.Store == "ebb" {
			ref[row.Mode+fmt.Sprint(row.Writers)] = row
		}
	}
	t := table{head: []string{"store", "mode", "writers", "items", "writes/s", "× ebb", "commit p99 ms",
		"disk B/item", "× ebb", "heap B/item", "× ebb", "open ms", "× ebb"}}
	for _, row := range r.Rows {
		e := ref[row.Mode+fmt.Sprint(row.Writers)]
		t.row(row.Store, row.Mode, fmt.Sprint(row.Writers), fmt.Sprint(row.Items),
			num(row.WritesPerSec), ratio(row.WritesPerSec, e.WritesPerSec), ms(row.Commit.P99),
			num(row.DiskPerItem), ratio(row.DiskPerItem, e.DiskPerItem),
			num(row.HeapPerItem), ratio(row.HeapPerItem, e.HeapPerItem),
			trim(row.OpenMillis), ratio(row.OpenMillis, e.OpenMillis))
	}
	return t.String()
}
