package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ebbdb/ebb/engine"
	"github.com/spf13/cobra"
)

// The bench verb measures ebb alone, in this process, so that it works from
// an installed binary. The comparison with other stores is the bench/ module
// of the repository, whose dependencies (the stores it measures) must never
// enter the engine's.

// benchPeers is the line that points to the comparison with other stores.
const benchPeers = "The comparison with Badger, Pebble, bbolt and BuntDB on the same workloads is the bench/ module of the repository: cd bench && go run ."

// benchContainer is the container every workload writes to.
const benchContainer = "bench"

// benchConfig is what the flags of ebb bench set.
type benchConfig struct {
	dir      string        // database directory; "" for a temporary one
	count    int           // items to write (fill, read) or read (read)
	size     int           // bytes of each document
	batch    int           // operations per commit
	sync     bool          // fsync every commit (the engine's default)
	writers  int           // concurrent writers
	readers  int           // concurrent readers (read)
	ttl      int32         // items' ttl in seconds (churn)
	duration time.Duration // how long churn writes
}

func newBenchCmd() *cobra.Command {
	cfg := benchConfig{count: 10000, size: 1024, batch: 1, sync: true, writers: 8, readers: 8, ttl: 10, duration: 10 * time.Second}
	cmd := &cobra.Command{
		Use:   "bench {fill|read|churn} [FLAGS]",
		Short: "Measure ebb's writes, reads and TTL churn in this process",
		Long: `Bench runs one of ebb's own workloads against a new database and prints
its throughput and latency percentiles:

  fill   writes --count items of --size bytes, --batch operations per
         commit, from --writers goroutines
  read   fills as above, then reads --count random items from --readers
         goroutines
  churn  writes items that expire after --ttl seconds, for --duration, with
         the background compactor on, and reports disk / live bytes, the
         reclaim lag and compaction's write amplification

The database is made in a temporary folder, removed at the end, unless --dir
names a folder (it must not exist yet, or be empty; it is kept).

` + benchPeers,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(errors.New("bench: name one workload: fill, read or churn"))
			}
			switch args[0] {
			case "fill", "read", "churn":
				return nil
			}
			return usageError(fmt.Errorf("bench: unknown workload %q: want fill, read or churn", args[0]))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cfg.check(); err != nil {
				return usageError(err)
			}
			return runBench(cmd.Context(), cmd.OutOrStdout(), args[0], cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.dir, "dir", "", "database folder to create and keep (default: a temporary one, removed)")
	f.IntVar(&cfg.count, "count", cfg.count, "items to write (fill, read) and reads to make (read)")
	f.IntVar(&cfg.size, "size", cfg.size, "bytes of each document")
	f.IntVar(&cfg.batch, "batch", cfg.batch, "operations per commit (1: single upserts)")
	f.BoolVar(&cfg.sync, "sync", cfg.sync, "fsync every commit (--sync=false: Options.NoSync)")
	f.IntVar(&cfg.writers, "writers", cfg.writers, "concurrent writers")
	f.IntVar(&cfg.readers, "readers", cfg.readers, "concurrent readers (read)")
	f.Int32Var(&cfg.ttl, "ttl", cfg.ttl, "items' ttl in seconds (churn)")
	f.DurationVar(&cfg.duration, "duration", cfg.duration, "how long churn writes")
	return cmd
}

// benchMinSize is the smallest document the workloads can make: the id
// and the counter with their JSON around them.
const benchMinSize = 64

// check refuses flags outside what the workloads can do.
func (c benchConfig) check() error {
	switch {
	case c.count < 1:
		return fmt.Errorf("bench: --count %d: want at least 1", c.count)
	case c.size < benchMinSize || c.size > engine.MaxDocumentSize:
		return fmt.Errorf("bench: --size %d: want %d to %d bytes", c.size, benchMinSize, engine.MaxDocumentSize)
	case c.batch < 1 || c.batch > engine.DefaultMaxBatchOperations:
		return fmt.Errorf("bench: --batch %d: want 1 to %d", c.batch, engine.DefaultMaxBatchOperations)
	case c.batch*c.size > engine.DefaultMaxBatchBytes:
		return fmt.Errorf("bench: --batch %d of --size %d: a batch holds at most %d bytes of documents", c.batch, c.size, engine.DefaultMaxBatchBytes)
	case c.writers < 1 || c.readers < 1:
		return fmt.Errorf("bench: --writers %d, --readers %d: want at least 1 each", c.writers, c.readers)
	case c.ttl < 1:
		return fmt.Errorf("bench: --ttl %d: want at least 1 second", c.ttl)
	case c.duration <= 0:
		return fmt.Errorf("bench: --duration %v: want more than 0", c.duration)
	}
	return nil
}

// runBench opens a new database as cfg says, runs workload in it and
// prints what it measured to w.
func runBench(ctx context.Context, w io.Writer, workload string, cfg benchConfig) error {
	dir := cfg.dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "ebb-bench-")
		if err != nil {
			return failed(fmt.Errorf("bench: %w", err))
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	} else if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return usageError(fmt.Errorf("bench: --dir %s is not empty: give a new or empty folder", dir))
	}
	db, err := engine.Open(dir, &engine.Options{NoSync: !cfg.sync})
	if err != nil {
		return failed(fmt.Errorf("bench: %w", err))
	}
	defer db.Close()
	var props engine.ContainerProperties
	props.ID = benchContainer
	if workload == "churn" {
		props.DefaultTTL = engine.TTL(cfg.ttl)
	}
	c, err := db.CreateContainer(ctx, props)
	if err != nil {
		return failed(fmt.Errorf("bench: %w", err))
	}
	switch workload {
	case "fill":
		err = benchFill(ctx, w, c, cfg)
	case "read":
		if err = benchFill(ctx, w, c, cfg); err == nil {
			err = benchRead(ctx, w, c, cfg)
		}
	case "churn":
		err = benchChurn(ctx, w, c, cfg)
	}
	if err != nil {
		return failed(fmt.Errorf("bench %s: %w", workload, err))
	}
	if err := db.Close(); err != nil {
		return failed(fmt.Errorf("bench: close: %w", err))
	}
	fmt.Fprintln(w, benchPeers)
	return nil
}

// benchID is the id of item n.
func benchID(n int) string { return fmt.Sprintf("item-%012d", n) }

// benchDoc is item n's document, size bytes long, padded with random
// letters so that compression does not make it vanish.
func benchDoc(n, size int, ttl int32, rng *rand.Rand) []byte {
	d := fmt.Appendf(nil, `{"id":%q,"n":%d`, benchID(n), n)
	if ttl != 0 {
		d = fmt.Appendf(d, `,"ttl":%d`, ttl)
	}
	d = append(d, `,"pad":"`...)
	for len(d) < size-2 {
		d = append(d, byte('a'+rng.IntN(26)))
	}
	return append(d, `"}`...)
}

// latencies collects the durations of operations from several goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d []time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d...)
	l.mu.Unlock()
}

// line is the percentiles of the durations collected, for one line of output.
func (l *latencies) line() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return "none"
	}
	slices.Sort(l.d)
	q := func(p float64) string {
		return fmtMillis(l.d[min(len(l.d)-1, int(p*float64(len(l.d))))])
	}
	return fmt.Sprintf("p50 %s  p95 %s  p99 %s  p99.9 %s  max %s", q(0.50), q(0.95), q(0.99), q(0.999), fmtMillis(l.d[len(l.d)-1]))
}

func fmtMillis(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64) + " ms"
}

// writeItems has cfg.writers goroutines write items from next, which
// returns the number of the next item and false once there is none, in
// commits of cfg.batch, until next says stop. It returns the items written
// and each commit's duration.
func writeItems(ctx context.Context, c *engine.Container, cfg benchConfig, ttl int32, next func() (int, bool)) (int64, *latencies, error) {
	var (
		written atomic.Int64
		lat     latencies
		wg      sync.WaitGroup
		errOnce sync.Once
		werr    error
	)
	for g := range cfg.writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			var mine []time.Duration
			defer func() { lat.add(mine) }()
			docs := make([][]byte, 0, cfg.batch)
			for {
				docs = docs[:0]
				for len(docs) < cfg.batch {
					n, ok := next()
					if !ok {
						break
					}
					docs = append(docs, benchDoc(n, cfg.size, ttl, rng))
				}
				if len(docs) == 0 || ctx.Err() != nil {
					return
				}
				start := time.Now()
				var err error
				if len(docs) == 1 {
					_, err = c.Upsert(ctx, docs[0])
				} else {
					b := c.NewBatch()
					for _, d := range docs {
						b.Upsert(d)
					}
					_, err = c.ExecuteBatch(ctx, b)
				}
				mine = append(mine, time.Since(start))
				if err != nil {
					errOnce.Do(func() { werr = err })
					return
				}
				written.Add(int64(len(docs)))
			}
		})
	}
	wg.Wait()
	if werr == nil {
		werr = ctx.Err()
	}
	return written.Load(), &lat, werr
}

// benchFill writes cfg.count items and prints the rate and the commits'
// latencies.
func benchFill(ctx context.Context, w io.Writer, c *engine.Container, cfg benchConfig) error {
	var issued atomic.Int64
	next := func() (int, bool) {
		n := int(issued.Add(1)) - 1
		return n, n < cfg.count
	}
	start := time.Now()
	n, lat, err := writeItems(ctx, c, cfg, 0, next)
	el := time.Since(start)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "fill: %d items of %d B, %d per commit, %d writers, fsync %s: %.2f s, %.0f items/s, %.1f MiB/s\n",
		n, cfg.size, cfg.batch, cfg.writers, onOff(cfg.sync), el.Seconds(), float64(n)/el.Seconds(), float64(n)*float64(cfg.size)/(1<<20)/el.Seconds())
	fmt.Fprintf(w, "  latency per commit: %s\n", lat.line())
	return nil
}

// benchRead reads cfg.count random items of the cfg.count written and
// prints the rate and the reads' latencies.
func benchRead(ctx context.Context, w io.Writer, c *engine.Container, cfg benchConfig) error {
	var (
		issued atomic.Int64
		lat    latencies
		wg     sync.WaitGroup
		rerr   error
		once   sync.Once
	)
	start := time.Now()
	for g := range cfg.readers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 2))
			var mine []time.Duration
			defer func() { lat.add(mine) }()
			for issued.Add(1) <= int64(cfg.count) && ctx.Err() == nil {
				id := benchID(rng.IntN(cfg.count))
				t := time.Now()
				it, err := c.Read(ctx, id)
				mine = append(mine, time.Since(t))
				if err == nil && it.ID != id {
					err = fmt.Errorf("read %s returned item %s", id, it.ID)
				}
				if err != nil {
					once.Do(func() { rerr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	if rerr == nil {
		rerr = ctx.Err()
	}
	if rerr != nil {
		return rerr
	}
	fmt.Fprintf(w, "read: %d random reads, %d readers: %.2f s, %.0f reads/s\n", cfg.count, cfg.readers, el.Seconds(), float64(cfg.count)/el.Seconds())
	fmt.Fprintf(w, "  latency per read: %s\n", lat.line())
	return nil
}

// benchChurn writes items that expire after cfg.ttl seconds for
// cfg.duration, sampling the container's metrics every second, then
// prints the write rate, the commits' latencies and how much disk the
// expired items held and for how long.
func benchChurn(ctx context.Context, w io.Writer, c *engine.Container, cfg benchConfig) error {
	var issued atomic.Int64
	end := time.Now().Add(cfg.duration)
	next := func() (int, bool) { return int(issued.Add(1)) - 1, time.Now().Before(end) }

	var (
		samples []engine.Metrics
		done    = make(chan struct{})
		sampled = make(chan struct{})
	)
	go func() {
		defer close(sampled)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				samples = append(samples, c.Metrics())
			}
		}
	}()
	start := time.Now()
	n, lat, err := writeItems(ctx, c, cfg, cfg.ttl, next)
	el := time.Since(start)
	close(done)
	<-sampled
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "churn: %d items of %d B with ttl %d s, %d per commit, %d writers, fsync %s: %.2f s, %.0f items/s\n",
		n, cfg.size, cfg.ttl, cfg.batch, cfg.writers, onOff(cfg.sync), el.Seconds(), float64(n)/el.Seconds())
	fmt.Fprintf(w, "  latency per commit: %s\n", lat.line())
	// Space is judged once the first items have expired: before, the disk
	// holds live items only.
	var ampSum, ampMax float64
	var lag time.Duration
	steady := 0
	for i, m := range samples {
		if time.Duration(i+1)*time.Second <= time.Duration(cfg.ttl)*time.Second || m.LiveDiskBytes == 0 {
			continue
		}
		ampSum += m.SpaceAmplification
		ampMax = max(ampMax, m.SpaceAmplification)
		lag = max(lag, m.ReclaimLag)
		steady++
	}
	if steady == 0 {
		fmt.Fprintf(w, "  space: the run ended before items expired (--duration %v, --ttl %d s)\n", cfg.duration, cfg.ttl)
	} else {
		fmt.Fprintf(w, "  space after the first expiry: disk / live bytes mean %.2f, max %.2f; reclaim lag max %.1f s\n", ampSum/float64(steady), ampMax, lag.Seconds())
	}
	m := c.Metrics()
	wa := 1.0
	if m.SealedBytes > 0 {
		wa = float64(m.SealedBytes+m.CompactedWrittenBytes) / float64(m.SealedBytes)
	}
	fmt.Fprintf(w, "  compaction: write amplification %.2f ((sealed + rewritten) / sealed), %d files dropped whole, %d rewritten; %d items expired, waiting\n",
		wa, m.FilesDropped, m.FilesRewritten, m.ExpiredPending)
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
