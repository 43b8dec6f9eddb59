package engine

// Restarts and crashes of TestClockFaults: what the engine's now must be
// after Open, and that nothing an answer saw expire comes back.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
)

// checkGone checks, right after an Open whose engine's now is got, that it
// is at least every expiry instant an acknowledged answer relied on and
// that no version such an answer found expired is visible again. It counts
// the versions that expired after got but by high (the high mark before a
// crash) that no answer saw expire: a crash may lose that time, so they
// may be visible again.
func (r *cfRun) checkGone(ctx context.Context, what string, got, high int64) {
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
				if it, err := r.c.Read(ctx, id); !errors.Is(err, ErrNotFound) {
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
func (r *cfRun) restart(ctx context.Context, now int64) {
	t := r.t
	if err := r.db.Close(); err != nil {
		t.Fatal(err)
	}
	m, err := readManifest(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Clock != now {
		t.Errorf("after Close the MANIFEST's clock is %d, want the high mark %d", m.Clock, now)
	}
	if c := dbfile.ReadClockFile(r.dir).High; c > now {
		t.Errorf("after Close the CLOCK file says %d, above the high mark %d", c, now)
	}
	r.setWall(now - 10*3600)
	r.count(r.faults, "restarts with the wall 10h behind", 1)
	r.open(r.dir)
	r.checkGone(ctx, "after a restart with the wall 10h behind", r.db.clock.highest(), now)
	r.checkAt(ctx, now, "after a restart with the wall 10h behind")
	r.writeAt(ctx, now, "after a restart")
}

// writeAt writes one item and requires its _ts to be now.
func (r *cfRun) writeAt(ctx context.Context, now int64, what string) {
	w := r.workers[0]
	id := w.ids[0]
	name := fmt.Sprintf("w0.%d", w.writes)
	w.writes++
	it, err := r.c.Upsert(ctx, cfDoc(id, name, -1))
	if err != nil {
		r.t.Fatalf("%s: upsert: %v", what, err)
	}
	if it.TS != now {
		r.t.Errorf("%s: upsert got _ts %d with the wall at %d, want the high mark %d", what, it.TS, r.clk.Unix(), now)
	}
	w.model[id] = cfVersion{present: true, w: name, ts: it.TS, etag: it.ETag, ttl: -1, expire: cfExpire(it.TS, -1)}
	atomicMax(&r.lowNow, it.TS)
}

// durableClock is the clock floor that dir holds: the larger of its
// MANIFEST's clock and its CLOCK file (Open also counts the _ts it replays).
func durableClock(dir string) (manifestClock, clockFile int64, err error) {
	m, err := readManifest(dir)
	if err != nil {
		return 0, 0, err
	}
	return m.Clock, dbfile.ReadClockFile(dir).High, nil
}

// crash copies the open DB's directory, as a kill would leave it, closes
// the DB and opens the copy with the wall clock hours behind; high is the
// engine's high mark. With waitClock, the copy is taken once the durable
// floor (MANIFEST or CLOCK file) holds high; otherwise at once.
func (r *cfRun) crash(ctx context.Context, kind string, high int64, n int, waitClock bool) {
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
	to := filepath.Join(filepath.Dir(r.dir), "crash"+strconv.Itoa(n))
	r.db.sealMu.Lock() // no seal or compaction changes files during the copy
	err := mdlCopyDir(r.dir, to)
	r.db.sealMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	r.db.Close()
	mc, cf, err := durableClock(to)
	if err != nil {
		t.Fatal(err)
	}
	low := r.lowNow.Load()
	want := max(mc, cf, low)
	wall := high - 10*3600
	r.setWall(wall)
	r.count(r.faults, kind+", wall 10h behind", 1)
	r.open(to)
	got := r.db.clock.highest()
	switch {
	case waitClock && got != high:
		t.Errorf("%s: the engine's now is %d, want the high mark %d", kind, got, high)
	case got != max(want, wall):
		t.Errorf("%s: the engine's now is %d, want %d: max of the MANIFEST's clock %d, the CLOCK file %d, the highest acknowledged _ts or relied-on expiry %d and the wall %d",
			kind, got, max(want, wall), mc, cf, low, wall)
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
func (r *cfRun) pendingExpiry(now int64) (e int64, w *cfWorker, id string, ok bool) {
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
func (r *cfRun) jumpAndCrash(ctx context.Context, now int64, n int, observe bool) {
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
