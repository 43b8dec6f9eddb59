package engine_test

// Restarts and crashes of TestClockFaults: what the engine's now must be
// after Open, and that nothing an answer saw expire comes back.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/internal/testutil"
	"github.com/ebbdb/ebb/engine/tool"
)

// checkGone checks, right after an Open whose engine's now is got, that it
// is at least every expiry instant an acknowledged answer relied on and
// that no version such an answer found expired is visible again. It counts
// the versions that expired after got but by high (the high mark before a
// crash) that no answer saw expire: a crash may lose that time, so they
// may be visible again.
func (r *clockFaultRun) checkGone(ctx context.Context, what string, got, high int64) {
	t := r.t
	t.Helper()
	if e := r.relied.Load(); got < e {
		t.Errorf("%s: the engine's now after Open is %d, below %d, the expiry of an item an acknowledged answer found expired", what, got, e)
	}
	stayed, unseen := 0, 0
	for _, w := range r.workers {
		for _, id := range w.ids {
			st := w.model[id]
			switch {
			case !st.present:
			case st.gone:
				stayed++
				if it, err := r.c.Read(ctx, id); !errors.Is(err, engine.ErrNotFound) {
					t.Errorf("%s: %s (%v), which an acknowledged answer found expired, is visible again: read = %s _ts %d, %v",
						what, id, st, it.ETag, it.TS, err)
				}
			case st.expire > got && st.expire <= high:
				unseen++
			}
		}
	}
	r.count(r.checks, "versions found expired before a restart or crash, still gone after it", stayed)
	r.count(r.checks, "versions that expired unseen in observed time a crash lost (may be visible again)", unseen)
}

// restart closes the DB and opens it again with the wall clock hours
// behind the high mark.
func (r *clockFaultRun) restart(ctx context.Context, now int64) {
	t := r.t
	if err := r.db.Close(); err != nil {
		t.Fatal(err)
	}
	m, err := engine.ReadManifest(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Clock != now {
		t.Errorf("after Close the MANIFEST's clock is %d, want the high mark %d", m.Clock, now)
	}
	if c := engine.ClockFileHigh(r.dir); c > now {
		t.Errorf("after Close the CLOCK file says %d, above the high mark %d", c, now)
	}
	r.setWall(now - 10*3600)
	r.count(r.faults, "restarts with the wall 10h behind", 1)
	r.open(r.dir)
	r.checkGone(ctx, "after a restart with the wall 10h behind", engine.HighestNow(r.db), now)
	r.checkAt(ctx, now, "after a restart with the wall 10h behind")
	r.writeAt(ctx, now, "after a restart")
}

// writeAt writes one item and requires its _ts to be now.
func (r *clockFaultRun) writeAt(ctx context.Context, now int64, what string) {
	w := r.workers[0]
	id := w.ids[0]
	name := fmt.Sprintf("w0.%d", w.writes)
	w.writes++
	it, err := r.c.Upsert(ctx, faultDoc(id, name, -1))
	if err != nil {
		r.t.Fatalf("%s: upsert: %v", what, err)
	}
	if it.TS != now {
		r.t.Errorf("%s: upsert got _ts %d with the wall at %d, want the high mark %d", what, it.TS, r.clk.Unix(), now)
	}
	w.model[id] = faultVersion{present: true, w: name, ts: it.TS, etag: it.ETag, ttl: -1, expire: expiresAt(it.TS, -1)}
	atomicMax(&r.lowNow, it.TS)
}

// durableClock is the clock floor that dir holds: the larger of its
// MANIFEST's clock and its CLOCK file (Open also counts the _ts it replays).
func durableClock(dir string) (manifestClock, clockFile int64, err error) {
	m, err := engine.ReadManifest(dir)
	if err != nil {
		return 0, 0, err
	}
	return m.Clock, engine.ClockFileHigh(dir), nil
}

// crash copies the open DB's directory, as a kill would leave it, closes
// the DB and opens the copy with the wall clock hours behind; high is the
// engine's high mark. With waitClock, the copy is taken once the durable
// floor (MANIFEST or CLOCK file) holds high; otherwise at once.
func (r *clockFaultRun) crash(ctx context.Context, kind string, high int64, n int, waitClock bool) {
	t := r.t
	if waitClock {
		deadline := time.Now().Add(5 * time.Second)
		for {
			mc, cf, err := durableClock(r.dir)
			if err != nil {
				t.Fatal(err)
			}
			if max(mc, cf) >= high {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: 5s after the high mark reached %d the MANIFEST's clock is %d and the CLOCK file says %d; the sealer persists it every second",
					kind, high, mc, cf)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	to := r.crashCopy(n)
	r.crashed(ctx, kind, to, high, waitClock)
}

// crashCopy copies the open DB's directory, as a kill would leave it, to
// crash<n> beside it, closes the DB and returns the copy's path.
func (r *clockFaultRun) crashCopy(n int) string {
	to := filepath.Join(filepath.Dir(r.dir), "crash"+strconv.Itoa(n))
	release := engine.HoldSeals(r.db) // no seal or compaction changes files during the copy
	err := testutil.CopyDir(r.dir, to)
	release()
	if err != nil {
		r.t.Fatal(err)
	}
	r.db.Close()
	return to
}

// crashed opens to, a copy crashCopy took, with the wall clock 10h behind
// high (the engine's high mark when it was taken), and checks the engine's
// now: high with waitClock (the durable floor had caught up); otherwise
// exactly the highest time the copy holds, as the offline tool reads it
// without opening it (tool.Inspect: MANIFEST, CLOCK file, every record's
// _ts), and within what the model knows of that:
//   - at least the largest of the MANIFEST's clock, the CLOCK file, lowNow
//     (every acknowledged _ts and relied-on expiry) and the wall;
//   - above that only by a delete's stamp: a delete's record carries the
//     engine's now at the delete like a put's, and Open raises the floor to
//     every _ts it replays, tombstones' included (the engine had reached
//     that second and acknowledged a change at it, so the clock must not
//     come back below it), but Delete returns no _ts, so the model knows
//     the stamp only to be at most delHi.
func (r *clockFaultRun) crashed(ctx context.Context, kind, to string, high int64, waitClock bool) {
	t := r.t
	mc, cf, err := durableClock(to)
	if err != nil {
		t.Fatal(err)
	}
	low, delHi := r.lowNow.Load(), r.delHi.Load()
	wall := high - 10*3600
	rep, err := tool.InspectWithOptions(to, &tool.InspectOptions{Clock: func() time.Time { return time.Unix(wall, 0) }})
	if err != nil {
		t.Fatalf("%s: inspect the copy: %v", kind, err)
	}
	want := max(mc, cf, low, wall)
	r.setWall(wall)
	r.count(r.faults, kind+", wall 10h behind", 1)
	r.open(to)
	got := engine.HighestNow(r.db)
	switch {
	case waitClock && got != high:
		t.Errorf("%s: the engine's now is %d, want the high mark %d", kind, got, high)
	case got != rep.Now:
		t.Errorf("%s: the engine's now is %d, want %d, the highest time the copy holds (MANIFEST, CLOCK file, every record's _ts)",
			kind, got, rep.Now)
	case got < want:
		t.Errorf("%s: the engine's now is %d, want at least %d: max of the MANIFEST's clock %d, the CLOCK file %d, the highest acknowledged _ts or relied-on expiry %d and the wall %d",
			kind, got, want, mc, cf, low, wall)
	case got > max(want, delHi):
		t.Errorf("%s: the engine's now is %d, above both %d (max of the MANIFEST's clock %d, the CLOCK file %d, the highest acknowledged _ts or relied-on expiry %d and the wall %d) and %d, the highest stamp an acknowledged delete can have",
			kind, got, want, mc, cf, low, wall, delHi)
	case got > want:
		r.count(r.checks, "crashes whose floor a delete's stamp raised above every acknowledged _ts", 1)
	}
	r.checkGone(ctx, kind, got, high)
	if got < high {
		r.lowNow.Store(got) // the time after got was lost, and nothing was seen to expire in it
	}
	r.checkAt(ctx, got, kind)
	r.writeAt(ctx, got, kind)
}

// pendingExpiry returns the earliest expiry after now of a version in the
// model, the worker that owns it and its id; ok is false if there is none
// within six hours.
func (r *clockFaultRun) pendingExpiry(now int64) (e int64, w *clockFaultWorker, id string, ok bool) {
	for _, wk := range r.workers {
		for _, k := range wk.ids {
			st := wk.model[k]
			if st.present && st.expire > now && st.expire <= now+6*3600 && (!ok || st.expire < e) {
				e, w, id, ok = st.expire, wk, k, true
			}
		}
	}
	return e, w, id, ok
}

// jumpAndCrash moves the wall clock past the earliest pending expiry (or
// by 30 seconds if there is none) with no answer but one read, and crashes
// at once. With observe, the read is of the item that expires, which must
// be found expired, so its expiry must survive the crash; without, it is of
// an item that does not expire then, and the time jumped may be lost.
func (r *clockFaultRun) jumpAndCrash(ctx context.Context, now int64, n int, observe bool) {
	t := r.t
	e, w, id, ok := r.pendingExpiry(now)
	if !ok {
		e, w, id, observe = now+30, r.workers[0], r.workers[0].ids[0], false
	}
	if !observe {
		// Any version but those expiring exactly at e: reading one that
		// expired by now relies on an expiry already durable.
		for _, wk := range r.workers {
			for _, k := range wk.ids {
				if st := wk.model[k]; !st.present || st.expire != e {
					w, id = wk, k
				}
			}
		}
	}
	r.moveNowTo(now, e)
	w.read(ctx, id, r.lowNow.Load())
	kind := "crash right after the clock moved, nothing seen to expire"
	if observe {
		kind = "crash right after a read found an item expired"
		if st := w.model[id]; !st.gone {
			t.Errorf("read %s at its expiry %d: found it live (%v)", id, e, st)
		}
	}
	r.crash(ctx, kind, e, n, false)
}

// TestClockFaultsCrashAfterDelete is the crash TestClockFaults met about
// once in ten runs (seed 1795756006941433035, in its crash right after the
// clock moved with nothing seen to expire), made deterministic: the last
// acknowledged change before the crash is a delete, one second after the
// last acknowledged _ts, and the CLOCK file holds that _ts (the background
// tick ran between the two). Open replays the delete's record and raises
// the floor to its stamp, a second past every _ts an answer gave: the
// engine's now after the crash, and the next write's _ts, are the delete's
// second, never below it.
func TestClockFaultsCrashAfterDelete(t *testing.T) {
	ctx := context.Background()
	r := &clockFaultRun{t: t, clk: newFakeClock(t0), faults: map[string]int{}, checks: map[string]int{}}
	r.hiNow.Store(t0)
	w := &clockFaultWorker{r: r, rng: rand.New(rand.NewPCG(1, 0)), ids: []string{"w0-0"}, model: map[string]faultVersion{}}
	r.workers = []*clockFaultWorker{w}
	r.tune = func(o *engine.Options) {
		// No seal before the copy: the delete stays in the journal (a seal
		// would raise the MANIFEST's clock to its stamp).
		o.SealThreshold = 64 << 20
		o.CompactionInterval = time.Hour
	}
	r.open(filepath.Join(t.TempDir(), "db"))
	r.writeAt(ctx, t0, "write at t0") // lowNow t0
	r.setWall(t0 + 1)
	w.remove(ctx, "w0-0", false, r.lowNow.Load()) // stamped t0+1, which Delete does not return
	if t.Failed() {
		t.FailNow()
	}
	high := engine.Now(r.db)
	if high != t0+1 {
		t.Fatalf("the engine's now is %d, want %d", high, t0+1)
	}
	to := r.crashCopy(1)
	clockFile := dbfile.ClockFile{High: t0}.Encode() // as the tick wrote it after the write, before the delete
	if err := os.WriteFile(filepath.Join(to, engine.ClockName), clockFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if mc, cf, err := durableClock(to); err != nil || max(mc, cf) != t0 || r.lowNow.Load() != t0 {
		t.Fatalf("before Open: the MANIFEST's clock %d, the CLOCK file %d, lowNow %d (%v); want the largest %d, so that only the delete's stamp is above",
			mc, cf, r.lowNow.Load(), err, t0)
	}
	r.crashed(ctx, "crash right after a delete", to, high, false)
	if got := engine.HighestNow(r.db); got != t0+1 {
		t.Errorf("after the crash and a write the engine's now is %d, want the delete's second %d", got, t0+1)
	}
	if n := r.checks["crashes whose floor a delete's stamp raised above every acknowledged _ts"]; n != 1 {
		t.Errorf("the crash's floor was raised by a delete's stamp %d times, want 1", n)
	}
	if err := r.db.Close(); err != nil {
		t.Fatal(err)
	}
}
