package engine

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine/internal/testutil"
)

// TestObservedExpirySurvivesCrash: once an answer has shown an item
// expired, no crash followed by a wall clock found behind can bring the
// item back, even when the answer came within the second before the crash
// (before the background tick persisted the clock). Each way of observing
// an expiry is tried: a read, a refused replace, a scan, a count, a query.
func TestObservedExpirySurvivesCrash(t *testing.T) {
	ctx := context.Background()
	observe := map[string]func(c *Container) error{
		"read": func(c *Container) error {
			_, err := c.Read(ctx, "x")
			return wantNotFound(err)
		},
		"replace refused": func(c *Container) error {
			_, err := c.Replace(ctx, []byte(`{"id":"x"}`))
			return wantNotFound(err)
		},
		"items": func(c *Container) error {
			for it, err := range c.Items(ctx) {
				if err != nil || it.ID == "x" {
					return errors.Join(err, errors.New("Items yields the expired item"))
				}
			}
			return nil
		},
		"stats": func(c *Container) error {
			if st := c.Stats(); st.Items != 1 {
				return errors.New("Stats counts the expired item")
			}
			return nil
		},
		"query count": func(c *Container) error {
			for it, err := range c.Query(ctx, `SELECT VALUE COUNT(1) FROM c`) {
				if err != nil || string(it.Body) != "1" {
					return errors.Join(err, errors.New("COUNT counts the expired item: "+string(it.Body)))
				}
			}
			return nil
		},
	}
	for name, see := range observe {
		t.Run(name, func(t *testing.T) {
			clk := newFakeClock(t0)
			dir := filepath.Join(t.TempDir(), "db")
			db := openTest(t, dir, clk, func(o *Options) { o.CompactionInterval = -1 })
			c := mustCreateContainer(t, db, ContainerProperties{ID: "c", DefaultTTL: TTL(-1)})
			for _, doc := range []string{`{"id":"x","ttl":5}`, `{"id":"keep"}`} {
				if _, err := c.Create(ctx, []byte(doc)); err != nil {
					t.Fatal(err)
				}
			}
			clk.Advance(3600) // x expired at t0+5; nothing has been written since
			if err := see(c); err != nil {
				t.Fatal(err)
			}
			// The crash: the directory as a kill leaves it, at once.
			crashed := filepath.Join(t.TempDir(), "crashed")
			db.sealMu.Lock()
			err := testutil.CopyDir(dir, crashed)
			db.sealMu.Unlock()
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			clk.Set(t0 + 1) // the wall clock found behind after the restart
			db = openTest(t, crashed, clk)
			defer db.Close()
			c, err = db.Container("c")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Read(ctx, "x"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("after the crash, item x, seen expired, reads back: %v", err)
			}
			if got := db.clock.highest(); got < t0+5 {
				t.Fatalf("after the crash the engine's now is %d, before x's expiry %d that an answer relied on", got, t0+5)
			}
		})
	}
}

func wantNotFound(err error) error {
	if !errors.Is(err, ErrNotFound) {
		return errors.Join(err, errors.New("want ErrNotFound"))
	}
	return nil
}

// TestClockRule drives the clock with random wall clock sequences (small
// steps, jumps forward and back by up to years, restarts from the floor as
// persisted, floors raised from disk) and checks the rule at every reading:
// the engine's now is the larger of the wall clock and the floor advanced
// by the time elapsed since the floor was set, which to an injected clock
// is how far the wall moved forward. Concretely, after a reading that gave
// h at wall x, a reading at wall w gives h + max(0, w-x): never less than
// before, equal to the wall when the wall is ahead, and once the wall is
// found behind, moving on exactly as the wall does.
func TestClockRule(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		clk := newFakeClock(t0)
		c := newClock(clk.Now, 0, slog.New(slog.DiscardHandler))
		h, x := c.now(), clk.Unix()
		if h != t0 {
			t.Fatalf("seed %d: a new clock with no floor reads %d at wall %d", seed, h, t0)
		}
		behind := false
		for step := range 300 {
			var what string
			switch p := rng.IntN(100); {
			case p < 50:
				what = "step"
				clk.Advance(int64(rng.IntN(3)))
			case p < 65:
				what = "jump back"
				clk.Advance(-int64(1 + rng.IntN(10*365*86400)))
			case p < 75:
				what = "jump forward"
				clk.Advance(int64(1 + rng.IntN(10*365*86400)))
			case p < 85:
				// A restart: the floor persisted is the high mark (or an
				// older one that the records' _ts raise again).
				what = "restart"
				c = newClock(clk.Now, c.highest()-int64(rng.IntN(3)), slog.New(slog.DiscardHandler))
				c.observe(h)
				w := clk.Unix()
				h, x = max(w, h), w
				if got := c.now(); got != h {
					t.Fatalf("seed %d step %d: after a restart with floor %d at wall %d the clock reads %d", seed, step, h, w, got)
				}
				continue
			default:
				// A floor raised from disk: no reading in between.
				what = "observe"
				o := h + int64(rng.IntN(5000))
				c.observe(o)
				clk.Advance(int64(rng.IntN(5)) - 2)
				w := clk.Unix()
				want := max(o, h+max(0, w-x))
				if got := c.now(); got != want {
					t.Fatalf("seed %d step %d: after observing %d (now %d at wall %d) the clock reads %d at wall %d, want %d", seed, step, o, h, x, got, w, want)
				}
				h, x = want, w
				continue
			}
			w := clk.Unix()
			want := h + max(0, w-x)
			got := c.now()
			switch {
			case got < h:
				t.Fatalf("seed %d step %d (%s): the clock ran backwards: %d after %d", seed, step, what, got, h)
			case got != want:
				t.Fatalf("seed %d step %d (%s): the clock reads %d at wall %d, want %d = %d moved on by the wall's forward move from %d", seed, step, what, got, w, want, h, x)
			case got < w:
				t.Fatalf("seed %d step %d (%s): the clock reads %d, behind the wall %d", seed, step, what, got, w)
			}
			behind = behind || w < got
			h, x = got, w
		}
		if !behind {
			t.Fatalf("seed %d: the wall clock was never behind", seed)
		}
	}
}

// TestClockElapsedMonotonic: with readings that carry a monotonic clock
// (as time.Now's do), the time elapsed is measured by it, not by the wall
// readings; without, by the wall readings.
func TestClockElapsedMonotonic(t *testing.T) {
	a := time.Now()
	b := a.Add(90 * time.Second) // both readings move on
	if got := elapsedSeconds(a, b); got != 90 {
		t.Fatalf("elapsed %d, want 90", got)
	}
	// Stripped of the monotonic reading, b's wall reading is what counts.
	if got := elapsedSeconds(a.Round(0), b.Round(0).Add(-30*time.Second)); got != 60 {
		t.Fatalf("elapsed by the wall readings %d, want 60", got)
	}
}

// TestClockWarnsWhenBehind: a wall clock found more than a few seconds
// behind the floor is logged at warning level, at Open and when it jumps
// back while running, at most once a minute of the engine's now.
func TestClockWarnsWhenBehind(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	count := func() int { return strings.Count(buf.String(), "wall clock is behind") }
	clk := newFakeClock(t0)
	c := newClock(clk.Now, t0+3600, log)
	c.checkBehind()
	if count() != 1 {
		t.Fatalf("a wall clock an hour behind the floor at Open: %d warnings, want 1: %s", count(), buf.String())
	}
	clk.Set(t0 + 3600 + 100)
	c = newClock(clk.Now, t0+3600, log) // a restart with the wall ahead of the floor
	c.checkBehind()
	c.now()
	clk.Advance(-3) // a jitter of seconds: no warning
	c.now()
	if count() != 1 {
		t.Fatalf("a wall clock 3 s back: %d warnings, want still 1", count())
	}
	for range 10 { // ten jumps back an hour, a second apart
		clk.Advance(-3600)
		c.now()
		clk.Advance(1)
		c.now()
	}
	if count() != 2 {
		t.Fatalf("ten jumps back within a minute of now: %d warnings, want 2 (rate-limited)", count())
	}
	clk.Advance(60)
	c.now()
	clk.Advance(-3600)
	c.now()
	if count() != 3 {
		t.Fatalf("a jump back a minute after the last warning: %d warnings, want 3", count())
	}
}

// BenchmarkClockNow is the cost of reading the engine's now, which every
// read, write and scan does, from one goroutine and from many at once.
func BenchmarkClockNow(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		c := newClock(time.Now, 0, slog.New(slog.DiscardHandler))
		for b.Loop() {
			c.now()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		c := newClock(time.Now, 0, slog.New(slog.DiscardHandler))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.now()
			}
		})
	})
}

// TestClockAheadDoesNotFreezeExpiry is the case of a database written with
// a clock years ahead and reopened with the real clock (time.Now, whose
// readings carry a monotonic clock): writes are stamped from the floor the
// clock left, and time goes on from there at the real rate, so an item with
// ttl 1 expires about a second later instead of years later.
func TestClockAheadDoesNotFreezeExpiry(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db")
	ahead := time.Now().Add(7 * 365 * 24 * time.Hour).Unix()
	db := openTest(t, dir, newFakeClock(ahead))
	mustCreateContainer(t, db, ContainerProperties{ID: "c", DefaultTTL: TTL(-1)})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.Container("c")
	if err != nil {
		t.Fatal(err)
	}
	opened := time.Now()
	it, err := c.Upsert(ctx, []byte(`{"id":"x","ttl":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if it.TS < ahead {
		t.Fatalf("_ts %d, below the floor %d the clock ahead left", it.TS, ahead)
	}
	// Without a deadline on the machine's speed: the item must be gone once
	// more than its ttl has elapsed since its _ts, whenever that is.
	for {
		_, err := c.Read(ctx, "x")
		if errors.Is(err, ErrNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Since(opened) > 30*time.Second {
			t.Fatalf("an item with ttl 1 written with the floor %d ahead of the wall is still live %v later", ahead, time.Since(opened))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := db.clock.highest(); got < it.TS+1 || got > ahead+int64(time.Since(opened)/time.Second)+1 {
		t.Fatalf("the engine's now %d: want from the item's expiry %d to the floor %d plus the real time elapsed", got, it.TS+1, ahead)
	}
}

// TestClockConcurrent reads the clock from many goroutines while the wall
// clock steps forward and jumps back. Every reading is at least every
// reading that completed before it began (now never runs backwards, across
// goroutines too), and at most hi: the first wall value raised to each
// later one and by every forward move of the wall. While the wall only
// steps forward, hi is the wall: readers racing across a step (one read
// the wall before it, another after) never push now ahead of it. Once the
// readers stop, the clock moves on exactly with the wall again.
func TestClockConcurrent(t *testing.T) {
	clk := newFakeClock(t0)
	c := newClock(clk.Now, 0, slog.New(slog.DiscardHandler))
	var hi, done atomic.Int64 // done: the highest reading completed
	var reads atomic.Int64
	hi.Store(t0)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var fails atomic.Int64
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				if i%64 == 0 {
					select {
					case <-stop:
						return
					default:
					}
				}
				lo := done.Load()
				n := c.now()
				if up := hi.Load(); n < lo || n > up {
					if fails.Add(1) <= 5 {
						t.Errorf("goroutine %d: now %d, want %d..%d", g, n, lo, up)
					}
				}
				testutil.AtomicMax(&done, n)
				reads.Add(1)
				runtime.Gosched() // readers busy on every P would starve the wall's mover
			}
		}()
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range clockConcurrentSteps {
		w := clk.Unix()
		switch p := rng.IntN(10); {
		case p < 7 || i < clockConcurrentSteps/2: // first forward steps alone: hi is the wall
			w++
		case p < 9:
			w -= int64(1 + rng.IntN(7200))
		default:
			w += int64(rng.IntN(7200))
		}
		if d := w - clk.Unix(); d > 0 {
			hi.Add(d)
		}
		testutil.AtomicMax(&hi, w)
		clk.Set(w)
		for r := reads.Load(); reads.Load() < r+4; { // let the readers race across it
			runtime.Gosched()
		}
	}
	close(stop)
	wg.Wait()
	h := c.now()
	clk.Advance(1000)
	if got := c.now(); got != h+1000 {
		t.Fatalf("after the readers stopped: now %d a 1000 s wall step after %d", got, h)
	}
}

// clockConcurrentSteps is how many times TestClockConcurrent moves the wall.
var clockConcurrentSteps = 20000
