package crashloop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/policy"
)

// After each round the checker reopens the database, as an application
// would after the crash, and reads every item that any write ever touched.
// Each must be in one of the states the round's log allows, judged at the
// engine's now, which a probe write measures and which must lie within
// the bounds the log sets:
//
//   - at least the wall clock, the now persisted by the last clean Close,
//     every acknowledged _ts (replay observes them), the instant of every
//     acknowledged DefaultTTL change (the manifest records the clock) and
//     the expiry instant of every item that an acknowledged answer found
//     expired (a read that found an own id gone, a refusal of one): the
//     engine makes that durable before the answer goes out, so an item
//     seen gone never comes back;
//   - at most the wall clock or the highest now the child may have reached.
//
// Anything between is allowed: the child may have raised the clock (a
// read at a wall clock hours ahead, say) less than a second before the
// kill, before the CLOCK file caught up, as long as nothing was seen to
// expire in that time. Within the bounds the check is exact: an item is
// visible iff now < its expiry under the policy history.

// candidate is one state an item may be in after a round.
type candidate struct {
	st        itemState
	tsUnknown bool // an in-flight write: _ts within [tsLo, tsHi], etag unknown
	tsLo      int64
	tsHi      int64
	op        *reqOp // nil: the state before the round
}

func (c candidate) String() string {
	s := c.st.String()
	if c.tsUnknown && c.st.Present {
		s = fmt.Sprintf("%s@%d..%d", c.st.W, c.tsLo, c.tsHi)
	}
	switch {
	case c.op == nil:
		return s + " (before the round)"
	case c.op.req.acked:
		return s + " (acknowledged " + c.op.req.tag + ")"
	default:
		return s + " (in flight " + c.op.req.tag + ")"
	}
}

// candidates returns the states id may be in after round r: the result of
// any acknowledged write that no other acknowledged write certainly
// followed (only the last one, for a sequential id), or the state before
// the round if none was acknowledged; and the result of any write in
// flight at the kill.
func (r *roundLog) candidates(cont, id string) []candidate {
	ops := r.byID[cont][id]
	var out []candidate
	anyAcked := false
	for _, a := range ops {
		if !a.req.acked {
			continue
		}
		anyAcked = true
		last := true
		for _, b := range ops {
			if b.req.acked && b.req.start > a.req.end {
				last = false
				break
			}
		}
		if last {
			out = append(out, candidate{st: a.result(), op: a})
		}
	}
	if !anyAcked {
		out = append(out, candidate{st: r.m.conts[cont].items[id]})
	}
	for _, f := range ops {
		if f.req.end >= 0 {
			continue
		}
		c := candidate{op: f}
		if f.kind != "delete" {
			c.st = itemState{Present: true, W: f.w}
			c.tsUnknown, c.tsLo, c.tsHi = true, f.req.lo, r.hiNow
		}
		out = append(out, c)
	}
	return out
}

// matches reports whether found (read at now under h) is candidate c.
func (c candidate) matches(found itemState, h policy.History, now int64) bool {
	if !found.Present {
		if !c.st.Present {
			return true
		}
		if c.tsUnknown {
			return h.ExpiresAt(c.tsLo, ttlOf(c.st.W)) <= now // expiry grows with _ts
		}
		return c.st.ExpiresAt(h, ttlOf(c.st.W)) <= now
	}
	if !c.st.Present || c.st.W != found.W || found.ExpiresAt(h, ttlOf(found.W)) <= now {
		return false
	}
	if c.tsUnknown {
		return c.tsLo <= found.TS && found.TS <= c.tsHi
	}
	return c.st.TS == found.TS && (c.st.ETag == "" || c.st.ETag == found.ETag)
}

// checker reopens the database after each round and checks it against the
// model, which it then brings up to date.
type checker struct {
	dbDir string
	m     *model
	rep   *Report
}

// afterRound reopens the database at wall clock wall after round r and
// checks every item; with compact, it compacts every container and checks
// again. It updates the model when the check passes.
func (ck *checker) afterRound(ctx context.Context, r *roundLog, wall int64, compact bool) {
	if r.violation != nil {
		return
	}
	db, err := engine.Open(ck.dbDir, engineOptions(func() time.Time { return time.Unix(wall, 0) }))
	ck.rep.Restarts++
	if err != nil {
		r.fail("", "reopen after the kill: %v", err)
		return
	}
	defer func() {
		if err := db.Close(); err != nil {
			r.fail("", "close after the check: %v", err)
		}
	}()
	now, ok := ck.measureNow(ctx, db, r, wall)
	if !ok {
		return
	}
	hists := map[string]policy.History{}
	conts := map[string]*engine.Container{}
	for _, name := range allContainers {
		c, err := db.Container(name)
		switch {
		case errors.Is(err, engine.ErrNotFound) && !r.exists[name]:
			continue // created by no acknowledged request: not there is fine
		case errors.Is(err, engine.ErrNotFound):
			r.fail(name, "container %q was lost", name)
			return
		case err != nil:
			r.fail(name, "container %q: %v", name, err)
			return
		}
		if !r.exists[name] { // created in flight at the kill
			r.exists[name] = true
			h := creationHistory(name)
			r.hist[name] = []histVersion{{h: h, d: h.Current(), step: -1, announced: -1, acked: -1}}
		}
		h, ok := r.resolvePolicy(name, c.Properties().DefaultTTL)
		if !ok {
			return
		}
		hists[name], conts[name] = h, c
	}
	found := map[string]map[string]itemState{}
	for pass := 0; pass < 2; pass++ {
		for name, c := range conts {
			f, ok := ck.checkContainer(ctx, r, c, hists[name], now)
			if !ok {
				return
			}
			if pass == 0 {
				found[name] = f
				ck.checkBatches(r, name, hists[name], now, f)
			} else {
				for id, s := range f {
					if s != found[name][id] {
						r.fail(id, "item %q: %s before Compact, %s after", id, found[name][id], s)
					}
				}
			}
		}
		if !compact || r.violation != nil {
			break
		}
		for _, c := range conts {
			if err := c.Compact(ctx); err != nil {
				r.fail(c.ID(), "Compact of %s after the restart: %v", c.ID(), err)
				return
			}
		}
	}
	if r.violation != nil {
		return
	}
	// The check passed: the found state is the model from now on.
	for name := range conts {
		cm := ck.m.conts[name]
		cm.exists, cm.history = true, hists[name]
		cm.items = map[string]itemState{}
		for id, s := range found[name] {
			cm.universe[id] = true
			if s.Present {
				cm.items[id] = s
			}
		}
	}
	ck.m.now = now
}

// measureNow writes the checker's probe and returns its _ts, the engine's
// now, after checking it against the bounds the round's log sets.
func (ck *checker) measureNow(ctx context.Context, db *engine.DB, r *roundLog, wall int64) (int64, bool) {
	c, err := db.Container(contClock)
	if errors.Is(err, engine.ErrNotFound) && !r.exists[contClock] {
		c, err = db.CreateContainer(ctx, engine.ContainerProperties{ID: contClock, DefaultTTL: defaultTTLOf(contClock)})
		r.exists[contClock] = true
		h := creationHistory(contClock)
		r.hist[contClock] = []histVersion{{h: h, d: h.Current(), step: -1, announced: -1, acked: -1}}
	}
	if err != nil {
		r.fail(contClock, "container %q after the restart: %v", contClock, err)
		return 0, false
	}
	w := fmt.Sprintf("r%d.check", r.round)
	it, err := c.Upsert(ctx, docFor(checkID, w))
	if err != nil {
		r.fail(checkID, "the checker's probe write: %v", err)
		return 0, false
	}
	now := it.TS
	if now < r.relied {
		r.fail(r.reliedID, "an item seen expired can come back: after the restart at wall clock %d the engine's now is %d, below %d, the expiry instant of %q that the acknowledged answer %q relied on",
			wall, now, r.relied, r.reliedID, r.lines[r.reliedLine].text)
		return 0, false
	}
	lo, hi := max(wall, r.durNow, r.relied), max(wall, r.hiNow)
	if now < lo || now > hi {
		r.fail("clock", "after the restart at wall clock %d the engine's now is %d, want %d..%d (persisted before the kill: %d; relied on by an answer: %d; highest the child may have reached: %d)",
			wall, now, lo, hi, r.durNow, r.relied, r.hiNow)
		return 0, false
	}
	if len(r.steps) > 0 && now < r.steps[r.conf].now {
		ck.rep.ClockLags++
	}
	cm := ck.m.conts[contClock]
	cm.items[checkID] = itemState{Present: true, W: w, TS: it.TS, ETag: it.ETag}
	cm.universe[checkID] = true
	return now, true
}

// resolvePolicy returns container name's policy history after the round:
// the last acknowledged one, or the change in flight at the kill if the
// container's current DefaultTTL says it was applied.
func (r *roundLog) resolvePolicy(name string, current *int32) (policy.History, bool) {
	hv := r.hist[name]
	last := len(hv) - 1
	if hv[last].acked < 0 && last > 0 { // a change in flight
		if sameTTL(current, hv[last].d) {
			return hv[last].h, true
		}
		last--
	}
	if !sameTTL(current, hv[last].h.Current()) {
		r.fail("policy", "container %q: DefaultTTL %s after the restart, want %s", name, ttlString(current), ttlString(hv[last].h.Current()))
		return nil, false
	}
	return hv[last].h, true
}

func sameTTL(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// checkContainer reads every id of c the model or the round knows, checks
// each against its candidates at now, and checks that Items and Stats
// agree with the reads. It returns the state found per id.
func (ck *checker) checkContainer(ctx context.Context, r *roundLog, c *engine.Container, h policy.History, now int64) (map[string]itemState, bool) {
	name := c.ID()
	ids := map[string]bool{}
	for id := range ck.m.conts[name].universe {
		ids[id] = true
	}
	for id := range r.byID[name] {
		ids[id] = true
	}
	found := make(map[string]itemState, len(ids))
	read := make(map[string]engine.Item)
	for id := range ids {
		it, err := c.Read(ctx, id)
		ck.rep.ItemsChecked++
		var got itemState
		switch {
		case errors.Is(err, engine.ErrNotFound):
		case err != nil:
			r.fail(id, "item %q: Read after the restart: %v", id, err)
			return nil, false
		default:
			w, err := writeOf(it)
			if err != nil {
				r.fail(id, "after the restart: %v", err)
				return nil, false
			}
			got = itemState{Present: true, W: w, TS: it.TS, ETag: it.ETag}
			read[id] = it
		}
		found[id] = got
		cands := r.candidates(name, id)
		ok := false
		for _, c := range cands {
			if c.matches(got, h, now) {
				ok = true
				break
			}
		}
		if !ok {
			r.fail(id, "%s", describeMismatch(name, id, got, cands, h, now))
			return nil, false
		}
	}
	var prev string
	n := 0
	for it, err := range c.Items(ctx) {
		if err != nil {
			r.fail(name, "Items of %s: %v", name, err)
			return nil, false
		}
		if n > 0 && it.ID <= prev {
			r.fail(it.ID, "Items of %s: %q after %q: not in id order", name, it.ID, prev)
		}
		prev = it.ID
		n++
		rd, ok := read[it.ID]
		switch {
		case !ok && !ids[it.ID]:
			r.fail(it.ID, "Items of %s yielded %q, which no write created", name, it.ID)
		case !ok:
			r.fail(it.ID, "Items of %s yielded %q, which Read did not find", name, it.ID)
		case rd.TS != it.TS || rd.ETag != it.ETag || !bytes.Equal(rd.Body, it.Body):
			r.fail(it.ID, "item %q: Items yielded _ts %d etag %s, Read _ts %d etag %s", it.ID, it.TS, it.ETag, rd.TS, rd.ETag)
		}
	}
	if n != len(read) {
		r.fail(name, "Items of %s yielded %d items, Read found %d", name, n, len(read))
	}
	if st := c.Stats(); st.Items != int64(len(read)) {
		r.fail(name, "Stats of %s: %d items, Read found %d", name, st.Items, len(read))
	}
	return found, r.violation == nil
}

// describeMismatch says how found differs from every allowed state.
func describeMismatch(cont, id string, found itemState, cands []candidate, h policy.History, now int64) string {
	what := "an acknowledged write was lost"
	if found.Present {
		what = "an item is in no allowed state"
		known, live := false, false
		for _, c := range cands {
			known = known || (c.st.Present && c.st.W == found.W)
			if c.st.Present {
				ts := c.st.TS
				if c.tsUnknown {
					ts = c.tsHi
				}
				live = live || h.ExpiresAt(ts, ttlOf(c.st.W)) > now
			}
		}
		switch {
		case known && found.ExpiresAt(h, ttlOf(found.W)) <= now:
			what = "an expired item came back"
		case !known && live:
			what = "an acknowledged write was lost (an older version is visible)"
		case !known:
			what = "a deleted or expired version came back"
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: item %q in %s after the restart (engine now %d) is %s", what, id, cont, now, found)
	if found.Present {
		fmt.Fprintf(&b, " (expires at %s)", fmtInstant([]int64{found.ExpiresAt(h, ttlOf(found.W))}))
	}
	b.WriteString("; allowed:")
	for _, c := range cands {
		fmt.Fprintf(&b, "\n\t  %s", c)
		if c.st.Present && !c.tsUnknown {
			fmt.Fprintf(&b, ", expires at %s", fmtInstant([]int64{c.st.ExpiresAt(h, ttlOf(c.st.W))}))
		}
	}
	return b.String()
}

// checkBatches checks that every batch in flight at the kill is whole or
// absent: no op of it applied while another was not.
func (ck *checker) checkBatches(r *roundLog, cont string, h policy.History, now int64, found map[string]itemState) {
	for _, req := range r.order {
		if req.cont != cont || req.end >= 0 || len(req.ops) < 2 {
			continue
		}
		verdict := map[bool][]string{}
		for _, op := range req.ops {
			var applied, other bool
			for _, c := range r.candidates(cont, op.id) {
				if c.matches(found[op.id], h, now) {
					if c.op == op {
						applied = true
					} else {
						other = true
					}
				}
			}
			if applied != other { // otherwise both look the same now
				verdict[applied] = append(verdict[applied], op.id)
			}
		}
		if len(verdict[true]) > 0 && len(verdict[false]) > 0 {
			sort.Strings(verdict[true])
			r.fail(req.tag, "batch %s in flight at the kill is torn: applied to %v, not to %v", req.tag, verdict[true], verdict[false])
			return
		}
		ck.rep.BatchesChecked++
	}
}
