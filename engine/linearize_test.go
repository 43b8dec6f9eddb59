package engine_test

// Linearizability (the visible state is a function of the acknowledged
// writes, the policy history and the clock, under concurrency): many
// goroutines run Create, Upsert, Replace, Delete (with and without IfMatch)
// and Read on a few overlapping ids while background compaction and seals
// move records between memtables, journal and segment files, and
// github.com/anishathalye/porcupine checks, id by id, that every history
// is linearizable against a sequential model of one item with TTL.
//
// Time is part of the model, so it must be exact. The fake wall clock is
// fixed during a phase and moved only between phases, when every worker
// has returned. The engine's now during a phase is then the now of the
// phase before moved on by as much as the wall moved forward, if it did
// (clock.go: the engine never runs backwards, and time elapsed is what an
// injected clock moved forward), the same for every operation of the phase whichever goroutine runs it,
// including the background compactor's. Each operation carries that
// instant as an input, so the model decides expiry (_ts + ttl <= now) with
// no uncertainty, and a wall clock stepped back between phases (which must
// not un-expire anything) is modelled too. A clock moving during an
// operation would make the engine's now a range the model cannot pin down;
// clockfault_test.go covers that case with invariants instead.
//
// EBB_LINEARIZE_OPS sets the number of operations (default defaultLinearizeOps).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/ebbdb/ebb/engine"
)

const (
	defaultLinearizeOps = 20000
	callWorkers         = 8
	callIDs             = 4
	opsPerPhase         = 160 // over all workers
	callDefaultTTL      = 3   // the container's DefaultTTL
)

// callKind is one operation of the model.
type callKind uint8

const (
	callRead callKind = iota
	callCreate
	callUpsert
	callReplace
	callDelete
)

func (k callKind) String() string {
	return [...]string{"read", "create", "upsert", "replace", "delete"}[k]
}

// callResult is the class of an operation's outcome.
type callResult uint8

const (
	resultOK callResult = iota
	resultConflict
	resultNotFound
	resultPrecondition
	resultOther // any other error, or a body that does not check out: never legal
)

func (r callResult) String() string {
	return [...]string{"ok", "conflict", "not-found", "precondition-failed", "OTHER"}[r]
}

// callInput is one call: what it does, to which id, at which engine now.
type callInput struct {
	kind    callKind
	id      string
	now     int64  // the engine's now during the call's phase
	w       string // writes: the write's name, carried in its body
	ttl     int32  // writes: the item's ttl (0 absent)
	ifMatch string // "" for none
}

// callOutput is what the call returned.
type callOutput struct {
	res  callResult
	w    string // the version returned: write name from the body
	etag string
	ts   int64
	err  string // the error, for resultOther
}

// porcupineState is one item: absent, or its current version and when it
// expires (1<<63-1 for never). It is comparable, as porcupine's default
// equality needs.
type porcupineState struct {
	present bool
	w       string
	etag    string
	ts      int64
	expire  int64
}

// expiryOf is the instant a version written at ts with item ttl expires,
// in a container whose DefaultTTL is callDefaultTTL (the effective TTL table in policy's doc).
func expiryOf(ts int64, ttl int32) int64 {
	switch ttl {
	case 0:
		return ts + callDefaultTTL
	case -1:
		return 1<<63 - 1
	default:
		return ts + int64(ttl)
	}
}

// porcupineStep is the sequential specification of one item.
func porcupineStep(state, input, output any) (bool, any) {
	s, in, out := state.(porcupineState), input.(callInput), output.(callOutput)
	if s.present && s.expire <= in.now {
		s = porcupineState{}
	}
	fail := func(r callResult) (bool, any) { return out.res == r, s }
	written := func() (bool, any) {
		ok := out.res == resultOK && out.w == in.w && out.ts == in.now && out.etag != "" && out.etag != s.etag
		return ok, porcupineState{present: true, w: in.w, etag: out.etag, ts: in.now, expire: expiryOf(in.now, in.ttl)}
	}
	mismatch := in.ifMatch != "" && (!s.present || s.etag != in.ifMatch)
	switch in.kind {
	case callRead:
		if !s.present {
			return fail(resultNotFound)
		}
		return out.res == resultOK && out.w == s.w && out.etag == s.etag && out.ts == s.ts, s
	case callCreate:
		if s.present {
			return fail(resultConflict)
		}
		return written()
	case callUpsert:
		if mismatch {
			return fail(resultPrecondition)
		}
		return written()
	case callReplace:
		if !s.present {
			return fail(resultNotFound)
		}
		if mismatch {
			return fail(resultPrecondition)
		}
		return written()
	case callDelete:
		if !s.present {
			return fail(resultNotFound)
		}
		if mismatch {
			return fail(resultPrecondition)
		}
		return out.res == resultOK, porcupineState{}
	}
	return false, s
}

func describeCall(input, output any) string {
	in, out := input.(callInput), output.(callOutput)
	var b strings.Builder
	fmt.Fprintf(&b, "%s(%s", in.kind, in.id)
	if in.w != "" {
		fmt.Fprintf(&b, ", %s ttl %d", in.w, in.ttl)
	}
	if in.ifMatch != "" {
		fmt.Fprintf(&b, ", if-match %s", in.ifMatch)
	}
	fmt.Fprintf(&b, ") @%d -> %s", in.now, out.res)
	if out.res == resultOK && out.etag != "" {
		fmt.Fprintf(&b, " %s %s _ts %d", out.w, out.etag, out.ts)
	}
	if out.err != "" {
		fmt.Fprintf(&b, " (%s)", out.err)
	}
	return b.String()
}

// porcupineModel is the per-id model, partitioned by the id of each call.
var porcupineModel = porcupine.Model{
	PartitionEvent: func(history []porcupine.Event) [][]porcupine.Event {
		idOf := make(map[int]string)
		byID := make(map[string][]porcupine.Event)
		var order []string
		for _, e := range history {
			if e.Kind == porcupine.CallEvent {
				idOf[e.Id] = e.Value.(callInput).id
			}
			id := idOf[e.Id]
			if _, ok := byID[id]; !ok {
				order = append(order, id)
			}
			byID[id] = append(byID[id], e)
		}
		out := make([][]porcupine.Event, 0, len(order))
		for _, id := range order {
			out = append(out, byID[id])
		}
		return out
	},
	Init:              func() any { return porcupineState{} },
	Step:              porcupineStep,
	DescribeOperation: describeCall,
	DescribeState: func(state any) string {
		s := state.(porcupineState)
		if !s.present {
			return "absent"
		}
		return fmt.Sprintf("%s %s _ts %d expires %d", s.w, s.etag, s.ts, s.expire)
	},
}

// callHistory records call and return events in one real-time order.
type callHistory struct {
	mu     sync.Mutex
	events []porcupine.Event
	next   int
}

func (h *callHistory) call(client int, in callInput) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	id := h.next
	h.next++
	h.events = append(h.events, porcupine.Event{ClientId: client, Kind: porcupine.CallEvent, Value: in, Id: id})
	return id
}

func (h *callHistory) ret(client, id int, out callOutput) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, porcupine.Event{ClientId: client, Kind: porcupine.ReturnEvent, Value: out, Id: id})
}

// callDoc is the document of write w to item id with item ttl (0: absent).
func callDoc(id, w string, ttl int32) []byte {
	pad := strings.Repeat("x", int(docHash(w)%300))
	if ttl == 0 {
		return fmt.Appendf(nil, `{"id":%q,"w":%q,"pad":%q}`, id, w, pad)
	}
	return fmt.Appendf(nil, `{"id":%q,"w":%q,"pad":%q,"ttl":%d}`, id, w, pad, ttl)
}

// callDocs remembers each write's document, to check bodies read back.
var callDocs sync.Map // w -> []byte

// checkCallBody checks that it is exactly a version some write stored, with
// system properties that agree with it, and returns that write's name.
func checkCallBody(it engine.Item) (string, error) {
	var got struct{ W string }
	if err := json.Unmarshal(it.Body, &got); err != nil {
		return "", fmt.Errorf("body %.100q is not JSON: %v", it.Body, err)
	}
	doc, ok := callDocs.Load(got.W)
	if !ok {
		return "", fmt.Errorf("body names write %q, which never happened: %.200s", got.W, it.Body)
	}
	return got.W, checkBodyIs(it, doc.([]byte))
}

// checkBodyIs checks that it's body is document doc plus system properties
// that agree with it: id, _ts and _etag.
func checkBodyIs(it engine.Item, doc []byte) error {
	var got, want map[string]any
	if err := json.Unmarshal(it.Body, &got); err != nil {
		return fmt.Errorf("body %.100q is not JSON: %v", it.Body, err)
	}
	if err := json.Unmarshal(doc, &want); err != nil {
		return fmt.Errorf("document %.100q is not JSON: %v", doc, err)
	}
	if got["_ts"] != float64(it.TS) || got["_etag"] != it.ETag || got["id"] != it.ID {
		return fmt.Errorf("body id %v _ts %v _etag %v, Item has %q %d %s", got["id"], got["_ts"], got["_etag"], it.ID, it.TS, it.ETag)
	}
	delete(got, "_ts")
	delete(got, "_etag")
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("body %.200s is not the document written, %.200s", it.Body, doc)
	}
	return nil
}

func classifyResult(err error) (callResult, string) {
	switch {
	case err == nil:
		return resultOK, ""
	case errors.Is(err, engine.ErrConflict):
		return resultConflict, ""
	case errors.Is(err, engine.ErrNotFound):
		return resultNotFound, ""
	case errors.Is(err, engine.ErrPreconditionFailed):
		return resultPrecondition, ""
	}
	return resultOther, err.Error()
}

// callWorker runs n random operations of one phase for client.
type callWorker struct {
	client int
	rng    *rand.Rand
	etags  map[string]string // per id, the last etag this worker saw
	writes int
}

func (w *callWorker) run(ctx context.Context, c *engine.Container, h *callHistory, now int64, n int, fail func(string, ...any)) {
	for range n {
		in := callInput{id: "k" + strconv.Itoa(w.rng.IntN(callIDs)), now: now}
		switch p := w.rng.IntN(100); {
		case p < 30:
			in.kind = callRead
		case p < 45:
			in.kind = callCreate
		case p < 65:
			in.kind = callUpsert
		case p < 82:
			in.kind = callReplace
		default:
			in.kind = callDelete
		}
		if in.kind != callRead && in.kind != callCreate && w.rng.IntN(2) == 0 {
			switch q := w.rng.IntN(10); {
			case q < 7:
				in.ifMatch = w.etags[in.id] // maybe stale, maybe ""
			case q < 9:
				in.ifMatch = engine.ETagOf(uint64(1 + w.rng.IntN(1<<20))) // some other version's, most likely
			default:
				in.ifMatch = `"bogus"`
			}
		}
		if in.kind != callRead && in.kind != callDelete {
			in.w = fmt.Sprintf("c%d.%d", w.client, w.writes)
			w.writes++
			in.ttl = [...]int32{0, 0, -1, 1, 2, 4}[w.rng.IntN(6)]
		}
		var doc []byte
		if in.w != "" {
			doc = callDoc(in.id, in.w, in.ttl)
			callDocs.Store(in.w, doc)
		}
		var opts []engine.WriteOption
		if in.ifMatch != "" {
			opts = append(opts, engine.IfMatch(in.ifMatch))
		}

		id := h.call(w.client, in)
		var it engine.Item
		var err error
		switch in.kind {
		case callRead:
			it, err = c.Read(ctx, in.id)
		case callCreate:
			it, err = c.Create(ctx, doc, opts...)
		case callUpsert:
			it, err = c.Upsert(ctx, doc, opts...)
		case callReplace:
			it, err = c.Replace(ctx, doc, opts...)
		case callDelete:
			err = c.Delete(ctx, in.id, opts...)
		}
		var out callOutput
		out.res, out.err = classifyResult(err)
		if err == nil && in.kind != callDelete {
			out.etag, out.ts = it.ETag, it.TS
			vw, berr := checkCallBody(it)
			if berr != nil {
				out.res, out.err = resultOther, berr.Error()
			}
			out.w = vw
			w.etags[in.id] = it.ETag
		}
		h.ret(w.client, id, out)
		if out.res == resultOther {
			fail("client %d: %s", w.client, describeCall(in, out))
		}
	}
}

// backgroundWork seals and compacts continually until stop is closed, on top
// of the background compactor's own ticks.
func backgroundWork(db *engine.DB, c *engine.Container, stop chan struct{}, fail func(string, ...any)) {
	ctx := context.Background()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(time.Millisecond):
		}
		var err error
		if i%3 == 0 {
			err = engine.SealNow(ctx, db)
		} else {
			err = c.Compact(ctx)
		}
		if err != nil {
			fail("background: %v", err)
		}
	}
}

func linearizeOps(t *testing.T) int {
	n := defaultLinearizeOps
	if testing.Short() {
		n /= 4
	}
	if s := os.Getenv("EBB_LINEARIZE_OPS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("EBB_LINEARIZE_OPS=%q: want a positive integer", s)
		}
		n = v
	}
	return n
}

// TestLinearizable runs the concurrent workload and checks its history.
func TestLinearizable(t *testing.T) {
	ctx := context.Background()
	total := linearizeOps(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("EBB_LINEARIZE_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (EBB_LINEARIZE_SEED replays the schedule, not the interleaving)", seed)
	replayOnFailure(t, "EBB_LINEARIZE_SEED", uint64(seed))
	rng := rand.New(rand.NewPCG(seed, 7))

	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk, func(o *engine.Options) {
		o.NoSync = true // durability is not what this test checks
		o.SealThreshold = 8 << 10
		o.JournalSegmentSize = 16 << 10
		o.BlockSize = 1 << 10
		o.CompactionInterval = 3 * time.Millisecond
		o.RewriteThreshold = 0.2
	})
	defer db.Close()
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "lin", DefaultTTL: engine.TTL(callDefaultTTL)})

	var failures atomic.Int64
	var failMu sync.Mutex
	fail := func(format string, args ...any) {
		if failures.Add(1) <= 20 {
			failMu.Lock()
			t.Errorf(format, args...)
			failMu.Unlock()
		}
	}
	stop := make(chan struct{})
	bgDone := make(chan struct{})
	go func() {
		defer close(bgDone)
		backgroundWork(db, c, stop, fail)
	}()

	h := &callHistory{}
	workers := make([]*callWorker, callWorkers)
	for i := range workers {
		workers[i] = &callWorker{client: i, rng: rand.New(rand.NewPCG(seed, uint64(i))), etags: map[string]string{}}
	}
	wall, now := int64(t0), int64(t0)
	jumps := map[string]int{}
	start := time.Now()
	for done := 0; done < total; {
		// Between phases, with every worker quiet: move the wall clock. The
		// engine reads every phase's wall (each phase has operations), so
		// its now moves on by as much as the wall moved forward (the time
		// elapsed, to an injected clock), whether or not the wall was
		// behind, and never back.
		prev := wall
		switch p := rng.IntN(20); {
		case p < 12:
			wall += int64(rng.IntN(3)) // 0..2 s: items of ttl 1..4 expire across phases
			jumps["step"]++
		case p < 15:
			wall -= 3600 * int64(1+rng.IntN(5)) // back by hours: nothing may come back
			jumps["back"]++
		case p < 17:
			wall = now // up to the engine's now: a forward move it counts
			jumps["return"]++
		case p < 18:
			wall = now + 3600 // forward by an hour: everything but ttl -1 expires
			jumps["forward"]++
		default:
			jumps["none"]++
		}
		clk.Set(wall)
		now += max(0, wall-prev)
		n := min(opsPerPhase, total-done)
		var wg sync.WaitGroup
		for i, w := range workers {
			k := n / callWorkers
			if i < n%callWorkers {
				k++
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.run(ctx, c, h, now, k, fail)
			}()
		}
		wg.Wait()
		done += n
	}
	close(stop)
	<-bgDone
	elapsed := time.Since(start)
	if t.Failed() {
		t.FailNow()
	}
	if got := engine.HighestNow(db); got != now {
		t.Fatalf("the engine's high mark is %d, the model's now %d: the clock assumption does not hold", got, now)
	}

	// The background work must have happened, or the test checked less
	// than it claims.
	m := c.Metrics()
	sealed, rewritten, dropped := m.SealedBytes, m.FilesRewritten, m.FilesDropped
	t.Logf("background: %d bytes sealed, %d files rewritten, %d dropped whole", sealed, rewritten, dropped)
	if sealed == 0 || rewritten+dropped == 0 {
		t.Errorf("no seal or no compaction ran during the workload")
	}
	tally := map[string]int{}
	for _, e := range h.events {
		if e.Kind == porcupine.CallEvent {
			in := e.Value.(callInput)
			tally[in.kind.String()+map[bool]string{true: "/if-match", false: ""}[in.ifMatch != ""]]++
		} else {
			tally[e.Value.(callOutput).res.String()]++
		}
	}
	t.Logf("calls and outcomes: %v", tally)

	checkStart := time.Now()
	res, info := porcupine.CheckEventsVerbose(porcupineModel, h.events, 2*time.Minute)
	ops := len(h.events) / 2
	t.Logf("%d operations by %d workers on %d ids, clock moves %v, in %s; checked in %s: %s",
		ops, callWorkers, callIDs, jumps, elapsed.Round(time.Millisecond), time.Since(checkStart).Round(time.Millisecond), resultName(res))
	switch res {
	case porcupine.Ok:
	case porcupine.Unknown:
		t.Fatalf("porcupine gave up (timeout) on %d operations", ops)
	default:
		reportIllegal(t, info, porcupineModel.PartitionEvent(h.events))
	}
}

func resultName(r porcupine.CheckResult) string {
	switch r {
	case porcupine.Ok:
		return "linearizable"
	case porcupine.Illegal:
		return "NOT linearizable"
	}
	return "unknown"
}

// reportIllegal explains a failed check: for each partition that could
// not be linearized, the longest linearized prefix found and the history
// around it; with EBB_LINEARIZE_VIS=path, porcupine's visualization too.
func reportIllegal(t *testing.T, info porcupine.LinearizationInfo, parts [][]porcupine.Event) {
	t.Helper()
	if path := os.Getenv("EBB_LINEARIZE_VIS"); path != "" {
		if err := porcupine.VisualizePath(porcupineModel, info, path); err != nil {
			t.Logf("visualization: %v", err)
		} else {
			t.Logf("visualization written to %s", path)
		}
	}
	for p, part := range info.PartialLinearizationsOperations() {
		var longest []porcupine.Operation
		for _, lin := range part {
			if len(lin) > len(longest) {
				longest = lin
			}
		}
		if p < len(parts) && 2*len(longest) == len(parts[p]) {
			continue // linearized whole
		}
		var b strings.Builder
		for i, op := range longest {
			if i >= len(longest)-12 {
				fmt.Fprintf(&b, "\n\t%d: client %d [%d,%d] %s", i, op.ClientId, op.Call, op.Return, describeCall(op.Input, op.Output))
			}
		}
		t.Logf("partition %d: longest linearizable prefix has %d operations; its last ones:%s", p, len(longest), b.String())
	}
	t.Fatalf("history is not linearizable (see the partitions above; EBB_LINEARIZE_VIS=file.html renders it)")
}

// TestLinearizeModelRejects shows that the check can fail: the model
// accepts legal histories, including expiry at the phase's now, and rejects
// each kind of wrong answer.
func TestLinearizeModelRejects(t *testing.T) {
	const now = t0
	wr := func(kind callKind, w string, ttl int32, at int64, ifMatch string) callInput {
		return callInput{kind: kind, id: "k", now: at, w: w, ttl: ttl, ifMatch: ifMatch}
	}
	rd := func(at int64) callInput { return callInput{kind: callRead, id: "k", now: at} }
	del := func(at int64, ifMatch string) callInput {
		return callInput{kind: callDelete, id: "k", now: at, ifMatch: ifMatch}
	}
	ok := func(w, etag string, ts int64) callOutput { return callOutput{res: resultOK, w: w, etag: etag, ts: ts} }
	res := func(r callResult) callOutput { return callOutput{res: r} }
	type step struct {
		in   callInput
		out  callOutput
		call int64 // 0: sequential after the previous step
		ret  int64
	}
	cases := []struct {
		name  string
		legal bool
		steps []step
	}{
		{"create then read", true, []step{
			{in: wr(callCreate, "a", 0, now, ""), out: ok("a", "e1", now)},
			{in: rd(now), out: ok("a", "e1", now)},
		}},
		{"read of a missing write", false, []step{
			{in: wr(callCreate, "a", 0, now, ""), out: ok("a", "e1", now)},
			{in: rd(now), out: res(resultNotFound)},
		}},
		{"stale read after an overwrite", false, []step{
			{in: wr(callCreate, "a", 0, now, ""), out: ok("a", "e1", now)},
			{in: wr(callUpsert, "b", 0, now, ""), out: ok("b", "e2", now)},
			{in: rd(now), out: ok("a", "e1", now)},
		}},
		{"expired at _ts + DefaultTTL", true, []step{
			{in: wr(callCreate, "a", 0, now, ""), out: ok("a", "e1", now)},
			{in: rd(now + callDefaultTTL - 1), out: ok("a", "e1", now)},
			{in: rd(now + callDefaultTTL), out: res(resultNotFound)},
			{in: wr(callCreate, "b", 0, now+callDefaultTTL, ""), out: ok("b", "e2", now+callDefaultTTL)},
		}},
		{"expired item read back", false, []step{
			{in: wr(callCreate, "a", 2, now, ""), out: ok("a", "e1", now)},
			{in: rd(now + 2), out: ok("a", "e1", now)},
		}},
		{"create over a live item", false, []step{
			{in: wr(callCreate, "a", -1, now, ""), out: ok("a", "e1", now)},
			{in: wr(callCreate, "b", 0, now+5000, ""), out: ok("b", "e2", now+5000)},
		}},
		{"create over an expired item conflicts", false, []step{
			{in: wr(callCreate, "a", 1, now, ""), out: ok("a", "e1", now)},
			{in: wr(callCreate, "b", 0, now+1, ""), out: res(resultConflict)},
		}},
		{"_ts other than now", false, []step{
			{in: wr(callUpsert, "a", 0, now, ""), out: ok("a", "e1", now-1)},
		}},
		{"if-match with the current etag", true, []step{
			{in: wr(callUpsert, "a", 0, now, ""), out: ok("a", "e1", now)},
			{in: wr(callReplace, "b", 0, now, "e1"), out: ok("b", "e2", now)},
			{in: del(now, "e1"), out: res(resultPrecondition)},
			{in: del(now, "e2"), out: res(resultOK)},
			{in: wr(callUpsert, "c", 0, now, "e2"), out: res(resultPrecondition)},
			{in: wr(callReplace, "c", 0, now, "e2"), out: res(resultNotFound)},
		}},
		{"if-match with a stale etag succeeds", false, []step{
			{in: wr(callUpsert, "a", 0, now, ""), out: ok("a", "e1", now)},
			{in: wr(callUpsert, "b", 0, now, ""), out: ok("b", "e2", now)},
			{in: wr(callReplace, "c", 0, now, "e1"), out: ok("c", "e3", now)},
		}},
		{"a write that reuses the etag", false, []step{
			{in: wr(callUpsert, "a", 0, now, ""), out: ok("a", "e1", now)},
			{in: wr(callUpsert, "b", 0, now, ""), out: ok("b", "e1", now)},
		}},
		{"concurrent creates: one wins", true, []step{
			{in: wr(callCreate, "a", 0, now, ""), out: ok("a", "e1", now), call: 1, ret: 4},
			{in: wr(callCreate, "b", 0, now, ""), out: res(resultConflict), call: 2, ret: 3},
			{in: rd(now), out: ok("a", "e1", now), call: 5, ret: 6},
		}},
		{"concurrent creates: both win", false, []step{
			{in: wr(callCreate, "a", 0, now, ""), out: ok("a", "e1", now), call: 1, ret: 4},
			{in: wr(callCreate, "b", 0, now, ""), out: ok("b", "e2", now), call: 2, ret: 3},
		}},
		{"a read sees a write, a later read does not", false, []step{
			{in: wr(callUpsert, "a", 0, now, ""), out: ok("a", "e1", now), call: 1, ret: 10},
			{in: rd(now), out: ok("a", "e1", now), call: 2, ret: 3},
			{in: rd(now), out: res(resultNotFound), call: 4, ret: 5},
		}},
		{"an OTHER error", false, []step{
			{in: rd(now), out: callOutput{res: resultOther, err: "boom"}},
		}},
	}
	for _, tc := range cases {
		var ops []porcupine.Operation
		var clock int64
		for i, s := range tc.steps {
			call, ret := s.call, s.ret
			if call == 0 {
				clock += 10
				call, ret = clock, clock+1
			}
			clock = max(clock, ret)
			ops = append(ops, porcupine.Operation{ClientId: i, Input: s.in, Call: call, Output: s.out, Return: ret})
		}
		if got := porcupine.CheckOperations(porcupineModel, ops); got != tc.legal {
			t.Errorf("%s: linearizable = %v, want %v", tc.name, got, tc.legal)
		}
	}
	// And through the event form with partitions, as TestLinearizable uses
	// it: a violation on one id is found among legal histories of others.
	h := &callHistory{}
	for _, id := range []string{"x", "y", "z"} {
		e := h.call(0, callInput{kind: callUpsert, id: id, now: now, w: id, ttl: -1})
		h.ret(0, e, ok(id, "e-"+id, now))
		e = h.call(1, callInput{kind: callRead, id: id, now: now})
		out := ok(id, "e-"+id, now)
		if id == "y" {
			out = res(resultNotFound)
		}
		h.ret(1, e, out)
	}
	if porcupine.CheckEvents(porcupineModel, h.events) {
		t.Errorf("partitioned events: a lost write of y was accepted")
	}
}
