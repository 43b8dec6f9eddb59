// Command bench is ebb's benchmark harness: it runs the same workloads
// against ebb and its peers (Badger, BuntDB, bbolt, Pebble) in one run and
// reports each store's figures with their ratio to ebb; its query workload
// compares ebb's queries with BuntDB's indexes.
//
//	cd bench && go run .                 # the quick suite, every workload (a few minutes)
//	cd bench && go run . --full          # the sizes of the issue (hours)
//	cd bench && go run . churn --stores ebb,badger
//
// It is its own Go module so that the peers never enter the engine's
// dependencies.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ebbdb/ebb/bench/internal/store"
	"github.com/ebbdb/ebb/bench/internal/workload"
)

type flags struct {
	full            bool
	medium          bool
	stores          []string
	nosync          bool
	dir             string
	out             string
	report          string
	progress        string
	docSize         int
	sweepInterval   time.Duration
	compactInterval time.Duration

	fillN         int
	readN         int
	churnDuration time.Duration
	churnTTL      int32
	churnRate     int
	stormN        int
	stormRate     int
	stormRead     float64
	stormCompact  time.Duration
	scaleSizes    []int
	queryN        int
	cpuProfile    string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRoot().ExecuteContext(ctx); err != nil {
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	f := &flags{}
	root := &cobra.Command{
		Use:   "bench [workload]",
		Short: "Benchmark ebb against Badger, BuntDB, bbolt and Pebble",
		Long: `bench runs the same workloads against ebb and its peers in one run and prints,
for each workload, a markdown table with every store's figures and their ratio
to ebb. Results go to --out as JSON (and PNG charts for churn and storm).

With no workload it runs them all (fill, read, churn, storm, scale, query) and writes
the report to --report (RESULTS.md). The default sizes are the quick suite
(a few minutes on 2 cores); --full runs the sizes of the issue (hours).`,
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd, f, workload.All, true)
		},
	}
	pf := root.PersistentFlags()
	pf.BoolVar(&f.full, "full", false, "run the full sizes (1e6 items, 5 min churn, 1e7 at scale) instead of the quick suite")
	pf.BoolVar(&f.medium, "medium", false, "run the sizes the performance targets are judged at (200k items, 60 s churn, storm of 200k at 2000 ops/s) instead of the quick suite")
	pf.StringSliceVar(&f.stores, "stores", store.Names(), "stores to compare")
	pf.BoolVar(&f.nosync, "nosync", false, "turn off fsync on commit for every store")
	pf.StringVar(&f.dir, "dir", "", "scratch directory for the stores (default: a new temporary directory, removed at the end)")
	pf.StringVar(&f.out, "out", "results", "directory for the JSON results and PNG charts (\"\" for none)")
	pf.StringVar(&f.report, "report", "", "write the markdown report here (default RESULTS.md when running every workload)")
	pf.StringVar(&f.progress, "progress", "auto", "progress bars on stderr: auto (when a terminal), on, off")
	pf.IntVar(&f.docSize, "size", 1024, "document size in bytes (the query workload: 750 unless given)")
	pf.DurationVar(&f.sweepInterval, "sweep-interval", time.Second, "how often bbolt and Pebble sweep expired keys")
	pf.DurationVar(&f.compactInterval, "compact-interval", 10*time.Second, "least time between compactions after sweeps (bbolt, Pebble) and Badger value-log GC runs")
	pf.IntVar(&f.fillN, "fill-n", 0, "fill: items per mode (default by suite)")
	pf.IntVar(&f.readN, "read-n", 0, "read: items filled before reading (default by suite)")
	pf.DurationVar(&f.churnDuration, "churn-duration", 0, "churn: how long to write (default by suite)")
	pf.Int32Var(&f.churnTTL, "churn-ttl", 0, "churn: TTL of the items in seconds (default by suite)")
	pf.IntVar(&f.churnRate, "churn-rate", 0, "churn: items/s for all writers (default: as fast as they go)")
	pf.IntVar(&f.stormN, "storm-n", 0, "storm: items expiring in the same second (default by suite)")
	pf.IntVar(&f.stormRate, "storm-rate", 0, "storm: foreground operations per second (default by suite)")
	pf.Float64Var(&f.stormRead, "storm-read-share", 0, "storm: share of the foreground operations that are reads, the rest single upserts (default by suite)")
	pf.DurationVar(&f.stormCompact, "storm-compact", 0, "storm: call the store's explicit compaction (ebb: Container.Compact) this often during the load (default: never)")
	pf.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	pf.IntSliceVar(&f.scaleSizes, "scale-sizes", nil, "scale: item counts (default by suite)")
	pf.IntVar(&f.queryN, "query-n", 0, "query: documents filled, half of them expired before the queries (default by suite); the storm phase takes a tenth as many")

	for _, w := range workload.All {
		sub := &cobra.Command{
			Use:          w,
			Short:        "run the " + w + " workload only",
			Args:         cobra.NoArgs,
			SilenceUsage: true,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return run(cmd, f, []string{w}, false)
			},
		}
		if w == "query" {
			// bench query --items 1000000: the size, as --query-n says it.
			sub.Flags().IntVar(&f.queryN, "items", 0, "documents filled (the same as --query-n)")
		}
		root.AddCommand(sub)
	}
	root.Long += "\n\nWorkloads:\n" + strings.Join([]string{
		"  fill   N items of 1 KiB, TTL 1 h, batches and single writes, 1 and 64 writers: writes/s, disk and heap per item, open time",
		"  read   random point reads after fill, hit and miss: reads/s, p50/p99/p999",
		"  churn  writes with TTL T and never-repeating keys: disk vs live bytes over time, space amplification, reclaim lag",
		"  storm  N items expire in the same second under a steady load: foreground p99/max before vs after, time until disk is under half its peak",
		"  scale  open time and heap per item as the store grows",
		"  query  ebb's queries (equality, range, ORDER BY TOP, COUNT, 10% of the items) against BuntDB's JSON indexes, half the items expired: p50/p99, no expired item returned, also while many expire at once",
	}, "\n")
	return root
}

func run(cmd *cobra.Command, f *flags, workloads []string, all bool) error {
	cfg := workload.Quick()
	switch {
	case f.full && f.medium:
		return fmt.Errorf("--full and --medium are two suites: give one")
	case f.full:
		cfg = workload.Full()
	case f.medium:
		cfg = workload.Medium()
	}
	cfg.Stores = f.stores
	cfg.DocSize = f.docSize
	cfg.Store = store.Options{NoSync: f.nosync, SweepInterval: f.sweepInterval, CompactInterval: f.compactInterval}
	cfg.Out = f.out
	cfg.Log = cmd.OutOrStdout()
	custom := false
	set := func(changed bool, apply func()) {
		if changed {
			apply()
			custom = true
		}
	}
	fl := cmd.Flags()
	set(fl.Changed("fill-n"), func() { cfg.Fill.N = f.fillN })
	set(fl.Changed("read-n"), func() { cfg.Read.N = f.readN })
	set(fl.Changed("churn-duration"), func() { cfg.Churn.Duration = f.churnDuration })
	set(fl.Changed("churn-ttl"), func() {
		cfg.Churn.TTL = f.churnTTL
		cfg.Churn.Drain = max(cfg.Churn.Drain, time.Duration(f.churnTTL)*time.Second+5*time.Second)
	})
	set(fl.Changed("churn-rate"), func() { cfg.Churn.Rate = f.churnRate })
	set(fl.Changed("storm-n"), func() { cfg.Storm.N, cfg.Storm.Foreground = f.stormN, max(f.stormN/10, 100) })
	set(fl.Changed("storm-rate"), func() { cfg.Storm.Rate = f.stormRate })
	if f.stormRead < 0 || f.stormRead > 1 {
		return fmt.Errorf("--storm-read-share %v is not a share from 0 to 1", f.stormRead)
	}
	set(fl.Changed("storm-read-share"), func() { cfg.Storm.ReadShare = f.stormRead })
	set(fl.Changed("storm-compact"), func() { cfg.Storm.CompactEvery = f.stormCompact })
	set(fl.Changed("scale-sizes"), func() { cfg.Scale.Sizes = f.scaleSizes })
	set(fl.Changed("query-n") || fl.Changed("items"), func() { cfg.Query.N, cfg.Query.StormN = f.queryN, max(f.queryN/10, 100) })
	set(fl.Changed("size"), func() { cfg.Query.DocSize = f.docSize })
	if custom {
		cfg.Suite += " (with overrides)"
	}
	switch f.progress {
	case "on":
		cfg.Progress = os.Stderr
	case "auto":
		if term.IsTerminal(int(os.Stderr.Fd())) {
			cfg.Progress = os.Stderr
		}
	case "off":
	default:
		return fmt.Errorf("--progress must be auto, on or off, not %q", f.progress)
	}
	if f.dir == "" {
		d, err := os.MkdirTemp("", "ebb-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		cfg.Dir = d
	} else {
		cfg.Dir = f.dir
	}
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	command := "cd bench && go run ."
	if len(os.Args) > 1 {
		command += " " + strings.Join(os.Args[1:], " ")
	}
	r, err := workload.Execute(cmd.Context(), &cfg, command, workloads)
	if err != nil {
		return err
	}
	report := f.report
	if report == "" && all {
		report = "RESULTS.md"
	}
	if report != "" {
		chartDir := cfg.Out
		if rel, err := filepath.Rel(filepath.Dir(report), cfg.Out); err == nil {
			chartDir = rel
		}
		if err := workload.WriteReport(report, &cfg, r, filepath.ToSlash(chartDir)); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "report written to %s\n", report)
	}
	if cfg.Out != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "results written to %s/\n", cfg.Out)
	}
	return nil
}
