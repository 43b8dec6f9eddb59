package workload

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/ebbdb/ebb/bench/internal/gen"
	"github.com/ebbdb/ebb/bench/internal/measure"
	"github.com/ebbdb/ebb/bench/internal/store"
)

// ChurnResult is the outcome of the churn workload.
type ChurnResult struct {
	Config ChurnConfig `json:"config"`
	Stores []ChurnRun  `json:"stores"`
}

// ChurnRun is one store's churn.
type ChurnRun struct {
	Store string `json:"store"`
	// Items and bytes (key + document) written during Duration.
	Items        int64   `json:"items"`
	Bytes        int64   `json:"bytes"`
	WritesPerSec float64 `json:"writes_per_sec"`
	// Samples every Sample, through the writes and the drain after.
	Samples []ChurnSample `json:"samples"`
	// SteadyAmp is the mean of disk/live over the steady window: from
	// max(2×TTL, Duration/2) to the end of the writes. MaxAmp is the largest
	// disk/live seen during the writes after the first TTL.
	SteadyAmp float64 `json:"steady_space_amp"`
	MaxAmp    float64 `json:"max_space_amp"`
	PeakDisk  int64   `json:"peak_disk_bytes"`
	EndDisk   int64   `json:"end_disk_bytes"`
	// ReclaimLag is the time from the expiry of the last item written
	// until the disk holds at most 10% of its peak; -1 when that did not
	// happen before the end of the drain.
	ReclaimLag float64 `json:"reclaim_lag_s"`
	// Watched is how long the drain went on after the last expiry.
	Watched float64 `json:"watched_after_last_expiry_s"`
	// EbbReclaimLag and EbbSpaceAmp are ebb's own Metrics (ReclaimLag,
	// SpaceAmplification over its compressed live bytes), averaged over the
	// steady window.
	EbbReclaimLag float64 `json:"ebb_reclaim_lag_s,omitempty"`
	EbbSpaceAmp   float64 `json:"ebb_space_amp,omitempty"`
	// EbbCompactionWA is ebb's write amplification of compaction at the
	// end of the run: (bytes sealed + bytes compaction wrote) / bytes
	// sealed, 1 when every expired file was dropped whole. EbbFilesDropped
	// and EbbFilesRewritten count the files compaction dropped unread and
	// rewrote.
	EbbCompactionWA   float64 `json:"ebb_compaction_wa,omitempty"`
	EbbFilesDropped   int64   `json:"ebb_files_dropped,omitempty"`
	EbbFilesRewritten int64   `json:"ebb_files_rewritten,omitempty"`
}

// ChurnSample is the state of a store at one instant.
type ChurnSample struct {
	T       float64 `json:"t_s"`  // since the writes started
	Disk    int64   `json:"disk"` // allocated bytes of the directory
	Live    int64   `json:"live"` // key+document bytes of the unexpired items
	Written int64   `json:"written"`
	// Store's own figures (ebb's Metrics; the emulated stores' sweeps).
	Report map[string]float64 `json:"report,omitempty"`
}

// Name implements Result.
func (*ChurnResult) Name() string { return "churn" }

// liveTracker knows which written bytes are still alive: each Put's bytes
// are filed under the second they expire.
type liveTracker struct {
	mu      sync.Mutex
	byExp   map[int64]int64
	written atomic.Int64
	items   atomic.Int64
	lastExp atomic.Int64
}

func (l *liveTracker) add(items []store.Item, start time.Time) {
	var b int64
	for _, it := range items {
		b += int64(len(it.Key) + len(it.Value))
	}
	exp := start.Unix() + int64(items[0].TTL)
	l.mu.Lock()
	l.byExp[exp] += b
	l.mu.Unlock()
	l.written.Add(b)
	l.items.Add(int64(len(items)))
	for {
		old := l.lastExp.Load()
		if exp <= old || l.lastExp.CompareAndSwap(old, exp) {
			break
		}
	}
}

// live is the bytes unexpired at now: an item expires at the start of its
// expiry second.
func (l *liveTracker) live(now time.Time) int64 {
	sec := now.Unix()
	l.mu.Lock()
	defer l.mu.Unlock()
	var sum int64
	for exp, b := range l.byExp {
		if exp > sec {
			sum += b
		}
	}
	return sum
}

// RunChurn writes never-repeating keys with TTL to each store for Duration,
// as fast as Writers writers go (or at Rate), then stops writing for Drain,
// sampling the store's disk bytes and the live bytes every Sample.
func RunChurn(ctx context.Context, cfg *Config) (*ChurnResult, error) {
	g := gen.Shared(cfg.DocSize)
	res := &ChurnResult{Config: cfg.Churn}
	for _, name := range cfg.Stores {
		run, err := churnOne(ctx, cfg, g, name)
		if err != nil {
			return nil, fmt.Errorf("churn %s: %w", name, err)
		}
		res.Stores = append(res.Stores, run)
	}
	return res, nil
}

func churnOne(ctx context.Context, cfg *Config, g *gen.Generator, name string) (ChurnRun, error) {
	c := cfg.Churn
	run := ChurnRun{Store: name, ReclaimLag: -1}
	dir, err := cfg.storeDir("churn", name)
	if err != nil {
		return run, err
	}
	defer cfg.cleanup(dir)
	s, err := store.Open(name, dir, cfg.Store)
	if err != nil {
		return run, err
	}
	defer s.Close()

	lt := &liveTracker{byExp: map[int64]int64{}}
	start := time.Now()
	end := start.Add(c.Duration)
	f := &filler{s: s, g: g, prefix: "churn-", ttl: constTTL(c.TTL), batch: c.Batch, writers: c.Writers,
		n: 1 << 62, until: end, onPut: lt.add}
	if c.Rate > 0 {
		lim := rate.NewLimiter(rate.Limit(c.Rate), c.Batch)
		f.onPut = func(items []store.Item, t time.Time) {
			lt.add(items, t)
			_ = lim.WaitN(ctx, len(items))
		}
	}

	// The sampler runs through the writes and the drain.
	var samples []ChurnSample
	sample := func() {
		now := time.Now()
		cs := ChurnSample{T: now.Sub(start).Seconds(), Disk: measure.DiskBytes(dir), Live: lt.live(now), Written: lt.written.Load()}
		if r, ok := s.(store.Reporter); ok {
			cs.Report = r.Report()
		}
		samples = append(samples, cs)
	}
	total := c.Duration + c.Drain
	stopBar := cfg.timeBar(total, "churn "+name)
	sampleDone := make(chan struct{})
	quit := make(chan struct{})
	go func() {
		defer close(sampleDone)
		t := time.NewTicker(c.Sample)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	_, _, elapsed, werr := f.run(ctx)
	if werr == nil {
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(start.Add(total))):
		}
	}
	close(quit)
	<-sampleDone
	stopBar()
	if werr != nil {
		return run, werr
	}
	if err := ctx.Err(); err != nil {
		return run, err
	}
	run.Items, run.Bytes, run.Samples = lt.items.Load(), lt.written.Load(), samples
	run.WritesPerSec = float64(run.Items) / elapsed.Seconds()
	run.analyze(c, time.Unix(lt.lastExp.Load(), 0).Sub(start).Seconds())
	return run, nil
}

// analyze derives the summary figures from the samples; lastExp is when the
// last item written expired, in seconds since the start.
func (run *ChurnRun) analyze(c ChurnConfig, lastExp float64) {
	dur := c.Duration.Seconds()
	ttl := float64(c.TTL)
	steadyFrom := max(2*ttl, dur/2)
	var ampSum, lagSum, ebbAmpSum float64
	var nSteady int
	for _, s := range run.Samples {
		run.PeakDisk = max(run.PeakDisk, s.Disk)
		if s.T > dur || s.Live == 0 {
			continue
		}
		amp := float64(s.Disk) / float64(s.Live)
		if s.T >= ttl {
			run.MaxAmp = max(run.MaxAmp, amp)
		}
		if s.T >= steadyFrom {
			ampSum += amp
			nSteady++
			lagSum += s.Report["reclaim_lag_s"]
			ebbAmpSum += s.Report["space_amplification"]
		}
	}
	if nSteady > 0 {
		run.SteadyAmp = ampSum / float64(nSteady)
		if run.Store == "ebb" {
			run.EbbReclaimLag = lagSum / float64(nSteady)
			run.EbbSpaceAmp = ebbAmpSum / float64(nSteady)
		}
	}
	if len(run.Samples) > 0 {
		last := run.Samples[len(run.Samples)-1]
		run.EndDisk = last.Disk
		run.Watched = max(0, last.T-lastExp)
		if sealed := last.Report["sealed_bytes"]; run.Store == "ebb" && sealed > 0 {
			run.EbbCompactionWA = (sealed + last.Report["compacted_written"]) / sealed
			run.EbbFilesDropped = int64(last.Report["files_dropped"])
			run.EbbFilesRewritten = int64(last.Report["files_rewritten"])
		}
	}
	for _, s := range run.Samples {
		if s.T >= lastExp && float64(s.Disk) <= 0.1*float64(run.PeakDisk) {
			run.ReclaimLag = max(0, s.T-lastExp)
			break
		}
	}
}

// Markdown implements Result.
func (r *ChurnResult) Markdown() string {
	var e ChurnRun
	for _, s := range r.Stores {
		if s.Store == "ebb" {
			e = s
		}
	}
	t := table{head: []string{"store", "writes/s", "× ebb", "steady disk/live", "× ebb", "max disk/live",
		"peak disk", "× ebb", "disk at end", "reclaim lag s", "× ebb"}}
	for _, s := range r.Stores {
		lag, lagRatio := fmt.Sprintf("> %s", trim(s.Watched)), "–"
		if s.ReclaimLag >= 0 {
			lag = trim(s.ReclaimLag)
			lagRatio = ratio(s.ReclaimLag, e.ReclaimLag)
		}
		t.row(s.Store, num(s.WritesPerSec), ratio(s.WritesPerSec, e.WritesPerSec),
			trim(s.SteadyAmp), ratio(s.SteadyAmp, e.SteadyAmp), trim(s.MaxAmp),
			bytesStr(float64(s.PeakDisk)), ratio(float64(s.PeakDisk), float64(e.PeakDisk)),
			bytesStr(float64(s.EndDisk)), lag, lagRatio)
	}
	out := t.String()
	if e.Store != "" {
		out += fmt.Sprintf("\nebb's own metrics over the steady window: space amplification %s (disk / live compressed bytes), reclaim lag %s s.\n",
			trim(e.EbbSpaceAmp), trim(e.EbbReclaimLag))
		if e.EbbCompactionWA > 0 {
			out += fmt.Sprintf("ebb's write amplification of compaction: %s ((sealed + compacted written) / sealed; %d files dropped whole, %d rewritten).\n",
				trim(e.EbbCompactionWA), e.EbbFilesDropped, e.EbbFilesRewritten)
		}
	}
	return out
}
