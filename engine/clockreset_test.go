package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/tool"
)

// resetDefaultTTL is the container's DefaultTTL. Its policy history starts
// when the container is created; a reset must start it over at the wall
// clock, or an item written after the reset at a time before the creation
// would expire at the creation instant, not resetDefaultTTL after its _ts.
const resetDefaultTTL = 600

// resetItem is the model of one item: its version, and whether it was written.
type resetItem struct {
	present bool
	ts      int64
	etag    string
	expire  int64
}

// resetRun is a database under a random wall clock, with its model: the
// engine's now (h, read at wall x) and every item.
type resetRun struct {
	t      *testing.T
	seed   uint64
	step   int
	rng    *rand.Rand
	clk    *fakeClock
	dir    string
	db     *engine.DB
	c      *engine.Container
	h, x   int64
	items  map[string]resetItem
	seen   map[string]map[string]bool // versions (etags) found expired, by id
	writes int
	resets int
}

func (r *resetRun) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("seed %d step %d: %s", r.seed, r.step, fmt.Sprintf(format, args...))
}

func (r *resetRun) open() {
	r.t.Helper()
	r.db = openTest(r.t, r.dir, r.clk, func(o *engine.Options) { o.SealThreshold = 4 << 10; o.CompactionInterval = -1 })
	c, err := r.db.Container("c")
	if errors.Is(err, engine.ErrNotFound) {
		c, err = r.db.CreateContainer(context.Background(), engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(resetDefaultTTL)})
	}
	if err != nil {
		r.fatalf("%v", err)
	}
	r.c = c
}

// setWall moves the wall clock and has the engine read it, which must
// move its now on by the wall's forward move.
func (r *resetRun) setWall(w int64) {
	r.t.Helper()
	r.clk.Set(w)
	want := r.h + max(0, w-r.x)
	if got := engine.Now(r.db); got != want {
		r.fatalf("wall %d -> %d: the engine's now is %d, want %d", r.x, w, got, want)
	}
	r.h, r.x = want, w
}

func (r *resetRun) upsert(id string, ttl int32) {
	r.t.Helper()
	doc := fmt.Sprintf(`{"id":%q,"n":%d}`, id, r.writes)
	if ttl != 0 {
		doc = fmt.Sprintf(`{"id":%q,"n":%d,"ttl":%d}`, id, r.writes, ttl)
	}
	r.writes++
	it, err := r.c.Upsert(context.Background(), []byte(doc))
	if err != nil {
		r.fatalf("upsert %s: %v", id, err)
	}
	if it.TS != r.h {
		r.fatalf("upsert %s: _ts %d, want the engine's now %d (wall %d)", id, it.TS, r.h, r.x)
	}
	e := int64(1<<63 - 1)
	switch {
	case ttl > 0:
		e = it.TS + int64(ttl)
	case ttl == 0:
		e = it.TS + resetDefaultTTL
	}
	r.items[id] = resetItem{present: true, ts: it.TS, etag: it.ETag, expire: e}
}

// readAll reads every id and checks it against the model at the engine's
// now; a version found expired is remembered.
func (r *resetRun) readAll(what string) {
	r.t.Helper()
	if err := engine.CheckIndex(r.c); err != nil {
		r.fatalf("%s: %v", what, err)
	}
	for id, st := range r.items {
		it, err := r.c.Read(context.Background(), id)
		live := st.present && st.expire > r.h
		switch {
		case err == nil && r.seen[id][it.ETag]:
			r.fatalf("%s: %s %s _ts %d, found expired before, is visible again at %d", what, id, it.ETag, it.TS, r.h)
		case err == nil && !live:
			r.fatalf("%s: read %s = _ts %d, want not found at %d (%+v)", what, id, it.TS, r.h, st)
		case err == nil && (it.ETag != st.etag || it.TS != st.ts):
			r.fatalf("%s: read %s = %s _ts %d, want %s _ts %d", what, id, it.ETag, it.TS, st.etag, st.ts)
		case err != nil && live:
			r.fatalf("%s: read %s: %v, want _ts %d expiring at %d (now %d)", what, id, err, st.ts, st.expire, r.h)
		case err != nil && !errors.Is(err, engine.ErrNotFound):
			r.fatalf("%s: read %s: %v", what, id, err)
		case err != nil && st.present:
			if r.seen[id] == nil {
				r.seen[id] = map[string]bool{}
			}
			r.seen[id][st.etag] = true
		}
	}
}

func (r *resetRun) restart() {
	r.t.Helper()
	if err := r.db.Close(); err != nil {
		r.fatalf("close: %v", err)
	}
	r.open()
	r.h, r.x = max(r.h, r.clk.Unix()), r.clk.Unix()
	if got := engine.HighestNow(r.db); got != r.h {
		r.fatalf("after a restart at wall %d the engine's now is %d, want %d", r.x, got, r.h)
	}
}

// reset closes the database, resets its clock to the wall and opens it.
func (r *resetRun) reset() {
	r.t.Helper()
	if err := r.db.Close(); err != nil {
		r.fatalf("close: %v", err)
	}
	w := r.clk.Unix()
	from := max(r.h, w)
	res, err := engine.ResetClock(r.dir, &engine.Options{Clock: r.clk.Now})
	if err != nil {
		r.fatalf("ResetClock: %v", err)
	}
	to := max(w, from)
	if w < from {
		to = w
		r.resets++
		for id, st := range r.items {
			if st.present && st.expire <= from {
				st.present = false // removed: never visible again
				r.items[id] = st
			}
		}
	}
	if res.From != from || res.To != to {
		r.fatalf("ResetClock at wall %d with the clock at %d = %+v, want from %d to %d", w, from, res, from, to)
	}
	if rep, err := tool.InspectWithOptions(r.dir, &tool.InspectOptions{Clock: r.clk.Now}); err != nil || rep.Now != to {
		r.fatalf("Inspect after the reset: now %v (%v), want %d", rep, err, to)
	}
	if rep, err := tool.Verify(r.dir); err != nil || !rep.Clean() {
		r.fatalf("Verify after the reset: %v %+v", err, rep)
	}
	r.h, r.x = to, w
	r.open()
	if got := engine.HighestNow(r.db); got != to {
		r.fatalf("after the reset the engine's now is %d, want the wall %d", got, to)
	}
	r.readAll("after a reset")
}

// TestResetClockKeepsExpiryFinal runs random wall clock sequences (steps,
// jumps forward and back by up to years, restarts) over a database with
// items of many ttls, with clock resets among them. At every step the
// engine's now is the model's (see TestClockRule) and every item is visible
// exactly when the model says; a version once found expired is never
// visible again, before or after a reset, and after a reset new items
// expire on the wall clock.
func TestResetClockKeepsExpiryFinal(t *testing.T) {
	ttls := []int32{0, -1, 1, 5, 60, 3600, 86400, 3 * 365 * 86400}
	seeds := uint64(12)
	if testing.Short() {
		seeds = 4
	}
	for seed := range seeds {
		r := &resetRun{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 12)), clk: newFakeClock(t0),
			dir: filepath.Join(t.TempDir(), "db"), items: map[string]resetItem{}, seen: map[string]map[string]bool{}}
		r.open()
		r.h, r.x = engine.Now(r.db), t0
		for r.step = 0; r.step < 120; r.step++ {
			switch p := r.rng.IntN(100); {
			case p < 35:
				r.upsert(fmt.Sprintf("i%d", r.rng.IntN(12)), ttls[r.rng.IntN(len(ttls))])
			case p < 55:
				r.readAll("read")
			case p < 70:
				r.setWall(r.x + int64(r.rng.IntN(120)))
			case p < 78:
				r.setWall(r.x - int64(1+r.rng.IntN(5*365*86400)))
			case p < 84:
				r.setWall(r.x + int64(1+r.rng.IntN(5*365*86400)))
			case p < 92:
				r.restart()
			default:
				r.reset()
			}
		}
		// A last reset with the wall far behind, then a new item with a
		// ttl expires on the wall clock.
		r.setWall(r.x - 365*86400)
		r.reset()
		r.upsert("fresh", 5)
		if r.items["fresh"].ts != r.clk.Unix() {
			r.fatalf("after a reset a new item's _ts is %d, want the wall %d", r.items["fresh"].ts, r.clk.Unix())
		}
		r.setWall(r.x + 4)
		r.readAll("4 s after the reset")
		r.setWall(r.x + 1)
		if _, err := r.c.Read(context.Background(), "fresh"); !errors.Is(err, engine.ErrNotFound) {
			r.fatalf("an item with ttl 5 written after a reset reads %v 5 s later on the wall clock", err)
		}
		r.readAll("5 s after the reset")
		r.restart()
		r.readAll("after the last restart")
		if r.resets == 0 {
			t.Fatalf("seed %d: no reset took the clock back", seed)
		}
		r.db.Close()
	}
}
