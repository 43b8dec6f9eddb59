package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/ebbdb/ebb/bench/internal/gen"
	"github.com/ebbdb/ebb/bench/internal/measure"
	"github.com/ebbdb/ebb/bench/internal/store"
)

// Result is what a workload produces.
type Result interface {
	// Name is the workload's name.
	Name() string
	// Markdown renders the workload's tables.
	Markdown() string
}

// logf writes to cfg.Log.
func (cfg *Config) logf(format string, args ...any) {
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, format, args...)
	}
}

// storeDir returns a fresh, empty directory for one store in one workload.
func (cfg *Config) storeDir(workload, name string, parts ...string) (string, error) {
	dir := filepath.Join(append([]string{cfg.Dir, workload, name}, parts...)...)
	if err := measure.RemoveAll(dir); err != nil {
		return "", err
	}
	return dir, os.MkdirAll(dir, 0o755)
}

// cleanup removes a store's directory once a workload is done with it.
func (cfg *Config) cleanup(dir string) {
	if err := measure.RemoveAll(dir); err != nil {
		cfg.logf("warning: remove %s: %v\n", dir, err)
	}
}

// bar is a progress bar, or nothing when progress is off.
type bar struct{ pb *progressbar.ProgressBar }

func (cfg *Config) bar(max int64, desc string) *bar {
	if cfg.Progress == nil {
		return &bar{}
	}
	return &bar{pb: progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(cfg.Progress),
		progressbar.OptionSetDescription(fmt.Sprintf("%-28s", desc)),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
	)}
}

func (b *bar) add(n int) {
	if b.pb != nil {
		_ = b.pb.Add(n)
	}
}

func (b *bar) set(n int64) {
	if b.pb != nil {
		_ = b.pb.Set64(n)
	}
}

func (b *bar) done() {
	if b.pb != nil {
		_ = b.pb.Finish()
	}
}

// timeBar shows a phase of fixed duration, advanced by a ticker until stop.
func (cfg *Config) timeBar(d time.Duration, desc string) (stop func()) {
	b := cfg.bar(int64(d/time.Second)+1, desc+" (s)")
	if b.pb == nil {
		return func() {}
	}
	start := time.Now()
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				b.set(int64(time.Since(start) / time.Second))
			}
		}
	}()
	return func() {
		close(quit)
		wg.Wait()
		b.done()
	}
}

// filler writes items 0..n-1 (keys gen.Key(prefix, i)) with writers
// concurrent writers, batch items per Put, until all are written or the
// deadline passes. It returns how many were written and their commit
// latencies.
type filler struct {
	s       store.Store
	g       *gen.Generator
	prefix  string
	ttl     func() int32 // the ttl of the next batch
	batch   int
	writers int
	from    uint64 // first item number
	n       int    // items to write
	until   time.Time
	// onPut, if set, is called after each successful Put with the items
	// and the time the Put started.
	onPut func(items []store.Item, start time.Time)
	bar   *bar
}

func (f *filler) run(ctx context.Context) (written int, lat *measure.Histogram, elapsed time.Duration, err error) {
	lat = measure.NewHistogram()
	var next, done atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < f.writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			items := make([]store.Item, 0, f.batch)
			for ctx.Err() == nil {
				if !f.until.IsZero() && time.Now().After(f.until) {
					return
				}
				lo := next.Add(int64(f.batch)) - int64(f.batch)
				if lo >= int64(f.n) {
					return
				}
				hi := min(lo+int64(f.batch), int64(f.n))
				ttl := f.ttl()
				items = items[:0]
				for i := lo; i < hi; i++ {
					num := f.from + uint64(i)
					k := gen.Key(f.prefix, num)
					items = append(items, store.Item{Key: k, Value: f.g.Doc(k, ttl, num), TTL: ttl})
				}
				t0 := time.Now()
				if err := f.s.Put(ctx, items); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				lat.Record(time.Since(t0))
				if f.onPut != nil {
					f.onPut(items, t0)
				}
				done.Add(hi - lo)
				if f.bar != nil {
					f.bar.add(int(hi - lo))
				}
			}
		}()
	}
	wg.Wait()
	return int(done.Load()), lat, time.Since(start), firstErr
}

func constTTL(ttl int32) func() int32 { return func() int32 { return ttl } }

// timedOpen opens a store and reads one key, so that the store is known to
// be usable: the open time of a store that defers work to the first read
// includes it.
func timedOpen(ctx context.Context, name, dir string, o store.Options, probe string) (store.Store, time.Duration, error) {
	t0 := time.Now()
	s, err := store.Open(name, dir, o)
	if err != nil {
		return nil, 0, err
	}
	if _, _, err := s.Get(ctx, probe); err != nil {
		s.Close()
		return nil, 0, fmt.Errorf("%s: first read after open: %w", name, err)
	}
	return s, time.Since(t0), nil
}

// writeJSON writes v as indented JSON to Out/name.json.
func (cfg *Config) writeJSON(name string, v any) error {
	if cfg.Out == "" {
		return nil
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cfg.Out, name+".json"), append(b, '\n'), 0o644)
}

// ---- table rendering ----

// table builds a markdown table.
type table struct {
	head []string
	rows [][]string
}

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) String() string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(t.head, " | ") + " |\n|")
	for range t.head {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range t.rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// ratio renders v / ref as "1.23×", or "–" when either is missing.
func ratio(v, ref float64) string {
	if ref == 0 || math.IsNaN(v) || math.IsNaN(ref) || math.IsInf(v, 0) || v < 0 || ref < 0 {
		return "–"
	}
	r := v / ref
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f×", r)
	case r >= 10:
		return fmt.Sprintf("%.1f×", r)
	default:
		return fmt.Sprintf("%.2f×", r)
	}
}

// num renders a number with 3 significant digits and a k/M/G suffix.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return trim(v/1e9) + "G"
	case a >= 1e6:
		return trim(v/1e6) + "M"
	case a >= 1e4:
		return trim(v/1e3) + "k"
	default:
		return trim(v)
	}
}

func trim(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	case a == 0:
		return "0"
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

// bytesStr renders a byte count in B, KiB, MiB or GiB.
func bytesStr(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1<<30:
		return trim(v/(1<<30)) + " GiB"
	case a >= 1<<20:
		return trim(v/(1<<20)) + " MiB"
	case a >= 1<<10:
		return trim(v/(1<<10)) + " KiB"
	default:
		return trim(v) + " B"
	}
}

// ms renders microseconds as milliseconds.
func ms(us float64) string { return trim(us / 1000) }

// writeTo prints a result's markdown.
func writeTo(w io.Writer, r Result) {
	if w != nil {
		fmt.Fprintf(w, "\n### %s\n\n%s\n", r.Name(), r.Markdown())
	}
}
