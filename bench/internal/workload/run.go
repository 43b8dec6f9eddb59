package workload

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/ebbdb/ebb/bench/internal/measure"
	"github.com/ebbdb/ebb/bench/internal/store"
)

// All is every workload, in the order the suite runs them.
var All = []string{"fill", "read", "churn", "storm", "scale", "query"}

// Run is one invocation of the benchmark.
type Run struct {
	Command  string          `json:"command"`
	Started  time.Time       `json:"started"`
	Finished time.Time       `json:"finished"`
	Machine  measure.Machine `json:"machine"`
	Suite    string          `json:"suite"`
	Stores   []string        `json:"stores"`
	NoSync   bool            `json:"nosync"`
	DocSize  int             `json:"doc_size"`
	Options  store.Options   `json:"store_options"`
	Results  []Result        `json:"-"`
	// Charts are the PNG files written, relative to Out.
	Charts map[string]string `json:"-"`
}

// record is the JSON written for one workload.
type record struct {
	*Run
	Workload string `json:"workload"`
	Result   Result `json:"result"`
}

// Execute runs the named workloads in order, printing each one's table to
// cfg.Log as it completes and writing Out/<workload>.json and the charts.
func Execute(ctx context.Context, cfg *Config, command string, workloads []string) (*Run, error) {
	for _, name := range cfg.Stores {
		if _, err := store.Lookup(name); err != nil {
			return nil, err
		}
	}
	run := &Run{
		Command: command, Started: time.Now(), Machine: measure.Describe(cfg.Dir),
		Suite: cfg.Suite, Stores: cfg.Stores, NoSync: cfg.Store.NoSync, DocSize: cfg.DocSize,
		Options: cfg.Store, Charts: map[string]string{},
	}
	for _, w := range workloads {
		t0 := time.Now()
		cfg.logf("== %s (%s)\n", w, joinStores(cfg.Stores))
		var (
			r   Result
			err error
		)
		switch w {
		case "fill":
			r, err = RunFill(ctx, cfg)
		case "read":
			r, err = RunRead(ctx, cfg)
		case "churn":
			var c *ChurnResult
			if c, err = RunChurn(ctx, cfg); err == nil {
				r = c
				err = run.chart(cfg, "churn", func(p string) error { return ChartChurn(p, c) })
			}
		case "storm":
			var s *StormResult
			if s, err = RunStorm(ctx, cfg); err == nil {
				r = s
				err = run.chart(cfg, "storm", func(p string) error { return ChartStorm(p, s) })
			}
		case "scale":
			r, err = RunScale(ctx, cfg)
		case "query":
			r, err = RunQuery(ctx, cfg)
		default:
			err = fmt.Errorf("unknown workload %q (have %v)", w, All)
		}
		if err != nil {
			return run, err
		}
		run.Results = append(run.Results, r)
		writeTo(cfg.Log, r)
		cfg.logf("(%s took %v)\n\n", w, time.Since(t0).Round(100*time.Millisecond))
		run.Finished = time.Now()
		run.Machine.LoadEnd = measure.LoadAverage()
		if err := cfg.writeJSON(w, record{Run: run, Workload: w, Result: r}); err != nil {
			return run, err
		}
	}
	return run, nil
}

func (run *Run) chart(cfg *Config, name string, draw func(string) error) error {
	if cfg.Out == "" {
		return nil
	}
	if err := draw(filepath.Join(cfg.Out, name+".png")); err != nil {
		return fmt.Errorf("%s chart: %w", name, err)
	}
	run.Charts[name] = name + ".png"
	return nil
}

func joinStores(s []string) string {
	out := ""
	for i, n := range s {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}
