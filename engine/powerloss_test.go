package engine_test

// Power-loss tests (an acknowledged write survives; an unacknowledged one is
// whole or absent). SIGKILL (crash_test.go) keeps
// the page cache; a power loss does not. Each round opens the database on a
// vfs.CrashFS, runs a random workload (creates, upserts, replaces and
// deletes with and without ttl, batches, DefaultTTL changes, Compact calls,
// background seals and compactions, a fake clock that moves), cuts the power
// at a random moment, closes the DB, rewrites the folder to what was
// durable (unsynced bytes cut, zeroed, garbled or partly kept; undurable
// folder entries undone), reopens it on the OS and checks it:
//
//   - every acknowledged write is there, unless a later write of the same
//     worker (acknowledged or in flight) superseded it;
//   - the write in flight at the cut is whole or absent (a batch all or
//     nothing);
//   - no deleted or expired item is back.
//
// Rounds with Options.NoSync show what that mode loses: only acknowledged
// writes that were not yet synced, a suffix of each worker's writes, never
// part of one.
//
// EBB_POWERLOSS_ROUNDS sets the number of rounds (default 100, 20 with
// -short); EBB_POWERLOSS_SEED replays a run's random choices (the timing
// of the cut still varies).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/vfs"
)

const (
	powerLossWorkers   = 3
	idsPerWorker       = 40
	powerLossContainer = "p"
)

// powerLossDefaultTTLs are the DefaultTTLs a round switches between: all long
// enough that items without their own ttl never expire in a test run, so
// that a change in flight cannot make the model ambiguous.
var powerLossDefaultTTLs = []int32{-1, 100_000, 200_000}

// powerLossState is an item as the model knows it; v 0 means absent.
type powerLossState struct {
	v   int
	ts  int64 // _ts, or for a write in flight the clock when it started
	ttl int32 // the item's own ttl: 0 absent (the default applies), -1, n
}

// writeKind is what a worker's write did.
type writeKind uint8

const (
	writeCreate writeKind = iota + 1
	writeUpsert
	writeReplace
	writeDelete
)

func (k writeKind) String() string {
	return [...]string{"", "create", "upsert", "replace", "delete"}[k]
}

// powerLossOp is one write a worker made.
type powerLossOp struct {
	kind   writeKind
	ids    []string // one, or a batch's
	vals   []int    // per id: the value written (0 for a delete)
	ttl    int32
	ts     int64 // _ts when acknowledged, the clock at the start otherwise
	acked  bool  // returned nil before the power was cut
	maybe  bool  // in flight at the cut: may or may not have happened
	result error
}

// powerLossBody is the document of value v: its padding is a function of v, so a
// torn or mixed body shows.
func powerLossBody(id string, v int, ttl int32) []byte {
	doc := fmt.Sprintf(`{"id":%q,"v":%d,"pad":%q`, id, v, powerLossPad(v))
	if ttl != 0 {
		doc += fmt.Sprintf(`,"ttl":%d`, ttl)
	}
	return []byte(doc + "}")
}

func powerLossPad(v int) string { return strings.Repeat(string(rune('a'+v%26)), v%300) }

// semanticState reports whether err is a refusal decided before anything was
// written: the op certainly did not happen.
func semanticState(err error) bool {
	return errors.Is(err, engine.ErrConflict) || errors.Is(err, engine.ErrNotFound) || errors.Is(err, engine.ErrPreconditionFailed)
}

type powerLossWorld struct {
	t     *testing.T
	dir   string
	clk   *fakeClock
	rnd   *rand.Rand
	vals  atomic.Int64
	base  map[string]powerLossState // what the previous round left, checked
	ttlOK []int32                   // DefaultTTLs the container may have (last acknowledged first)

	log powerLossLog // the engine's log of the round, shown when it fails

	rounds, opsChecked, ackedChecked, inFlight, inFlightApplied int
	noSyncRounds, noSyncLost                                    int
}

func TestPowerLoss(t *testing.T) {
	rounds := 100
	if testing.Short() {
		rounds = 20
	}
	if s := os.Getenv("EBB_POWERLOSS_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("EBB_POWERLOSS_ROUNDS=%q: %v", s, err)
		}
		rounds = n
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("EBB_POWERLOSS_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (EBB_POWERLOSS_SEED)", seed)
	replayOnFailure(t, "EBB_POWERLOSS_SEED", uint64(seed))
	w := &powerLossWorld{
		t: t, dir: filepath.Join(t.TempDir(), "db"), clk: newFakeClock(t0),
		rnd: rand.New(rand.NewPCG(seed, 7)), base: map[string]powerLossState{},
	}
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	db := openTest(t, w.dir, w.clk)
	mustCreateContainer(t, db, engine.ContainerProperties{ID: powerLossContainer, DefaultTTL: engine.TTL(powerLossDefaultTTLs[0])})
	w.ttlOK = []int32{powerLossDefaultTTLs[0]}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for r := range rounds {
		noSync := r%4 == 3
		w.round(r, noSync)
		if t.Failed() {
			return
		}
	}
	t.Logf("%d rounds: %d writes checked (%d acknowledged), %d in flight at the cut (%d of them applied)",
		w.rounds, w.opsChecked, w.ackedChecked, w.inFlight, w.inFlightApplied)
	t.Logf("%d NoSync rounds lost %d acknowledged writes in all (each a whole write, at the end of its worker's sequence)",
		w.noSyncRounds, w.noSyncLost)
}

// round runs one workload, cuts the power and checks what comes back.
func (w *powerLossWorld) round(r int, noSync bool) {
	t := w.t
	w.log.reset()
	cfs, err := vfs.NewCrashFS(w.dir)
	if err != nil {
		t.Fatal(err)
	}
	db, err := engine.Open(w.dir, &engine.Options{
		Clock: w.clk.Now, FS: cfs, NoSync: noSync,
		JournalSegmentSize: 8 << 10, SealThreshold: 24 << 10,
		CompactionInterval: 20 * time.Millisecond, RewriteThreshold: 0.3,
		Logger: slog.New(slog.NewTextHandler(&w.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatalf("round %d: Open: %v", r, err)
	}
	c, err := db.Container(powerLossContainer)
	if err != nil {
		t.Fatal(err)
	}

	var cut atomic.Bool
	ops := make([][]powerLossOp, powerLossWorkers)
	var wg sync.WaitGroup
	for wk := range powerLossWorkers {
		wg.Add(1)
		seed := w.rnd.Uint64()
		go func() {
			defer wg.Done()
			ops[wk] = w.work(c, wk, rand.New(rand.NewPCG(seed, uint64(wk))), &cut)
		}()
	}
	// The main goroutine moves the clock, changes the DefaultTTL and
	// compacts, then cuts the power.
	var ttlMaybe []int32
	deadline := time.Now().Add(time.Duration(5+w.rnd.IntN(60)) * time.Millisecond)
	for time.Now().Before(deadline) {
		switch w.rnd.IntN(10) {
		case 0:
			ttl := powerLossDefaultTTLs[w.rnd.IntN(len(powerLossDefaultTTLs))]
			err := c.SetProperties(context.Background(), engine.ContainerProperties{ID: powerLossContainer, DefaultTTL: engine.TTL(ttl)})
			switch {
			case err == nil && !cut.Load():
				w.ttlOK = []int32{ttl}
			case err == nil || !semanticState(err):
				ttlMaybe = append(ttlMaybe, ttl)
			}
		case 1:
			c.Compact(context.Background())
		default:
			w.clk.Advance(1)
		}
		time.Sleep(time.Duration(w.rnd.IntN(3)) * time.Millisecond)
	}
	cut.Store(true)
	cfs.Crash()
	wg.Wait()
	db.Close() // fails: the power is gone; it must still release everything
	tail := vfs.Tail(w.rnd.IntN(4))
	if err := cfs.Apply(tail, w.rnd); err != nil {
		t.Fatalf("round %d: Apply: %v", r, err)
	}

	db, err = engine.Open(w.dir, &engine.Options{Clock: w.clk.Now, CompactionInterval: -1})
	if err != nil {
		t.Fatalf("round %d (noSync=%v, tail %d): reopen after the power loss: %v", r, noSync, tail, err)
	}
	defer db.Close()
	c, err = db.Container(powerLossContainer)
	if err != nil {
		t.Fatalf("round %d: %v", r, err)
	}
	w.check(r, c, ops, noSync)
	if err := engine.CheckIndex(c); err != nil {
		t.Fatalf("round %d (noSync=%v, tail %d): after the reopen: %v", r, noSync, tail, err)
	}
	got := c.Properties().DefaultTTL
	if got == nil || !(*got == w.ttlOK[0] || containsTTL(ttlMaybe, *got)) {
		t.Fatalf("round %d: DefaultTTL %v, want %d or one in flight %v", r, got, w.ttlOK[0], ttlMaybe)
	}
	w.ttlOK = []int32{*got}
	w.rounds++
}

func containsTTL(list []int32, v int32) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// work makes random writes to the worker's ids until the power is cut.
// After the cut, or after an error that is not a refusal, it stops: that
// last write is in flight.
func (w *powerLossWorld) work(c *engine.Container, wk int, rnd *rand.Rand, cut *atomic.Bool) []powerLossOp {
	ctx := context.Background()
	id := func() string { return fmt.Sprintf("w%d-%d", wk, rnd.IntN(idsPerWorker)) }
	var ops []powerLossOp
	for !cut.Load() {
		op := powerLossOp{ts: w.clk.Unix()}
		switch rnd.IntN(3) {
		case 0:
			op.ttl = 0
		case 1:
			op.ttl = -1
		default:
			op.ttl = int32(2 + rnd.IntN(20))
		}
		val := func() int { return int(w.vals.Add(1)) }
		var it engine.Item
		var err error
		switch k := rnd.IntN(20); {
		case k < 7:
			op.kind, op.ids, op.vals = writeUpsert, []string{id()}, []int{val()}
			it, err = c.Upsert(ctx, powerLossBody(op.ids[0], op.vals[0], op.ttl))
		case k < 10:
			op.kind, op.ids, op.vals = writeCreate, []string{id()}, []int{val()}
			it, err = c.Create(ctx, powerLossBody(op.ids[0], op.vals[0], op.ttl))
		case k < 13:
			op.kind, op.ids, op.vals = writeReplace, []string{id()}, []int{val()}
			it, err = c.Replace(ctx, powerLossBody(op.ids[0], op.vals[0], op.ttl))
		case k < 17:
			op.kind, op.ids, op.vals = writeDelete, []string{id()}, []int{0}
			err = c.Delete(ctx, op.ids[0])
		default:
			op.kind, op.ttl = writeUpsert, -1
			var b engine.Batch
			seen := map[string]bool{}
			for range 2 + rnd.IntN(3) {
				i := id()
				if seen[i] {
					continue
				}
				seen[i] = true
				op.ids, op.vals = append(op.ids, i), append(op.vals, val())
				b.Upsert(powerLossBody(i, op.vals[len(op.vals)-1], op.ttl))
			}
			var items []engine.Item
			if items, err = c.ExecuteBatch(ctx, &b); err == nil {
				it = items[0]
			}
		}
		op.result = err
		switch {
		case err != nil && semanticState(err):
			continue // refused before anything was written
		case err == nil && !cut.Load():
			op.acked = true
			if op.kind != writeDelete {
				op.ts = it.TS
			}
			ops = append(ops, op)
		default:
			op.maybe = true
			ops = append(ops, op)
			return ops
		}
	}
	return ops
}

// powerLossLog is a log buffer safe for concurrent writes.
type powerLossLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *powerLossLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *powerLossLog) reset() {
	l.mu.Lock()
	l.b.Reset()
	l.mu.Unlock()
}

func (l *powerLossLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// observedState is an item as read back.
type observedState struct {
	v  int
	ts int64
}

// check compares the reopened container with each worker's writes.
func (w *powerLossWorld) check(r int, c *engine.Container, ops [][]powerLossOp, noSync bool) {
	t := w.t
	now := w.clk.Unix()
	seen := map[string]observedState{}
	for it, err := range c.Items(context.Background()) {
		if err != nil {
			t.Fatalf("round %d: Items: %v", r, err)
		}
		v := int(bodyField(t, it, "v").(float64))
		if pad, _ := bodyField(t, it, "pad").(string); pad != powerLossPad(v) {
			t.Fatalf("round %d: item %s: body %s is not whole", r, it.ID, it.Body)
		}
		seen[it.ID] = observedState{v: v, ts: it.TS}
	}
	for id := range seen {
		var wk, n int
		if _, err := fmt.Sscanf(id, "w%d-%d", &wk, &n); err != nil || wk >= powerLossWorkers {
			t.Fatalf("round %d: unknown item %q", r, id)
		}
	}
	for wk := range powerLossWorkers {
		list := ops[wk]
		acked := 0
		for _, op := range list {
			if op.acked {
				acked++
			}
		}
		lo := acked
		if noSync {
			lo = 0
		}
		matched := -1
		var states map[string]powerLossState
		for p := len(list); p >= lo && matched < 0; p-- {
			if s, ok := w.matches(wk, list[:p], seen, now); ok {
				matched, states = p, s
			}
		}
		if matched < 0 {
			if m, err := engine.ReadManifest(w.dir); err == nil {
				t.Logf("manifest: journal from %d, files %+v", m.JournalFrom, m.Containers[0].Files)
			}
			for _, sub := range []string{engine.SegmentDir, engine.JournalDir} {
				ents, _ := os.ReadDir(filepath.Join(w.dir, sub))
				for _, e := range ents {
					info, _ := e.Info()
					t.Logf("%s/%s %d", sub, e.Name(), info.Size())
				}
			}
			t.Logf("the round's log:\n%s", w.log.String())
			t.Fatalf("round %d (noSync=%v): worker %d: what came back matches no prefix of its %d writes (%d acknowledged) of at least %d:\n%s",
				r, noSync, wk, len(list), acked, lo, w.describe(wk, list, seen))
		}
		w.opsChecked += len(list)
		w.ackedChecked += acked
		if len(list) > 0 && list[len(list)-1].maybe {
			w.inFlight++
			if matched == len(list) {
				w.inFlightApplied++
			}
		}
		if noSync {
			w.noSyncLost += max(0, acked-matched)
		}
		for id, s := range states {
			w.base[id] = s
		}
	}
	if noSync {
		w.noSyncRounds++
	}
}

// matches reports whether seen agrees with the worker's ids after the
// writes ops (from w.base), and returns their states then.
func (w *powerLossWorld) matches(wk int, ops []powerLossOp, seen map[string]observedState, now int64) (map[string]powerLossState, bool) {
	s, bad := w.mismatches(wk, ops, seen, now, false)
	return s, len(bad) == 0
}

// mismatches returns the states after ops, and the ids where seen differs
// from them (all of them when all is set, else the first).
func (w *powerLossWorld) mismatches(wk int, ops []powerLossOp, seen map[string]observedState, now int64, all bool) (map[string]powerLossState, []string) {
	var bad []string
	states := map[string]powerLossState{}
	maybe := map[string]bool{}
	for i := range idsPerWorker {
		id := fmt.Sprintf("w%d-%d", wk, i)
		states[id] = w.base[id]
	}
	for _, op := range ops {
		for j, id := range op.ids {
			if op.kind == writeDelete {
				states[id] = powerLossState{}
			} else {
				states[id] = powerLossState{v: op.vals[j], ts: op.ts, ttl: op.ttl}
			}
			maybe[id] = op.maybe
		}
	}
	for id, s := range states {
		obs, visible := seen[id]
		expired := s.v != 0 && s.ttl > 0 && s.ts+int64(s.ttl) <= now
		ok := true
		switch {
		case s.v == 0 || (expired && !maybe[id]):
			ok = !visible
			states[id] = powerLossState{}
		case !visible:
			// A write in flight whose ttl may have run out by now.
			ok = maybe[id] && s.ttl > 0 && s.ts+int64(s.ttl) <= now
			states[id] = powerLossState{}
		case obs.v != s.v || (!maybe[id] && obs.ts != s.ts):
			ok = false
		default:
			s.ts = obs.ts
			states[id] = s
		}
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: want %+v, seen %+v", id, s, obs))
			if !all {
				return nil, bad
			}
		}
	}
	return states, bad
}

// describe lists a worker's writes and what came back, for a failure.
func (w *powerLossWorld) describe(wk int, ops []powerLossOp, seen map[string]observedState) string {
	var b strings.Builder
	for i, op := range ops {
		fmt.Fprintf(&b, "  %3d %-7s %v=%v ttl=%d ts=%d acked=%v maybe=%v err=%v\n", i, op.kind, op.ids, op.vals, op.ttl, op.ts, op.acked, op.maybe, op.result)
	}
	best, bestBad := -1, []string(nil)
	for p := len(ops); p >= 0; p-- {
		_, bad := w.mismatches(wk, ops[:p], seen, w.clk.Unix(), true)
		if best < 0 || len(bad) < len(bestBad) {
			best, bestBad = p, bad
		}
	}
	fmt.Fprintf(&b, "  closest: the first %d writes, but:\n    %s\n", best, strings.Join(bestBad, "\n    "))
	return b.String()
}
