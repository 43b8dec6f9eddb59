package crashloop

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ebbdb/ebb/policy"
)

// roundLog is the checker's reading of one child's log: every line checked
// as it comes, in order, against the model and against what the lines
// before it establish; and what the state check after the restart needs.

// stepInfo is one clock step of the controller.
type stepInfo struct {
	wall      int64
	now       int64 // the engine's now once the step is observed: see roundLog.clock
	announced int   // line index
}

// request is one start line: a write or a batch.
type request struct {
	tag    string
	cont   string
	ops    []*reqOp
	start  int // line index
	end    int // line index of its ack or nack; -1 while in flight
	lo     int64
	acked  bool
	nacked bool
	step   int // the probe's step; -1 for other writes
}

// reqOp is one write of a request and, once acknowledged, its result.
type reqOp struct {
	req *request
	wop
	etag string
	ts   int64
}

// result is the state the op leaves its item in, once acknowledged.
func (o *reqOp) result() itemState {
	if o.kind == "delete" {
		return itemState{}
	}
	return itemState{Present: true, W: o.w, TS: o.ts, ETag: o.etag}
}

// histVersion is a container's policy history after a DefaultTTL change,
// or at the round's start (index 0).
type histVersion struct {
	h         policy.History
	d         *int32
	step      int
	announced int // line index (-1 for the start)
	acked     int // line index; -1 while in flight
}

// roundLog is the state of the pass over one round's lines.
type roundLog struct {
	round  int
	m      *model
	lines  []logLine
	steps  []stepInfo
	conf   int   // the last step the engine certainly observed
	hiNow  int64 // the highest now any announced step may have made
	durNow int64 // the highest now the database certainly persisted
	maxTS  int64 // the highest acknowledged _ts so far
	reqs   map[string]*request
	order  []*request
	byID   map[string]map[string][]*reqOp // container -> id -> ops, in start order
	hist   map[string][]histVersion
	seq    map[string]map[string]itemState // sequential ids (own, probe): their state now
	exists map[string]bool

	// relied is the largest expiry instant that an acknowledged answer (a
	// read that found an own id gone, a refusal of an own id) relied on:
	// the engine made it durable before answering, so no restart may find
	// the clock below it. reliedID and reliedLine say which answer.
	relied     int64
	reliedID   string
	reliedLine int
	reliedN    int64 // answers that relied on an expiry

	ready             bool
	held              bool // the child said "held"
	kills             bool
	compactions       int
	acked, checked    int64
	policies          int
	jumpsB, jumpsF    int
	lastWall          int64
	violation         *Violation
	violationLinesFor string
}

func newRoundLog(round int, m *model, startWall int64) *roundLog {
	r := &roundLog{
		round: round, m: m, conf: -1,
		hiNow: max(m.now, startWall), durNow: m.now,
		reqs: map[string]*request{}, byID: map[string]map[string][]*reqOp{},
		hist: map[string][]histVersion{}, seq: map[string]map[string]itemState{},
		exists: map[string]bool{}, lastWall: startWall,
	}
	for name, cm := range m.conts {
		r.exists[name] = cm.exists
		r.byID[name] = map[string][]*reqOp{}
		r.seq[name] = map[string]itemState{}
		for id, s := range cm.items {
			if sequential(id) {
				r.seq[name][id] = s
			}
		}
		if cm.exists {
			r.hist[name] = []histVersion{{h: cm.history, d: cm.history.Current(), step: -1, announced: -1, acked: -1}}
		}
	}
	return r
}

// sequential reports whether only one goroutine of the child writes id, one
// write at a time: a worker's own ids, and the controller's probe.
func sequential(id string) bool { return ownerOf(id) >= 0 || id == probeID }

// fail records the first violation; about names the id (or word) whose
// lines explain it.
func (r *roundLog) fail(about, format string, args ...any) {
	if r.violation != nil {
		return
	}
	r.violation = &Violation{Round: r.round, What: fmt.Sprintf(format, args...)}
	r.violationLinesFor = about
}

// add checks line i of the round and folds it into the state.
func (r *roundLog) add(text string) {
	i := len(r.lines)
	l, err := parseLine(text)
	r.lines = append(r.lines, l)
	if err != nil {
		r.lines[i].text = text
		r.fail("", "child: %v", err)
		return
	}
	switch l.kind {
	case lnReady:
		r.ready = true
	case lnFail:
		r.fail("", "the child failed: %s", l.reason)
	case lnCompacted:
		r.compactions++
	case lnHeld:
		if l.step != r.conf {
			r.fail("clock", "child: held %d, but the last step observed is %d", l.step, r.conf)
			return
		}
		r.held = true
	case lnCreated:
		r.created(l)
	case lnClock:
		r.clock(i, l)
	case lnClocked:
		if l.step != len(r.steps)-1 {
			r.fail("clock", "child: clocked %d, but the last step announced is %d", l.step, len(r.steps)-1)
			return
		}
		r.conf = l.step
	case lnPolicy:
		r.policy(i, l)
	case lnPolicied:
		hv := r.hist[l.cont]
		if n := len(hv); n < 2 || hv[n-1].acked >= 0 || hv[n-1].step != l.step {
			r.fail("policy", "child: %q answers no policy line", l.text)
			return
		}
		hv[len(hv)-1].acked = i
		r.durNow = max(r.durNow, r.steps[l.step].now) // the manifest's clock is at least the change's instant
		r.acked++
		r.checked++
		r.policies++
	case lnStart:
		r.start(i, l)
	case lnAck:
		r.ack(i, l)
	case lnNack:
		r.nack(i, l)
	case lnRead:
		r.read(i, l)
	}
}

func (r *roundLog) created(l logLine) {
	cm := r.m.conts[l.cont]
	switch {
	case cm == nil:
		r.fail("", "child created an unknown container %q", l.cont)
	case r.exists[l.cont]:
		r.fail(l.cont, "container %q was lost: the child found it missing and created it again", l.cont)
	default:
		r.exists[l.cont] = true
		h := creationHistory(l.cont)
		r.hist[l.cont] = []histVersion{{h: h, d: h.Current(), step: -1, announced: -1, acked: -1}}
		// Open set the clock to step 0's now, and creating wrote it to the manifest.
		r.durNow = max(r.durNow, r.hiNow)
	}
}

func (r *roundLog) clock(i int, l logLine) {
	k := len(r.steps)
	if l.step != k {
		r.fail("clock", "child: clock step %d after %d steps", l.step, k)
		return
	}
	now := l.wall
	if k == 0 {
		if l.wall != r.lastWall {
			r.fail("clock", "child: step 0 wall clock %d, but the round started it at %d", l.wall, r.lastWall)
			return
		}
		now = max(now, r.m.now)
	} else {
		// The engine read the previous step's wall clock and reads no
		// other until this one: its now moves on by as much as the wall
		// moved forward (the time elapsed, to an injected clock), from the
		// previous now whether or not the wall was behind it, and stays
		// where it was when the wall moved back.
		prev := r.steps[k-1]
		now = prev.now + max(0, l.wall-prev.wall)
	}
	switch d := l.wall - r.lastWall; {
	case d <= -600:
		r.jumpsB++
	case d >= 600:
		r.jumpsF++
	}
	r.lastWall = l.wall
	r.steps = append(r.steps, stepInfo{wall: l.wall, now: now, announced: i})
	r.hiNow = max(r.hiNow, now)
	if k == 0 {
		r.conf = 0 // Open observed it already
	}
}

func (r *roundLog) policy(i int, l logLine) {
	hv := r.hist[l.cont]
	switch {
	case len(hv) == 0:
		r.fail("policy", "child: policy change of container %q, which does not exist", l.cont)
		return
	case l.step != r.conf || l.step != len(r.steps)-1:
		r.fail("policy", "child: policy change at step %d, but the step now is %d", l.step, r.conf)
		return
	case hv[len(hv)-1].acked < 0 && len(hv) > 1:
		r.fail("policy", "child: policy change while another is in flight")
		return
	}
	at := r.steps[l.step].now
	r.hist[l.cont] = append(hv, histVersion{h: hv[len(hv)-1].h.With(at, l.ttl), d: l.ttl, step: l.step, announced: i, acked: -1})
}

func (r *roundLog) start(i int, l logLine) {
	if _, dup := r.reqs[l.tag]; dup {
		r.fail(l.tag, "child: tag %s started twice", l.tag)
		return
	}
	if !r.exists[l.cont] || r.byID[l.cont] == nil {
		r.fail(l.tag, "child: write %s to container %q, which does not exist", l.tag, l.cont)
		return
	}
	if r.conf < 0 {
		r.fail(l.tag, "child: write %s before the first clock step", l.tag)
		return
	}
	req := &request{tag: l.tag, cont: l.cont, start: i, end: -1, step: -1}
	// The engine's now at the commit is at least the confirmed step's now
	// and every _ts acknowledged before.
	req.lo = max(r.steps[r.conf].now, r.maxTS)
	if l.cont == contClock {
		_, k, ok := strings.Cut(l.tag, ".k")
		n, err := strconv.Atoi(k)
		if !ok || err != nil || len(l.ops) != 1 || l.ops[0].id != probeID || n != len(r.steps)-1 {
			r.fail(l.tag, "child: malformed probe write %q", l.text)
			return
		}
		req.step = n
	}
	for _, o := range l.ops {
		if !idBelongs(l.cont, o.id) {
			r.fail(o.id, "child: write %s of item %q to container %q", l.tag, o.id, l.cont)
			return
		}
		op := &reqOp{req: req, wop: o}
		req.ops = append(req.ops, op)
		prev := r.byID[l.cont][o.id]
		if n := len(prev); n > 0 && sequential(o.id) && prev[n-1].req.end < 0 {
			r.fail(o.id, "child: write %s of %q while %s is in flight", l.tag, o.id, prev[n-1].req.tag)
			return
		}
		r.byID[l.cont][o.id] = append(prev, op)
	}
	r.reqs[l.tag] = req
	r.order = append(r.order, req)
}

func (r *roundLog) ack(i int, l logLine) {
	req := r.reqs[l.tag]
	if req == nil || req.end >= 0 || len(l.etags) != len(req.ops) {
		r.fail(l.tag, "child: %q answers no write in flight", l.text)
		return
	}
	req.end, req.acked = i, true
	var ts int64 = -1
	for k, op := range req.ops {
		op.etag, op.ts = l.etags[k], l.tss[k]
		r.acked++
		r.checked++
		if op.kind == "delete" {
			if op.etag != "-" || op.ts != 0 {
				r.fail(op.id, "child: delete acknowledged with %s %d", op.etag, op.ts)
			}
			op.etag, op.ts = "", 0
		} else {
			switch {
			case ts >= 0 && op.ts != ts:
				r.fail(op.id, "write %s: a batch acknowledged with _ts %d and %d: one commit has one now", req.tag, ts, op.ts)
			case op.ts < req.lo:
				r.fail(op.id, "write %s: _ts %d is below %d, the engine's now when it started (its clock ran backwards)", req.tag, op.ts, req.lo)
			case op.ts > r.hiNow:
				r.fail(op.id, "write %s: _ts %d is above %d, the highest now the engine can have reached", req.tag, op.ts, r.hiNow)
			case req.step >= 0 && op.ts != r.steps[req.step].now:
				r.fail(op.id, "clock step %d: the probe's _ts is %d, want %d (the engine's now before, moved on by the wall clock's forward move to %d)", req.step, op.ts, r.steps[req.step].now, r.steps[req.step].wall)
			}
			ts = op.ts
			r.maxTS = max(r.maxTS, op.ts)
		}
		if sequential(op.id) {
			r.checkPrecondition(op, "")
			r.seq[req.cont][op.id] = op.result()
		}
	}
	r.durNow = max(r.durNow, r.maxTS) // an acknowledged record is durable, and replay observes its _ts
}

func (r *roundLog) nack(i int, l logLine) {
	req := r.reqs[l.tag]
	if req == nil || req.end >= 0 {
		r.fail(l.tag, "child: %q answers no write in flight", l.text)
		return
	}
	req.end, req.nacked = i, true
	if !sequential(req.ops[0].id) {
		return // a shared id: its state depends on the order of concurrent writes
	}
	r.checked += int64(len(req.ops))
	// One refused op refuses the batch: some op must have a reason to be.
	// The refusal relied on an expiry only if every op that may have been
	// the refused one was refused for having expired: then it relied on at
	// least the earliest of their expiries.
	var why []string
	var plausible bool
	var relied int64 = -1
	var reliedID string
	for _, op := range req.ops {
		err := r.refusalImplausible(op, l.reason)
		if err != "" {
			why = append(why, err)
			continue
		}
		plausible = true
		e := int64(0)
		if l.reason != reasonConflict {
			e = r.reliedExpiry(req.cont, r.seq[req.cont][op.id], req.start, i)
		}
		if relied < 0 || e < relied {
			relied, reliedID = e, op.id
		}
	}
	if !plausible {
		r.fail(req.ops[0].id, "write %s refused (%s) for no reason: %s", req.tag, l.reason, strings.Join(why, "; "))
		return
	}
	r.rely(relied, reliedID, i)
}

// reliedExpiry returns the expiry instant that an answer between lines
// from and to, which found s not live, relied on: the earliest of s's
// expiries under the histories the answer may have seen that the engine's
// now can have reached; 0 if s is absent (deleted or never written, no
// expiry involved) or none can have been reached (a violation reported
// elsewhere).
func (r *roundLog) reliedExpiry(cont string, s itemState, from, to int) int64 {
	if !s.Present {
		return 0
	}
	var e int64
	for _, x := range r.expiryRange(cont, s, from, to) {
		if x <= r.hiNow && (e == 0 || x < e) {
			e = x
		}
	}
	return e
}

// rely records that the answer on line i, about id, relied on the engine's
// now having reached expiry instant e (nothing if e is 0).
func (r *roundLog) rely(e int64, id string, i int) {
	if e <= 0 {
		return
	}
	r.reliedN++
	if e > r.relied {
		r.relied, r.reliedID, r.reliedLine = e, id, i
	}
}

// checkPrecondition checks that an acknowledged write of a sequential id
// found what it needs: a create no live item, a replace, delete or
// conditional upsert a live one.
func (r *roundLog) checkPrecondition(op *reqOp, _ string) {
	req := op.req
	s := r.seq[req.cont][op.id]
	var needLive bool
	switch {
	case op.kind == "create":
		needLive = false
	case op.kind == "replace" || op.kind == "delete" || op.ifMatch:
		needLive = true
	default:
		return
	}
	if !r.couldBe(needLive, req.cont, s, req.start, req.end, req.lo, r.hiNow) {
		what := "a live item"
		if !needLive {
			what = "no live item"
		}
		r.fail(op.id, "write %s (%s of %q) succeeded, so it found %s, but the item was %s (expires at %s; engine now %d..%d)%s",
			req.tag, op.kind, op.id, what, s, fmtInstant(r.expiryRange(req.cont, s, req.start, req.end)), req.lo, r.hiNow, backHint(needLive))
	}
}

// refusalImplausible says why op could not have been refused for reason,
// or "" if it could.
func (r *roundLog) refusalImplausible(op *reqOp, reason string) string {
	req := op.req
	s := r.seq[req.cont][op.id]
	var live bool
	switch {
	case reason == reasonConflict && op.kind == "create":
		live = true
	case reason == reasonNotFound && (op.kind == "replace" || op.kind == "delete"):
		live = false
	case reason == reasonPrecondition && op.ifMatch && op.kind == "upsert":
		live = false // the worker's etag is the current one: only absence fails it
	default:
		return fmt.Sprintf("%s of %q is never refused with %s", op.kind, op.id, reason)
	}
	if r.couldBe(live, req.cont, s, req.start, req.end, req.lo, r.hiNow) {
		return ""
	}
	return fmt.Sprintf("%q was %s (expires at %s; engine now %d..%d)", op.id, s, fmtInstant(r.expiryRange(req.cont, s, req.start, req.end)), req.lo, r.hiNow)
}

func (r *roundLog) read(i int, l logLine) {
	if l.step < 0 || l.step >= len(r.steps) || l.step > r.conf {
		r.fail(l.id, "child: read after step %d, which is not confirmed", l.step)
		return
	}
	if !sequential(l.id) {
		return
	}
	r.checked++
	from := r.steps[l.step].announced
	lo := r.steps[l.step].now
	s := r.seq[l.cont][l.id]
	if !l.found {
		if !r.couldBe(false, l.cont, s, from, i, lo, r.hiNow) {
			r.fail(l.id, "a read of %q found nothing, but it is %s (expires at %s; engine now %d..%d): an acknowledged write lost",
				l.id, s, fmtInstant(r.expiryRange(l.cont, s, from, i)), lo, r.hiNow)
			return
		}
		r.rely(r.reliedExpiry(l.cont, s, from, i), l.id, i)
		return
	}
	got := itemState{Present: true, W: l.w, TS: l.ts, ETag: l.etag}
	switch {
	case !s.Present || s.W != got.W:
		r.fail(l.id, "a read of %q found %s, but the last write left %s", l.id, got, s)
	case s.TS != got.TS || s.ETag != got.ETag:
		r.fail(l.id, "a read of %q found %s, but the write was acknowledged as %s", l.id, got, s)
	case !r.couldBe(true, l.cont, s, from, i, lo, r.hiNow):
		r.fail(l.id, "a read of %q found %s, which expired at %s (engine now %d..%d): an expired item came back",
			l.id, got, fmtInstant(r.expiryRange(l.cont, s, from, i)), lo, r.hiNow)
	}
}

// versions returns the policy histories an operation between lines from
// and to may have seen.
func (r *roundLog) versions(cont string, from, to int) []policy.History {
	hv := r.hist[cont]
	var out []policy.History
	for j, v := range hv {
		if j > 0 && v.announced > to {
			break
		}
		if j+1 < len(hv) && hv[j+1].acked >= 0 && hv[j+1].acked < from {
			continue // superseded before the operation started
		}
		out = append(out, v.h)
	}
	return out
}

// couldBe reports whether s could have been live (or not live) at some
// instant in [lo, hi] under some history an operation between lines from
// and to may have seen.
func (r *roundLog) couldBe(live bool, cont string, s itemState, from, to int, lo, hi int64) bool {
	if !s.Present {
		return !live
	}
	for _, h := range r.versions(cont, from, to) {
		e := s.ExpiresAt(h, ttlOf(s.W))
		if live && lo < e || !live && e <= hi {
			return true
		}
	}
	return false
}

// expiryRange is s's expiry under each history the operation may have seen.
func (r *roundLog) expiryRange(cont string, s itemState, from, to int) []int64 {
	var out []int64
	for _, h := range r.versions(cont, from, to) {
		out = append(out, s.ExpiresAt(h, ttlOf(s.W)))
	}
	return out
}

func fmtInstant(es []int64) string {
	var parts []string
	for _, e := range es {
		if e == policy.Never {
			parts = append(parts, "never")
		} else {
			parts = append(parts, strconv.FormatInt(e, 10))
		}
	}
	return strings.Join(parts, " or ")
}

func backHint(needLive bool) string {
	if needLive {
		return ": an acknowledged write lost, or expiry too early"
	}
	return ": an expired or deleted item came back"
}

// linesAbout returns the round's lines that name word (an id, a tag, a
// container) and its policy lines, each after the clock line in force, at
// most limit of them (the last ones).
func (r *roundLog) linesAbout(word string, limit int) []string {
	var out []string
	tags := map[string]bool{}
	for _, l := range r.lines {
		for _, o := range l.ops {
			if o.id == word {
				tags[l.tag] = true
			}
		}
	}
	clock, clockOut := "", true
	for _, l := range r.lines {
		if l.kind == lnClock {
			clock, clockOut = l.text, false
			continue
		}
		keep := l.kind == lnPolicy || l.kind == lnPolicied || l.kind == lnFail || tags[l.tag]
		if word != "" && !keep {
			for _, f := range strings.Fields(l.text) {
				if f == word {
					keep = true
					break
				}
			}
		}
		if keep {
			if !clockOut {
				out, clockOut = append(out, clock), true
			}
			out = append(out, l.text)
		}
	}
	if len(out) > limit {
		out = append([]string{fmt.Sprintf("... %d earlier lines", len(out)-limit)}, out[len(out)-limit:]...)
	}
	return out
}
