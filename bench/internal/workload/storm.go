package workload

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/ebbdb/ebb/bench/internal/gen"
	"github.com/ebbdb/ebb/bench/internal/measure"
	"github.com/ebbdb/ebb/bench/internal/store"
)

// StormResult is the outcome of the storm workload.
type StormResult struct {
	Config StormConfig `json:"config"`
	Stores []StormRun  `json:"stores"`
}

// StormRun is one store's expiry storm.
type StormRun struct {
	Store string `json:"store"`
	// FillSeconds is how long writing the N expiring items took.
	FillSeconds float64 `json:"fill_s"`
	// Expiry is the unix second at which all N items expire.
	Expiry int64 `json:"expiry_unix"`
	// BaselineSeconds is the length of the window before the expiry.
	BaselineSeconds float64 `json:"baseline_s"`
	// Before and After digest the foreground latencies (from each
	// operation's intended start, so a stall counts for every operation
	// it delays) before the expiry instant and in the After window.
	Before measure.Summary `json:"before"`
	After  measure.Summary `json:"after"`
	// OpsPerSec is the foreground rate achieved.
	OpsPerSec float64 `json:"ops_per_sec"`
	PeakDisk  int64   `json:"peak_disk_bytes"`
	// HalfSeconds is the time from the expiry until the disk is back under
	// half its peak; -1 when it was not by the end of the After window.
	HalfSeconds float64 `json:"half_s"`
	// Windows are the foreground latencies per Window, T relative to the
	// expiry (start of the window); Disk the disk bytes sampled as often.
	Windows []StormWindow `json:"windows"`
	Disk    []DiskPoint   `json:"disk"`
	// Report is the store's own figures at the end.
	Report map[string]float64 `json:"store_report,omitempty"`
	// Compactions are the durations in seconds of the explicit compactions
	// called during the load (StormConfig.CompactEvery).
	Compactions []float64 `json:"compactions_s,omitempty"`
}

// StormWindow digests the foreground operations of one window.
type StormWindow struct {
	T     float64 `json:"t_s"`
	Count int     `json:"count"`
	P50   float64 `json:"p50_us"`
	P99   float64 `json:"p99_us"`
	Max   float64 `json:"max_us"`
}

// DiskPoint is a disk sample, T in seconds relative to the expiry.
type DiskPoint struct {
	T     float64 `json:"t_s"`
	Bytes int64   `json:"bytes"`
}

// Name implements Result.
func (*StormResult) Name() string { return "storm" }

// RunStorm writes, for each store, Foreground items that never expire and
// N items that all expire in the same second, then runs a steady open-loop
// load of Rate operations a second on the foreground items (ReadShare reads,
// the rest single upserts) from before until After past that second.
func RunStorm(ctx context.Context, cfg *Config) (*StormResult, error) {
	g := gen.Shared(cfg.DocSize)
	res := &StormResult{Config: cfg.Storm}
	for _, name := range cfg.Stores {
		run, err := stormOne(ctx, cfg, g, name)
		if err != nil {
			return nil, fmt.Errorf("storm %s: %w", name, err)
		}
		res.Stores = append(res.Stores, run)
	}
	return res, nil
}

type opSample struct {
	at  time.Duration // intended start, since the load started
	lat time.Duration
}

func stormOne(ctx context.Context, cfg *Config, g *gen.Generator, name string) (StormRun, error) {
	c := cfg.Storm
	run := StormRun{Store: name, HalfSeconds: -1}
	dir, err := cfg.storeDir("storm", name)
	if err != nil {
		return run, err
	}
	defer cfg.cleanup(dir)
	s, err := store.Open(name, dir, cfg.Store)
	if err != nil {
		return run, err
	}
	defer s.Close()

	// The foreground items, which never expire; their write rate sizes the
	// time the storm items will take.
	fg := &filler{s: s, g: g, prefix: "fg-", ttl: constTTL(0), batch: c.Batch, writers: 1, n: c.Foreground}
	nfg, _, took, err := fg.run(ctx)
	if err != nil {
		return run, err
	}
	perItem := took.Seconds() / float64(max(nfg, 1))
	est := time.Duration(2*perItem*float64(c.N)*float64(time.Second)) + time.Second
	expiry := time.Unix(time.Now().Add(est+c.Baseline).Unix()+1, 0)
	run.Expiry = expiry.Unix()

	// Disk samples from now to the end.
	var disk []DiskPoint
	quit, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(c.Window)
		defer t.Stop()
		for {
			disk = append(disk, DiskPoint{T: time.Since(expiry).Seconds(), Bytes: measure.DiskBytes(dir)})
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	stopSampling := func() {
		select {
		case <-quit:
		default:
			close(quit)
			<-sampled
		}
	}
	defer stopSampling()

	// The items of the storm, all expiring at the same second.
	overran := false
	storm := &filler{s: s, g: g, prefix: "storm-", batch: c.Batch, writers: 1, n: c.N,
		bar: cfg.bar(int64(c.N), "storm "+name+" (fill)"),
		ttl: func() int32 {
			ttl := expiry.Unix() - time.Now().Unix()
			if ttl < 1 {
				overran, ttl = true, 1
			}
			return int32(ttl)
		}}
	n, _, took, err := storm.run(ctx)
	storm.bar.done()
	if err != nil {
		return run, err
	}
	if overran || n != c.N {
		return run, fmt.Errorf("writing the %d expiring items took %v, past their expiry (estimated %v)", c.N, took, est)
	}
	run.FillSeconds = took.Seconds()

	// The foreground load, open loop: operation k of worker w is due at
	// start + (k*workers+w)/rate.
	start := time.Now()
	end := expiry.Add(c.After)
	run.BaselineSeconds = expiry.Sub(start).Seconds()
	stopBar := cfg.timeBar(end.Sub(start), "storm "+name+" (load)")
	interval := time.Duration(float64(time.Second) / float64(c.Rate))
	per := make([][]opSample, c.Workers)
	var wg sync.WaitGroup
	var errOnce sync.Once
	var loadErr error
	if cp, ok := s.(store.Compacter); ok && c.CompactEvery > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(c.CompactEvery)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				if !time.Now().Before(end) {
					return
				}
				began := time.Now()
				if err := cp.Compact(ctx); err != nil {
					errOnce.Do(func() { loadErr = fmt.Errorf("explicit compaction: %w", err) })
					return
				}
				run.Compactions = append(run.Compactions, time.Since(began).Seconds())
			}
		}()
	}
	for w := range c.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			var key, val []byte // val: each read's value, its storage reused (Store.GetInto)
			for k := 0; ctx.Err() == nil; k++ {
				due := start.Add(time.Duration(k*c.Workers+w) * interval)
				if !due.Before(end) {
					return
				}
				if d := time.Until(due); d > 0 {
					time.Sleep(d)
				}
				i := rng.Uint64N(uint64(nfg))
				key = gen.AppendKey(key[:0], "fg-", i)
				var err error
				if rng.Float64() < c.ReadShare {
					var found bool
					var v []byte
					v, found, err = s.GetInto(ctx, string(key), val)
					if found {
						val = v
					}
					if err == nil && !found {
						err = fmt.Errorf("foreground item %s not found", key)
					}
				} else {
					id := string(key)
					err = s.Put(ctx, []store.Item{{Key: id, Value: g.Doc(id, 0, i+uint64(k)), TTL: 0}})
				}
				if err != nil {
					errOnce.Do(func() { loadErr = err })
					return
				}
				per[w] = append(per[w], opSample{at: due.Sub(start), lat: time.Since(due)})
			}
		}()
	}
	wg.Wait()
	stopBar()
	// A few more disk samples would not change HalfSeconds' definition
	// (within the After window), so sampling stops with the load.
	stopSampling()
	if loadErr != nil {
		return run, loadErr
	}
	if r, ok := s.(store.Reporter); ok {
		run.Report = r.Report()
	}
	run.Disk = disk
	run.analyze(c, per, start, expiry, end)
	return run, nil
}

func (run *StormRun) analyze(c StormConfig, per [][]opSample, start, expiry, end time.Time) {
	before, after := measure.NewHistogram(), measure.NewHistogram()
	warm := min(500*time.Millisecond, c.Baseline/4)
	exp := expiry.Sub(start)
	nWin := int(math.Ceil(float64(end.Sub(start)) / float64(c.Window)))
	wins := make([][]time.Duration, nWin)
	var ops int
	for _, samples := range per {
		for _, o := range samples {
			ops++
			switch {
			case o.at >= exp:
				after.Record(o.lat)
			case o.at >= warm:
				before.Record(o.lat)
			}
			if i := int(o.at / c.Window); i < nWin {
				wins[i] = append(wins[i], o.lat)
			}
		}
	}
	run.Before, run.After = before.Summary(), after.Summary()
	run.OpsPerSec = float64(ops) / end.Sub(start).Seconds()
	for i, lats := range wins {
		w := StormWindow{T: (time.Duration(i)*c.Window - exp).Seconds(), Count: len(lats)}
		if len(lats) > 0 {
			slices.Sort(lats)
			q := func(p float64) float64 {
				return float64(lats[min(int(p*float64(len(lats))), len(lats)-1)]) / 1e3
			}
			w.P50, w.P99, w.Max = q(0.50), q(0.99), float64(lats[len(lats)-1])/1e3
		}
		run.Windows = append(run.Windows, w)
	}
	for _, d := range run.Disk {
		run.PeakDisk = max(run.PeakDisk, d.Bytes)
	}
	for _, d := range run.Disk {
		if d.T >= 0 && 2*d.Bytes < run.PeakDisk {
			run.HalfSeconds = d.T
			break
		}
	}
}

// Markdown implements Result.
func (r *StormResult) Markdown() string {
	var e StormRun
	for _, s := range r.Stores {
		if s.Store == "ebb" {
			e = s
		}
	}
	t := table{head: []string{"store", "fg ops/s", "p99 before ms", "p99 after ms", "after/before",
		"p99 after × ebb", "max before ms", "max after ms", "peak disk", "disk < ½ peak after s", "× ebb"}}
	for _, s := range r.Stores {
		half, halfRatio := fmt.Sprintf("> %s", trim(r.Config.After.Seconds())), "–"
		if s.HalfSeconds >= 0 {
			half = trim(s.HalfSeconds)
			if e.HalfSeconds > 0 {
				halfRatio = ratio(s.HalfSeconds, e.HalfSeconds)
			}
		}
		t.row(s.Store, num(s.OpsPerSec), ms(s.Before.P99), ms(s.After.P99), ratio(s.After.P99, s.Before.P99),
			ratio(s.After.P99, e.After.P99), ms(s.Before.Max), ms(s.After.Max),
			bytesStr(float64(s.PeakDisk)), half, halfRatio)
	}
	return t.String()
}
