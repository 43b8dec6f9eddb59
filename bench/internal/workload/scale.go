package workload

import (
	"context"
	"fmt"
	"time"

	"github.com/ebbdb/ebb/bench/internal/gen"
	"github.com/ebbdb/ebb/bench/internal/measure"
	"github.com/ebbdb/ebb/bench/internal/store"
)

// ScaleResult is the outcome of the scale workload.
type ScaleResult struct {
	Config ScaleConfig `json:"config"`
	Rows   []ScaleRow  `json:"rows"`
}

// ScaleRow is one store at one size.
type ScaleRow struct {
	Store string `json:"store"`
	Items int    `json:"items"`
	// Skipped says why a size was not run ("" when it was).
	Skipped string `json:"skipped,omitempty"`
	// FillPerSec is the write rate of the items added to reach this size.
	FillPerSec float64 `json:"fill_per_sec"`
	// OpenMillis: open of the closed store, plus one read.
	OpenMillis float64 `json:"open_ms"`
	// HeapPerItem is the Go heap the open store holds per item (its index
	// and whatever else it keeps in memory), measured after open.
	HeapPerItem float64 `json:"heap_bytes_per_item"`
	DiskPerItem float64 `json:"disk_bytes_per_item"`
}

// Name implements Result.
func (*ScaleResult) Name() string { return "scale" }

// RunScale fills each store to each size in turn (adding to what it holds),
// and after each size closes it, reopens it and measures the open time and
// the heap it holds.
func RunScale(ctx context.Context, cfg *Config) (*ScaleResult, error) {
	g := gen.Shared(cfg.DocSize)
	res := &ScaleResult{Config: cfg.Scale}
	for _, name := range cfg.Stores {
		rows, err := scaleOne(ctx, cfg, g, name)
		if err != nil {
			return nil, fmt.Errorf("scale %s: %w", name, err)
		}
		res.Rows = append(res.Rows, rows...)
	}
	return res, nil
}

func scaleOne(ctx context.Context, cfg *Config, g *gen.Generator, name string) ([]ScaleRow, error) {
	c := cfg.Scale
	dir, err := cfg.storeDir("scale", name)
	if err != nil {
		return nil, err
	}
	defer cfg.cleanup(dir)
	var rows []ScaleRow
	have := 0
	var perItem, heapPerItem float64 // seconds and heap bytes per item, at the last size
	for _, size := range c.Sizes {
		row := ScaleRow{Store: name, Items: size}
		if name != "ebb" && perItem > 0 {
			if proj := time.Duration(perItem * float64(size-have) * float64(time.Second)); proj > c.Budget {
				row.Skipped = fmt.Sprintf("projected fill %v > budget %v", proj.Round(time.Second), c.Budget)
			} else if hp := int64(heapPerItem * float64(size)); c.MaxHeap > 0 && hp > c.MaxHeap {
				row.Skipped = fmt.Sprintf("projected heap %s > %s", bytesStr(float64(hp)), bytesStr(float64(c.MaxHeap)))
			}
		}
		if row.Skipped != "" {
			rows = append(rows, row)
			continue
		}
		s, err := store.Open(name, dir, cfg.Store)
		if err != nil {
			return nil, err
		}
		f := &filler{s: s, g: g, prefix: "doc-", ttl: constTTL(c.TTL), batch: c.Batch, writers: c.Writers,
			from: uint64(have), n: size - have, bar: cfg.bar(int64(size-have), fmt.Sprintf("scale %s %s", name, num(float64(size))))}
		n, _, took, err := f.run(ctx)
		f.bar.done()
		if err == nil && n != size-have {
			err = fmt.Errorf("wrote %d of %d items", n, size-have)
		}
		if cerr := s.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		row.FillPerSec = float64(n) / took.Seconds()
		perItem = took.Seconds() / float64(n)
		have = size
		heap0 := measure.Heap()
		s, open, err := timedOpen(ctx, name, dir, cfg.Store, gen.Key("doc-", uint64(size/2)))
		if err != nil {
			return nil, err
		}
		heapPerItem = float64(measure.Heap()-heap0) / float64(size)
		row.HeapPerItem = heapPerItem
		row.OpenMillis = float64(open) / float64(time.Millisecond)
		if err := s.Close(); err != nil {
			return nil, err
		}
		row.DiskPerItem = float64(measure.DiskBytes(dir)) / float64(size)
		rows = append(rows, row)
	}
	return rows, nil
}

// Markdown implements Result.
func (r *ScaleResult) Markdown() string {
	ref := map[int]ScaleRow{}
	for _, row := range r.Rows {
		if row.Store == "ebb" {
			ref[row.Items] = row
		}
	}
	t := table{head: []string{"store", "items", "fill items/s", "open ms", "× ebb", "open µs/item",
		"heap B/item", "× ebb", "disk B/item", "× ebb"}}
	for _, row := range r.Rows {
		if row.Skipped != "" {
			t.row(row.Store, num(float64(row.Items)), "skipped: "+row.Skipped, "", "", "", "", "", "", "")
			continue
		}
		e := ref[row.Items]
		t.row(row.Store, num(float64(row.Items)), num(row.FillPerSec), trim(row.OpenMillis), ratio(row.OpenMillis, e.OpenMillis),
			trim(1000*row.OpenMillis/float64(row.Items)),
			num(row.HeapPerItem), ratio(row.HeapPerItem, e.HeapPerItem),
			num(row.DiskPerItem), ratio(row.DiskPerItem, e.DiskPerItem))
	}
	return t.String()
}
