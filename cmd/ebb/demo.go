package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ebbdb/ebb/engine"
	"github.com/spf13/cobra"
)

// The demo's container: a short DefaultTTL, and items whose own ttl is
// shorter, longer, absent or -1, so that they expire in waves.
const (
	demoContainer  = "sessions"
	demoDefaultTTL = 5
	demoWriters    = 8
	// demoTimeout ends the demo if something keeps it from finishing.
	demoTimeout = 50 * time.Second
)

// demoGroup is one kind of item the demo writes.
type demoGroup struct {
	prefix string
	ttl    int32 // the item's own ttl; 0: absent, so the DefaultTTL applies
	share  int   // of every 6 items
	label  string
}

var demoGroups = []demoGroup{
	{prefix: "a", ttl: 3, share: 2, label: "ttl 3"},
	{prefix: "b", ttl: 0, share: 2, label: "default 5"},
	{prefix: "c", ttl: 8, share: 1, label: "ttl 8"},
	{prefix: "d", ttl: -1, share: 1, label: "never"},
}

func newDemoCmd() *cobra.Command {
	var (
		dir   string
		items int
	)
	cmd := &cobra.Command{
		Use:   "demo [--dir DIR]",
		Short: "Watch items expire on time and their disk space come back",
		Long: fmt.Sprintf(`Demo shows ebb's TTL at work, in real time, in about ten seconds.

It creates a container with DefaultTTL %d s in a new database and writes a few
thousand items: a third with their own ttl of 3 s, a third inheriting the
default, a sixth with ttl 8 s and a sixth with ttl -1, which never expire.
Then, every second, it prints the container's item count, live bytes, disk
bytes and expired items still on disk: items vanish the second they expire,
and each compaction gives their disk space back.

The database goes in a temporary directory, removed at the end, or in DIR
(which must be new or empty), kept for 'ebb inspect DIR'.`, demoDefaultTTL),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError(fmt.Errorf("demo takes no arguments; did you mean --dir %s?", args[0]))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if items < 6 {
				return usageError(fmt.Errorf("demo --items %d: want at least 6", items))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			d := &demo{out: cmd.OutOrStdout(), items: items, live: isTerminal(cmd.OutOrStdout())}
			err := d.run(ctx, dir)
			if err != nil && ctx.Err() != nil {
				return failed(errors.New("demo: interrupted"))
			}
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "keep the database in `DIR` (new or empty) instead of a temporary directory")
	cmd.Flags().IntVar(&items, "items", 3000, "number of items to write")
	return cmd
}

// demo is one run of the demo.
type demo struct {
	out   io.Writer
	items int
	live  bool // out is a terminal: draw a progress line

	mu       sync.Mutex // guards out and status
	status   string     // the progress line on screen, if any
	t0       int64      // the second the writes started in
	due      map[int64]int
	dueLabel map[int64][]string
	samples  map[int64]string // an id due to expire at each instant
	prev     engine.Stats     // as of the previous row
	checked  int64            // the instant the previous row was taken at
}

func (d *demo) run(ctx context.Context, dir string) error {
	keep := dir != ""
	if keep {
		if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
			return usageError(fmt.Errorf("demo --dir %s: the directory is not empty; give a new or empty one", dir))
		}
	} else {
		tmp, err := os.MkdirTemp("", "ebb-demo-")
		if err != nil {
			return failed(err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	start := time.Now()
	// The demo compacts each wave itself, as it expires, to show the space
	// coming back: the background compactor, racing it by a tick, would
	// sometimes reclaim a wave before the demo's row for it.
	db, err := engine.Open(dir, &engine.Options{SealThreshold: 256 << 10, CompactionInterval: -1})
	if err != nil {
		return failed(err)
	}
	defer db.Close() // on early returns; Close is idempotent
	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: demoContainer, DefaultTTL: engine.TTL(demoDefaultTTL)})
	if err != nil {
		return failed(err)
	}

	where := "a temporary directory, removed at the end (--dir keeps it)"
	if keep {
		where = "kept for 'ebb inspect " + dir + "'"
	}
	d.println("ebb demo: items vanish the second they expire, and compaction gives their disk space back.")
	d.println(fmt.Sprintf("database %s: %s", dir, where))
	d.println(fmt.Sprintf("container %q with DefaultTTL %d s; writing %d items: %s", demoContainer, demoDefaultTTL, d.items, d.mix()))
	d.println("")

	// Start on a fresh second, so that the writes most likely share one _ts
	// and each wave expires in one step.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 20*time.Millisecond)))
	writeStart := time.Now()
	if err := d.write(ctx, c); err != nil {
		return failed(err)
	}
	d.println(fmt.Sprintf("%-6s %7s %12s %12s %8s   %s", "TIME", "ITEMS", "LIVE BYTES", "DISK BYTES", "EXPIRED", "EVENT"))
	d.prev, d.checked = c.Stats(), time.Now().Unix()
	d.row(d.prev, fmt.Sprintf("wrote %d items in %.2f s", d.items, time.Since(writeStart).Seconds()))

	last := d.lastDue()
	deadline := start.Add(demoTimeout)
	for k := int64(1); ; k++ {
		if err := d.waitUntil(ctx, time.Unix(d.t0+k, 0).Add(150*time.Millisecond)); err != nil {
			return failed(err)
		}
		st := c.Stats()
		d.row(st, d.expiryEvent(ctx, c, st))
		if st.ExpiredPending > 0 {
			t := time.Now()
			if err := c.Compact(ctx); err != nil {
				return failed(err)
			}
			after := c.Stats()
			d.row(after, fmt.Sprintf("compacted in %d ms: disk %s → %s", time.Since(t).Milliseconds(), fmtBytes(st.DiskBytes), fmtBytes(after.DiskBytes)))
			st = after
		}
		d.prev = st
		if d.t0+k >= last && st.ExpiredPending == 0 {
			break
		}
		if time.Now().After(deadline) {
			return failed(errors.New("demo: gave up waiting for the last items to expire"))
		}
	}
	if err := db.Close(); err != nil {
		return failed(err)
	}
	d.println("")
	d.println(fmt.Sprintf("done in %.1f s: %d items left, the ones that never expire; disk %s.", time.Since(start).Seconds(), d.prev.Items, fmtBytes(d.prev.DiskBytes)))
	if keep {
		d.println("Look inside: ebb inspect " + dir)
	}
	return nil
}

// mix describes the items written.
func (d *demo) mix() string {
	var parts []string
	for i, g := range demoGroups {
		n := d.groupSize(i)
		switch {
		case g.ttl == 0:
			parts = append(parts, fmt.Sprintf("%d inheriting the default", n))
		case g.ttl < 0:
			parts = append(parts, fmt.Sprintf("%d with ttl -1 (never expire)", n))
		default:
			parts = append(parts, fmt.Sprintf("%d with ttl %d s", n, g.ttl))
		}
	}
	return strings.Join(parts, ", ")
}

// groupSize is how many items of demoGroups[i] the demo writes.
func (d *demo) groupSize(i int) int {
	if i == len(demoGroups)-1 {
		n := d.items
		for j := range i {
			n -= d.groupSize(j)
		}
		return n
	}
	return d.items * demoGroups[i].share / 6
}

// write writes the items with a few concurrent writers (their writes share
// fsyncs by group commit), interleaving the groups, and records when each
// item is due to expire.
func (d *demo) write(ctx context.Context, c *engine.Container) error {
	type job struct {
		g  int
		id string
	}
	var jobs []job
	counts := make([]int, len(demoGroups))
	for len(jobs) < d.items {
		for i, g := range demoGroups {
			for range g.share {
				if counts[i] < d.groupSize(i) {
					jobs = append(jobs, job{i, fmt.Sprintf("%s-%04d", g.prefix, counts[i])})
					counts[i]++
				}
			}
		}
	}

	d.due, d.dueLabel, d.samples = map[int64]int{}, map[int64][]string{}, map[int64]string{}
	var (
		mu       sync.Mutex
		done     atomic.Int64
		firstErr error
		wg       sync.WaitGroup
		next     atomic.Int64
	)
	stopProgress := d.progress(func() string {
		return fmt.Sprintf("writing %d/%d items", done.Load(), d.items)
	})
	for range demoWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(jobs) || ctx.Err() != nil {
					return
				}
				j := jobs[i]
				g := demoGroups[j.g]
				pad := make([]byte, 96)
				rand.Read(pad)
				payload := hex.EncodeToString(pad) // random: compresses about 2:1, like real data
				doc := fmt.Sprintf(`{"id":%q,"user":"u%d","group":%q,"payload":"%s"`, j.id, i%97, g.label, payload)
				if g.ttl != 0 {
					doc += fmt.Sprintf(`,"ttl":%d`, g.ttl)
				}
				it, err := c.Create(ctx, []byte(doc+"}"))
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				eff := int64(g.ttl)
				if g.ttl == 0 {
					eff = demoDefaultTTL
				}
				if d.t0 == 0 || it.TS < d.t0 {
					d.t0 = it.TS
				}
				if eff > 0 {
					at := it.TS + eff
					d.due[at]++
					if !contains(d.dueLabel[at], g.label) {
						d.dueLabel[at] = append(d.dueLabel[at], g.label)
					}
					if _, ok := d.samples[at]; !ok {
						d.samples[at] = j.id
					}
				}
				mu.Unlock()
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	stopProgress()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// lastDue is the last instant at which an item is due to expire.
func (d *demo) lastDue() int64 {
	last := d.t0
	for at := range d.due {
		last = max(last, at)
	}
	return last
}

// nextDue is the first instant after now at which items are due.
func (d *demo) nextDue(now int64) (int64, bool) {
	var ats []int64
	for at := range d.due {
		if at > now {
			ats = append(ats, at)
		}
	}
	if len(ats) == 0 {
		return 0, false
	}
	sort.Slice(ats, func(i, j int) bool { return ats[i] < ats[j] })
	return ats[0], true
}

// expiryEvent describes what expired since the previous row, checking
// that the items due meanwhile are gone and a read of one of them fails.
func (d *demo) expiryEvent(ctx context.Context, c *engine.Container, st engine.Stats) string {
	now := time.Now().Unix()
	since := d.checked
	d.checked = now
	gone := d.prev.Items - st.Items
	var due int
	var labels []string
	var sample string
	for at, n := range d.due {
		if at > since && at <= now {
			due += n
			labels = append(labels, d.dueLabel[at]...)
			if sample == "" {
				sample = d.samples[at]
			}
		}
	}
	if gone == 0 && due == 0 {
		return ""
	}
	ev := fmt.Sprintf("%d expired", gone)
	if len(labels) > 0 {
		sort.Strings(labels)
		ev += " (" + strings.Join(labels, ", ") + ")"
	}
	if int64(due) == gone {
		ev += ", all on time"
	} else {
		ev += fmt.Sprintf(", %d were due", due)
	}
	if sample != "" {
		_, err := c.Read(ctx, sample)
		switch {
		case errors.Is(err, engine.ErrNotFound):
			ev += fmt.Sprintf("; read %s: not found", sample)
		case err == nil:
			ev += fmt.Sprintf("; read %s: still there!", sample)
		default:
			ev += fmt.Sprintf("; read %s: %v", sample, err)
		}
	}
	return ev
}

// waitUntil sleeps until t, drawing the progress line meanwhile.
func (d *demo) waitUntil(ctx context.Context, t time.Time) error {
	stop := d.progress(func() string {
		now := time.Now()
		s := fmt.Sprintf("+%.1fs", now.Sub(time.Unix(d.t0, 0)).Seconds())
		if at, ok := d.nextDue(now.Unix()); ok {
			s += fmt.Sprintf("  next: %d item(s) due to expire at +%ds, in %.1f s", d.due[at], at-d.t0, time.Until(time.Unix(at, 0)).Seconds())
		} else {
			s += "  nothing left to expire"
		}
		return s
	})
	defer stop()
	select {
	case <-time.After(time.Until(t)):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// progress redraws a one-line status from line every 100 ms, when out is a
// terminal, until the returned function is called.
func (d *demo) progress(line func() string) (stop func()) {
	if !d.live {
		return func() {}
	}
	spin := []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			d.setStatus(string(spin[i%len(spin)]) + " " + line())
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(quit)
		<-done
		d.setStatus("")
	}
}

func (d *demo) setStatus(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.status != "" || s != "" {
		fmt.Fprint(d.out, "\r\033[K"+s)
	}
	d.status = s
}

// println prints a line, above the progress line if there is one.
func (d *demo) println(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.status != "" {
		fmt.Fprint(d.out, "\r\033[K")
	}
	fmt.Fprintln(d.out, s)
	if d.status != "" {
		fmt.Fprint(d.out, d.status)
	}
}

// row prints one row of the table.
func (d *demo) row(st engine.Stats, event string) {
	d.println(fmt.Sprintf("%-6s %7d %12s %12s %8d   %s",
		fmt.Sprintf("+%ds", time.Now().Unix()-d.t0), st.Items, fmtBytes(st.LiveBytes), fmtBytes(st.DiskBytes), st.ExpiredPending, event))
}
