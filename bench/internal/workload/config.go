// Package workload runs the benchmark's workloads (fill, read, churn, storm,
// scale, query) against every store, and renders their results: a markdown table
// per workload with each store's ratio to ebb, JSON, PNG charts, and the
// RESULTS.md report.
package workload

import (
	"io"
	"time"

	"github.com/ebbdb/ebb/bench/internal/store"
)

// Config is one run of the benchmark.
type Config struct {
	// Stores to compare, ebb first by convention.
	Stores []string
	// Dir is the scratch directory under which each store gets its own
	// folder; it is emptied as the run goes.
	Dir string
	// Out is where the JSON and PNG results go; "" writes none.
	Out string
	// Store configures every store alike (durability, sweep cadence).
	Store store.Options
	// DocSize is the size of every document, in bytes.
	DocSize int
	// Progress receives progress bars; nil shows none.
	Progress io.Writer
	// Log receives tables and notes as the run goes; nil discards them.
	Log io.Writer
	// Suite names the sizes: "quick", "full" or "custom".
	Suite string

	Fill  FillConfig
	Read  ReadConfig
	Churn ChurnConfig
	Storm StormConfig
	Scale ScaleConfig
	Query QueryConfig
}

// FillConfig: N items written by batches and by single writes, by 1 and by
// many writers.
type FillConfig struct {
	N       int           `json:"n"`
	Batch   int           `json:"batch"`
	Writers []int         `json:"writers"`
	TTL     int32         `json:"ttl_s"`
	MaxTime time.Duration `json:"max_time_ns"` // per mode; 0: no limit
}

// ReadConfig: random point reads of N items, hits then misses.
type ReadConfig struct {
	N       int           `json:"n"`
	Readers []int         `json:"readers"`
	Phase   time.Duration `json:"phase_ns"` // per (readers, hit|miss)
}

// ChurnConfig: Duration of writes of never-repeating keys with TTL, then
// Drain without writes, disk sampled every Sample.
type ChurnConfig struct {
	Duration time.Duration `json:"duration_ns"`
	TTL      int32         `json:"ttl_s"`
	Writers  int           `json:"writers"`
	Batch    int           `json:"batch"`
	Rate     int           `json:"rate"` // items/s for all writers; 0: as fast as they go
	Drain    time.Duration `json:"drain_ns"`
	Sample   time.Duration `json:"sample_ns"`
}

// StormConfig: N items expiring in the same second under a steady load of
// Rate operations a second on Foreground other items.
type StormConfig struct {
	N          int           `json:"n"`
	Foreground int           `json:"foreground"`
	Rate       int           `json:"rate"`
	Workers    int           `json:"workers"`
	ReadShare  float64       `json:"read_share"`
	Baseline   time.Duration `json:"baseline_ns"`
	After      time.Duration `json:"after_ns"`
	Window     time.Duration `json:"window_ns"`
	Batch      int           `json:"batch"`
	// CompactEvery, when set, makes the load call the store's explicit
	// compaction (stores that have one: ebb's Container.Compact) this often
	// from the start of the load to its end, to show whether a synchronous
	// compaction stalls foreground work.
	CompactEvery time.Duration `json:"compact_every_ns,omitempty"`
}

// ScaleConfig: one store filled to each of Sizes in turn; after each, it is
// reopened and its open time and heap measured. A peer whose projected fill
// time for the next size exceeds Budget (or whose projected heap exceeds
// MaxHeap) stops there; ebb always runs.
type ScaleConfig struct {
	Sizes   []int         `json:"sizes"`
	Batch   int           `json:"batch"`
	Writers int           `json:"writers"`
	TTL     int32         `json:"ttl_s"`
	Budget  time.Duration `json:"budget_ns"`
	MaxHeap int64         `json:"max_heap"`
}

// QueryConfig: N documents of DocSize bytes with indexes on user, n and
// cat, written in batches of Batch, about half of them with a ttl that
// makes them expire Margin after the (estimated) end of the fill; once they
// have (and Settle more, and the store's deletion of them is done),
// each query runs at least MinRuns times and for at least MinTime (at most
// MaxRuns). Then StormN more documents expire in the same second while the
// queries run from about StormBefore before it to StormAfter after it. Only
// the stores with secondary indexes (ebb, BuntDB) run it.
type QueryConfig struct {
	N       int `json:"n"`
	DocSize int `json:"doc_size"`
	Batch   int `json:"batch"`
	// PerUser is how many documents share a user (live or not).
	PerUser int `json:"per_user"`
	// Width is the width in n of the range query: that many documents,
	// about half live (at most N/20).
	Width int `json:"range_width"`
	// TopK is the k of the ORDER BY query.
	TopK int `json:"top_k"`
	// LongTTL is the ttl of half the documents that do not expire during
	// the run; the other half has none.
	LongTTL int32         `json:"long_ttl_s"`
	MinRuns int           `json:"min_runs"`
	MaxRuns int           `json:"max_runs"`
	MinTime time.Duration `json:"min_time_ns"`
	Margin  time.Duration `json:"margin_ns"`
	Settle  time.Duration `json:"settle_ns"`
	// MaxSettle bounds the wait, after Settle, for the store's deletion of
	// the expired documents to finish (store.Housekeeper).
	MaxSettle   time.Duration `json:"max_settle_ns"`
	StormN      int           `json:"storm_n"`
	StormBefore time.Duration `json:"storm_before_ns"`
	StormAfter  time.Duration `json:"storm_after_ns"`
}

// width is the range query's width in n.
func (c QueryConfig) width() int { return max(1, min(c.Width, c.N/20)) }

// queryConfig is the query workload of n documents, StormN n/10.
func queryConfig(n int, minTime time.Duration) QueryConfig {
	return QueryConfig{N: n, DocSize: 750, Batch: 100, PerUser: 200, Width: 1000, TopK: 10, LongTTL: 3600,
		MinRuns: 30, MaxRuns: 1000, MinTime: minTime, Margin: 2 * time.Second, Settle: 2 * time.Second, MaxSettle: time.Minute,
		StormN: max(n/10, 100), StormBefore: 2 * time.Second, StormAfter: 3 * time.Second}
}

// Quick is the default suite: every workload and store in a few minutes on
// 2 cores.
func Quick() Config {
	return Config{
		Stores:  store.Names(),
		DocSize: 1024,
		Suite:   "quick",
		Fill:    FillConfig{N: 20000, Batch: 100, Writers: []int{1, 64}, TTL: 3600, MaxTime: time.Second},
		Read:    ReadConfig{N: 20000, Readers: []int{1, 8}, Phase: time.Second},
		Churn: ChurnConfig{Duration: 10 * time.Second, TTL: 3, Writers: 4, Batch: 100,
			Drain: 7 * time.Second, Sample: time.Second},
		Storm: StormConfig{N: 30000, Foreground: 3000, Rate: 1000, Workers: 8, ReadShare: 0.9,
			Baseline: 3 * time.Second, After: 5 * time.Second, Window: 250 * time.Millisecond, Batch: 100},
		Scale: ScaleConfig{Sizes: []int{10000, 100000}, Batch: 1000, Writers: 2, TTL: 3600,
			Budget: 20 * time.Second, MaxHeap: 8 << 30},
		Query: queryConfig(20000, 500*time.Millisecond),
	}
}

// Medium is the suite at which the performance targets are judged: 200,000
// items of 1 KiB (beyond the caches of a quick run), 60 s of churn with a
// 10 s TTL, 200,000 items expiring in the same second under 2,000
// foreground operations a second, half reads and half single upserts, and
// the queries over 200,000 documents (20,000 more in their storm).
func Medium() Config {
	return Config{
		Stores:  store.Names(),
		DocSize: 1024,
		Suite:   "medium",
		Fill:    FillConfig{N: 200000, Batch: 100, Writers: []int{1, 64}, TTL: 3600, MaxTime: 10 * time.Second},
		Read:    ReadConfig{N: 200000, Readers: []int{1, 8}, Phase: 2 * time.Second},
		Churn: ChurnConfig{Duration: 60 * time.Second, TTL: 10, Writers: 4, Batch: 100,
			Drain: 20 * time.Second, Sample: time.Second},
		Storm: StormConfig{N: 200000, Foreground: 20000, Rate: 2000, Workers: 16, ReadShare: 0.5,
			Baseline: 5 * time.Second, After: 10 * time.Second, Window: 250 * time.Millisecond, Batch: 100},
		Scale: ScaleConfig{Sizes: []int{100000, 1000000}, Batch: 1000, Writers: 2, TTL: 3600,
			Budget: 5 * time.Minute, MaxHeap: 8 << 30},
		Query: queryConfig(200000, time.Second),
	}
}

// Full is the suite of the sizes in the issue: 1e6 items, 5 minutes of
// churn, 1e7 at scale.
func Full() Config {
	return Config{
		Stores:  store.Names(),
		DocSize: 1024,
		Suite:   "full",
		Fill:    FillConfig{N: 1000000, Batch: 100, Writers: []int{1, 64}, TTL: 3600, MaxTime: 30 * time.Second},
		Read:    ReadConfig{N: 1000000, Readers: []int{1, 8}, Phase: 10 * time.Second},
		Churn: ChurnConfig{Duration: 300 * time.Second, TTL: 60, Writers: 4, Batch: 100,
			Drain: 90 * time.Second, Sample: time.Second},
		Storm: StormConfig{N: 1000000, Foreground: 100000, Rate: 5000, Workers: 32, ReadShare: 0.9,
			Baseline: 10 * time.Second, After: 60 * time.Second, Window: 250 * time.Millisecond, Batch: 100},
		Scale: ScaleConfig{Sizes: []int{100000, 1000000, 10000000}, Batch: 1000, Writers: 2, TTL: 3600,
			Budget: 15 * time.Minute, MaxHeap: 12 << 30},
		Query: queryConfig(1000000, 2*time.Second),
	}
}
