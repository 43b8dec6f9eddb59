package engine_test

// Clock faults (the clock never runs backwards; README, "TTL rules"): the wall clock
// jumps back and forward by hours between and during operations, changed by
// a goroutine of its own while workers write and read, and across Close,
// Open and a simulated crash (the directory copied while the DB is open, as
// a kill leaves it).
//
// The engine's now is the larger of the wall clock and the floor advanced
// by the time elapsed since the floor was set, and with this injected clock
// (no monotonic reading) elapsed time is what the wall clock moved forward.
// What is checked, with the engine's now bounded from both sides:
//   - from above by hiNow: it starts at the first wall value and every
//     change of the wall raises it to the new value and by however much the
//     wall moved forward (raised before the clock is set, so every now the
//     engine can have computed is at most hiNow read after the operation
//     returns);
//   - from below by lowNow, the highest instant the engine has shown it
//     reached: an acknowledged write's _ts, or the expiry of an item an
//     acknowledged answer found expired.
//
// Every acknowledged write's _ts is at least lowNow as of its call (so _ts
// never decreases across successive acknowledged writes) and at most hiNow.
// A read never returns an item whose expiry is at or below lowNow (nothing
// expired comes back), always returns one whose expiry is above hiNow, and
// returns exactly the version last written; a conditional write (Replace,
// IfMatch) succeeds or is refused by the same rule. At quiet points the
// wall stands still, so the engine's now is known exactly (read once, it
// is bounded by hiNow and does not move until the wall does), and Read,
// Items and Stats must agree with the model at that instant, again a second of wall time later, and again after the wall is
// set hours back (the engine's now stays where it was). After Close the
// MANIFEST holds the high mark; after Open with the wall hours behind, the
// engine's now is that mark; after a crash it is the largest of the copy's
// MANIFEST clock, its CLOCK file and the _ts of every record the copy
// holds (Open replays them), and once the durable floor (the larger of the
// MANIFEST's clock and the CLOCK file) has caught up it is exactly the high
// mark. A put's _ts is an acknowledged one, at most lowNow; a delete's
// record is stamped with the engine's now too, but Delete does not return
// it, so the model bounds it by delHi (see clockFaultRun.crashed).
//
// An answer that relies on an item having expired (a read or delete that
// found it gone, a refused Replace or IfMatch, a quiet point's Items and
// Stats that left it out) must have made that expiry durable before it went
// out (DB.observeExpiry): after any restart or crash the engine's now is at
// least every such instant, and no version so found expired is visible
// again. A crash may still lose observed time in which nothing was seen to
// expire; the versions that expired unseen in it are counted, not judged.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
)

const (
	faultDefaultTTL   = 7200 // the container's DefaultTTL: two hours
	faultWorkers      = 4
	faultIDsPerWorker = 6
	faultOpsPerWorker = 120 // per worker and round
	faultRounds       = 10
)

// faultVersion is one item in the model: absent, or the version last written.
type faultVersion struct {
	present bool
	w       string
	ts      int64
	etag    string
	ttl     int32
	expire  int64
	// gone: an acknowledged answer relied on this version having expired
	// at expire. No restart or crash may bring it back.
	gone bool
}

func (v faultVersion) String() string {
	if !v.present {
		return "absent"
	}
	return fmt.Sprintf("%s _ts %d expiring at %d", v.w, v.ts, v.expire)
}

func expiresAt(ts int64, ttl int32) int64 {
	switch ttl {
	case 0:
		return ts + faultDefaultTTL
	case -1:
		return 1<<63 - 1
	}
	return ts + int64(ttl)
}

func faultDoc(id, w string, ttl int32) []byte {
	if ttl == 0 {
		return fmt.Appendf(nil, `{"id":%q,"w":%q}`, id, w)
	}
	return fmt.Appendf(nil, `{"id":%q,"w":%q,"ttl":%d}`, id, w, ttl)
}

// atomicMax raises a to v.
func atomicMax(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// clockFaultRun is one database under clock faults and what it must hold.
type clockFaultRun struct {
	t       *testing.T
	clk     *fakeClock
	hiNow   atomic.Int64 // the engine's now is known to be at most this
	lowNow  atomic.Int64 // the engine's now is known to be at least this
	relied  atomic.Int64 // the largest expiry instant an acknowledged answer relied on
	delHi   atomic.Int64 // since the last Open, the highest instant an acknowledged delete can have been stamped with
	jumps   atomic.Int64 // wall changes so far
	db      *engine.DB
	c       *engine.Container
	dir     string
	workers []*clockFaultWorker
	tune    func(*engine.Options) // if set, changes the options after r.options

	mu     sync.Mutex
	faults map[string]int // faults injected, by kind
	checks map[string]int // checks made, by kind
	fails  int
}

func (r *clockFaultRun) count(m map[string]int, kind string, n int) {
	r.mu.Lock()
	m[kind] += n
	r.mu.Unlock()
}

func (r *clockFaultRun) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fails++
	if r.fails <= 20 {
		r.t.Errorf(format, args...)
	}
}

// setWall sets the wall clock to v, raising hiNow first: to v, and by as
// much as the wall moves forward (the engine may count that as elapsed time
// from its floor).
func (r *clockFaultRun) setWall(v int64) {
	if d := v - r.clk.Unix(); d > 0 {
		r.hiNow.Add(d)
	}
	atomicMax(&r.hiNow, v)
	r.clk.Set(v)
	r.jumps.Add(1)
}

func (r *clockFaultRun) options(o *engine.Options) {
	o.SealThreshold = 16 << 10
	o.JournalSegmentSize = 16 << 10
	o.BlockSize = 1 << 10
	o.CompactionInterval = 2 * time.Millisecond
	o.RewriteThreshold = 0.3
	if r.tune != nil {
		r.tune(o)
	}
}

func (r *clockFaultRun) open(dir string) {
	r.t.Helper()
	r.dir = dir
	r.db = openTest(r.t, dir, r.clk, r.options)
	// Every record on disk is stamped at most the engine's now after Open,
	// which the caller's writeAt makes lowNow.
	r.delHi.Store(0)
	c, err := r.db.Container("cf")
	if errors.Is(err, engine.ErrNotFound) {
		c, err = r.db.CreateContainer(context.Background(), engine.ContainerProperties{ID: "cf", DefaultTTL: engine.TTL(faultDefaultTTL)})
	}
	if err != nil {
		r.t.Fatal(err)
	}
	r.c = c
}

// clockFaultWorker owns some ids: nobody else writes them, so their model is exact.
type clockFaultWorker struct {
	r      *clockFaultRun
	n      int
	rng    *rand.Rand
	ids    []string
	model  map[string]faultVersion
	writes int
}

func (w *clockFaultWorker) step(ctx context.Context) {
	r := w.r
	id := w.ids[w.rng.IntN(len(w.ids))]
	lo := r.lowNow.Load()
	jumps := r.jumps.Load()
	defer func() {
		if r.jumps.Load() != jumps {
			r.count(r.faults, "jumps during an operation", 1)
		}
	}()
	switch p := w.rng.IntN(20); {
	case p < 8:
		w.write(ctx, id, "upsert", false, lo)
	case p < 9:
		w.write(ctx, id, "upsert", true, lo)
	case p < 11:
		w.write(ctx, id, "replace", w.rng.IntN(2) == 0, lo)
	case p < 18:
		w.read(ctx, id, lo)
	default:
		w.remove(ctx, id, w.rng.IntN(2) == 0, lo)
	}
}

// write upserts or replaces id (kind), with IfMatch of the model's etag
// when ifMatch and the model has a version, and checks the outcome: an
// unconditional upsert always succeeds; a conditional write succeeds iff
// the version is live, and its refusal relies on the version having
// expired. lo is lowNow as of the call.
func (w *clockFaultWorker) write(ctx context.Context, id, kind string, ifMatch bool, lo int64) {
	r := w.r
	st := w.model[id]
	ttl := [...]int32{0, 0, -1, 2, 1800, 5 * 3600}[w.rng.IntN(6)]
	name := fmt.Sprintf("w%d.%d", w.n, w.writes)
	w.writes++
	var opts []engine.WriteOption
	ifMatch = ifMatch && st.present
	if ifMatch {
		opts = append(opts, engine.IfMatch(st.etag))
	}
	what := kind
	if ifMatch {
		what += " with IfMatch"
	}
	var it engine.Item
	var err error
	if kind == "replace" {
		it, err = r.c.Replace(ctx, faultDoc(id, name, ttl), opts...)
	} else {
		it, err = r.c.Upsert(ctx, faultDoc(id, name, ttl), opts...)
	}
	hi := r.hiNow.Load()
	conditional := kind == "replace" || ifMatch
	switch {
	case err == nil:
		r.count(r.checks, "acknowledged writes", 1)
		if conditional && (!st.present || st.expire <= lo) {
			r.fail("%s %s: succeeded, but the item is %v and the engine's now is at least %d", what, id, st, lo)
		}
		if it.TS < lo {
			r.fail("%s %s: _ts %d is below %d, an earlier acknowledged _ts or observed expiry: the clock ran backwards", what, id, it.TS, lo)
		}
		if it.TS > hi {
			r.fail("%s %s: _ts %d is above %d, the highest now the wall clock's moves allow", what, id, it.TS, hi)
		}
		atomicMax(&r.lowNow, it.TS)
		w.model[id] = faultVersion{present: true, w: name, ts: it.TS, etag: it.ETag, ttl: ttl, expire: expiresAt(it.TS, ttl)}
	case kind == "replace" && errors.Is(err, engine.ErrNotFound), kind == "upsert" && ifMatch && errors.Is(err, engine.ErrPreconditionFailed):
		r.count(r.checks, "refused conditional writes", 1)
		w.gone(what, id, st, hi)
	default:
		r.fail("%s %s: %v", what, id, err)
	}
}

// read reads id and checks the answer against the model; lo is lowNow as
// of the call.
func (w *clockFaultWorker) read(ctx context.Context, id string, lo int64) {
	r := w.r
	st := w.model[id]
	it, err := r.c.Read(ctx, id)
	hi := r.hiNow.Load()
	r.count(r.checks, "reads", 1)
	switch {
	case errors.Is(err, engine.ErrNotFound):
		w.gone("read", id, st, hi)
	case err != nil:
		r.fail("read %s: %v", id, err)
	default:
		if err := faultCheck(it, id, st, lo); err != nil {
			r.fail("read: %v", err)
		}
	}
}

// remove deletes id, with IfMatch of the model's etag when ifMatch and the
// model has a version, and checks the outcome; lo is lowNow as of the call.
func (w *clockFaultWorker) remove(ctx context.Context, id string, ifMatch bool, lo int64) {
	r := w.r
	st := w.model[id]
	var opts []engine.WriteOption
	what := "delete"
	if ifMatch && st.present {
		opts = append(opts, engine.IfMatch(st.etag))
		what += " with IfMatch"
	}
	err := r.c.Delete(ctx, id, opts...)
	hi := r.hiNow.Load()
	switch {
	case err == nil:
		r.count(r.checks, "acknowledged deletes", 1)
		atomicMax(&r.delHi, hi)
		if !st.present || st.expire <= lo {
			r.fail("%s %s: succeeded on an item that is %v (the engine's now is at least %d)", what, id, st, lo)
		}
		w.model[id] = faultVersion{}
	case errors.Is(err, engine.ErrNotFound):
		r.count(r.checks, "refused deletes", 1)
		w.gone(what, id, st, hi)
	default:
		r.fail("%s %s: %v", what, id, err)
	}
}

// gone takes in an acknowledged answer (what) that found id not live. If
// the model has a version, the answer relied on its having expired, which
// it must have by hi, the highest now the engine can have reached; the version is marked
// gone for good and its expiry becomes a floor of the engine's now.
func (w *clockFaultWorker) gone(what, id string, st faultVersion, hi int64) {
	r := w.r
	if !st.present {
		return
	}
	if st.expire > hi {
		r.fail("%s %s: not found, but %s expires at %d, after the highest now the engine can have reached (%d)", what, id, st.w, st.expire, hi)
		return
	}
	st.gone = true
	w.model[id] = st
	r.relyOn(st.expire)
}

// relyOn records that an acknowledged answer relied on the engine's now
// having reached expiry instant e.
func (r *clockFaultRun) relyOn(e int64) {
	atomicMax(&r.lowNow, e)
	atomicMax(&r.relied, e)
}

// faultCheck checks an item read back against the model's version of id,
// when the engine's now is at least lo.
func faultCheck(it engine.Item, id string, st faultVersion, lo int64) error {
	switch {
	case !st.present:
		return fmt.Errorf("%s: returned %s _ts %d, but it was deleted or found expired before", id, it.ETag, it.TS)
	case st.expire <= lo:
		return fmt.Errorf("%s: returned %s, which expired at %d; the engine's now is at least %d", id, st.w, st.expire, lo)
	case it.ID != id || it.TS != st.ts || it.ETag != st.etag:
		return fmt.Errorf("%s: returned %q _ts %d %s, want _ts %d %s", id, it.ID, it.TS, it.ETag, st.ts, st.etag)
	}
	if err := checkBodyIs(it, faultDoc(id, st.w, st.ttl)); err != nil {
		return fmt.Errorf("%s: %v", id, err)
	}
	return nil
}

// jumper moves the wall clock until stop is closed: small steps of the
// underlying time, steps back by minutes to hours (the wall stays that far
// behind until corrected), small steps forward, and now and then a
// correction of every step back (the wall moves forward by all of them at
// once) or a forward jump of an hour.
func (r *clockFaultRun) jumper(base int64, seed uint64, stop chan struct{}, done chan struct{}) {
	defer close(done)
	rng := rand.New(rand.NewPCG(seed, 11))
	var off int64
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		if i%16 == 0 {
			base++ // the underlying time moves on
		}
		switch p := rng.IntN(100); {
		case p < 40:
			r.count(r.faults, "steps of seconds", 1)
		case p < 60:
			off -= int64(60 * (1 + rng.IntN(59)))
			r.count(r.faults, "jumps back by minutes", 1)
		case p < 85:
			off -= 3600 * int64(1+rng.IntN(8))
			r.count(r.faults, "jumps back by hours", 1)
		case p < 98:
			off += int64(1 + rng.IntN(5))
			r.count(r.faults, "jumps forward by seconds", 1)
		case p < 99:
			off = 0
			r.count(r.faults, "corrections of every step back", 1)
		default:
			base += 3600 // forward by an hour, for good
			r.count(r.faults, "jumps forward by an hour", 1)
		}
		r.setWall(base + off)
		time.Sleep(20 * time.Microsecond)
	}
}

// round runs the workers against the jumping clock.
func (r *clockFaultRun) round(ctx context.Context, seed uint64) {
	stop, done := make(chan struct{}), make(chan struct{})
	go r.jumper(r.clk.Unix(), seed, stop, done)
	var wg sync.WaitGroup
	for _, w := range r.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range faultOpsPerWorker {
				w.step(ctx)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-done
}

// quiet checks, with no operation running, that Read, Items and Stats
// agree with the model at the engine's now h (settled at the wall clock
// where the round left it: a further reading moves nothing); that when the
// wall moves on by a second, whether or not it is behind, so does the
// engine's now, exactly; and that it stays there when the wall is set hours
// back. It returns the engine's now.
func (r *clockFaultRun) quiet(ctx context.Context, what string) int64 {
	x := r.clk.Unix()
	h := engine.Now(r.db)
	if hi := r.hiNow.Load(); h > hi {
		r.t.Errorf("%s: the engine's now is %d, above %d, the highest the wall clock's moves allow", what, h, hi)
	}
	r.checkAt(ctx, h, what+", settled")
	r.setWall(x + 1)
	r.checkAt(ctx, h+1, what+", wall a second on")
	r.setWall(x + 1 - 5*3600)
	r.count(r.faults, "jumps back by hours", 1)
	r.checkAt(ctx, h+1, what+", wall 5h back")
	return h + 1
}

// moveNowTo moves the wall clock forward so that the engine's now, now,
// settled at the present wall, becomes to once the engine reads the wall.
func (r *clockFaultRun) moveNowTo(now, to int64) { r.setWall(r.clk.Unix() + to - now) }

// checkAt checks that the engine's now is exactly now and that everything
// visible is what the model says is visible at now.
func (r *clockFaultRun) checkAt(ctx context.Context, now int64, what string) {
	t := r.t
	t.Helper()
	var ids []string
	want := map[string]faultVersion{}
	for _, w := range r.workers {
		for _, id := range w.ids {
			st := w.model[id]
			if st.present && st.expire > now {
				ids = append(ids, id)
				want[id] = st
			}
		}
	}
	sort.Strings(ids)
	for _, w := range r.workers {
		for _, id := range w.ids {
			it, err := r.c.Read(ctx, id)
			st, live := want[id]
			switch {
			case !live && !errors.Is(err, engine.ErrNotFound):
				t.Errorf("%s: read %s at %d = %v %s _ts %d, want not found", what, id, now, err, it.ETag, it.TS)
			case live && err != nil:
				t.Errorf("%s: read %s at %d: %v, want %s (expires %d)", what, id, now, err, st.w, st.expire)
			case live:
				if err := faultCheck(it, id, st, now-1); err != nil {
					t.Errorf("%s: read %v", what, err)
				}
			}
		}
	}
	var got []string
	for it, err := range r.c.Items(ctx) {
		if err != nil {
			t.Errorf("%s: Items: %v", what, err)
			break
		}
		got = append(got, it.ID)
		if st, ok := want[it.ID]; !ok {
			t.Errorf("%s: Items yielded %s _ts %d, which is absent or expired at %d", what, it.ID, it.TS, now)
		} else if err := faultCheck(it, it.ID, st, now-1); err != nil {
			t.Errorf("%s: Items: %v", what, err)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("%s: Items yielded %v, want %v", what, got, ids)
	}
	if st := r.c.Stats(); st.Items != int64(len(ids)) {
		t.Errorf("%s: Stats.Items = %d, want %d", what, st.Items, len(ids))
	}
	if err := engine.CheckIndex(r.c); err != nil {
		t.Errorf("%s: %v", what, err)
	}
	if h := engine.HighestNow(r.db); h != now {
		t.Errorf("%s: the engine's high mark is %d, want %d", what, h, now)
	}
	r.count(r.checks, "quiet-point checks (read every id, Items, Stats)", 1)
	// Items and Stats left out every version expired by now: they relied
	// on its expiry.
	for _, w := range r.workers {
		for _, id := range w.ids {
			if st := w.model[id]; st.present && st.expire <= now {
				st.gone = true
				w.model[id] = st
				r.relyOn(st.expire)
			}
		}
	}
}

// TestClockFaults runs rounds of concurrent work under a jumping wall
// clock, with quiet-point checks, restarts and crashes between them.
func TestClockFaults(t *testing.T) {
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("EBB_CLOCKFAULT_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (EBB_CLOCKFAULT_SEED replays the schedule, not the interleaving)", seed)
	replayOnFailure(t, "EBB_CLOCKFAULT_SEED", uint64(seed))
	rounds := faultRounds
	if testing.Short() {
		rounds = 4
	}
	r := &clockFaultRun{t: t, clk: newFakeClock(t0), faults: map[string]int{}, checks: map[string]int{}}
	r.hiNow.Store(t0)
	for i := range faultWorkers {
		w := &clockFaultWorker{r: r, n: i, rng: rand.New(rand.NewPCG(seed, uint64(i))), model: map[string]faultVersion{}}
		for k := range faultIDsPerWorker {
			w.ids = append(w.ids, fmt.Sprintf("w%d-%d", i, k))
		}
		r.workers = append(r.workers, w)
	}
	base := t.TempDir()
	r.open(filepath.Join(base, "db"))
	crashes := 0
	for i := range rounds {
		r.round(ctx, seed+uint64(i))
		if t.Failed() {
			break
		}
		now := r.quiet(ctx, fmt.Sprintf("round %d", i))
		switch i % 4 {
		case 0:
			if i > 0 {
				crashes++
				r.jumpAndCrash(ctx, now, crashes, true)
			}
		case 1:
			r.restart(ctx, now)
		case 2:
			crashes++
			r.crash(ctx, "crash after the durable clock caught up", now, crashes, true)
		case 3:
			crashes++
			r.jumpAndCrash(ctx, now, crashes, (i/4)%2 == 0)
		}
		if t.Failed() {
			break
		}
	}
	r.db.Close()
	t.Logf("faults injected: %v", r.faults)
	t.Logf("checks made: %v", r.checks)
}
