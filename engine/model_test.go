package engine

// TestModel is the model-based (metamorphic) test of ebb's first invariant:
// the visible state is a pure function of the acknowledged writes, the
// policy history and the clock, whatever compaction, sealing and restarts do
// meanwhile. It runs a seeded random sequence of operations against the
// engine and against the reference model of the TTL rules in model_ref_test.go,
// and compares every answer: found or not, the body's user properties, _ts,
// the etag (the one the write returned), errors by sentinel, Items in id
// order, Stats.Items exactly.
//
// Operations, over ids i00..i29 (a few of them hot) in containers c0..c2:
// create, upsert, replace and delete (with no IfMatch, the right etag, a
// stale one or a bogus one), read, transactional batches (sometimes with an
// operation that must fail, so that nothing is applied), items, stats, clock
// moves (mostly seconds, sometimes hours, sometimes hours back), DefaultTTL
// changes (nil, -1, 1..50, large), compaction, Close and Open (the wall clock
// sometimes set back), a simulated crash (the files copied while the DB is
// open, then opened), container creation and deletion (and calls through a
// deleted container's handle), invalid item ttls and invalid properties. A
// background goroutine reads, lists and counts items meanwhile, for the race
// detector. Variants: mixed (with a stretch of compaction after every step
// and one of restarts every few steps), compact (after every step), restart
// (every 1-5 steps).
//
// Two white-box touches: after a clock move with no container left the
// runner calls db.clock.now() so that the engine observes that second, and a
// simulated crash holds db.sealMu while it copies the files.
//
//	EBB_MODEL_SEED=n    replay seed n (it is logged by every run)
//	EBB_MODEL_OPS=n     n random operations per variant instead of the default
//	EBB_MODEL_TRACE=1   log every operation and its outcome
//	EBB_MODEL_SHRINK=1  on a failure, shrink the sequence and log a minimal one
//
// The generated sequence does not depend on what the engine answers: an
// operation names its etag symbolically (the item's current one, a stale one,
// a bogus one) and the runner resolves it against the model. So a sequence
// can be replayed, and shrunk by dropping operations.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type mdlKind uint8

const (
	mdlCreate mdlKind = iota
	mdlUpsert
	mdlReplace
	mdlDelete
	mdlRead
	mdlBatch
	mdlItems
	mdlStats
	mdlClock
	mdlSetTTL
	mdlCompact
	mdlCompactAll
	mdlReopen
	mdlCreateContainer
	mdlDeleteContainer
	mdlBadTTL
	mdlBadProps
	mdlCheckAll
	mdlCrash
	mdlKinds
)

var mdlKindNames = [mdlKinds]string{
	"create", "upsert", "replace", "delete", "read", "batch", "items", "stats", "clock",
	"setttl", "compact", "compact-all", "reopen", "create-container", "delete-container",
	"bad-ttl", "bad-props", "check-all", "crash",
}

func (k mdlKind) String() string { return mdlKindNames[k] }

// mdlEtag names the IfMatch etag of a write symbolically.
type mdlEtag uint8

const (
	mdlNoEtag    mdlEtag = iota
	mdlRightEtag         // the item's current etag (its last one when it is gone)
	mdlStaleEtag         // an earlier etag of the item
	mdlBogusEtag         // an etag never issued
)

const mdlBogus = `"not-an-etag"`

// The id space.
const (
	mdlConts = 3
	mdlIDs   = 30
)

func mdlCName(k int) string { return "c" + strconv.Itoa(k) }
func mdlID(i int) string    { return fmt.Sprintf("i%02d", i) }

// mdlOp is one step of a sequence.
type mdlOp struct {
	kind mdlKind
	c    int     // container index
	id   int     // item index
	ttl  int32   // the item's ttl: 0 absent, -1, n
	val  int     // the user value; also picks padding and variants
	sys  bool    // the document carries stale _ts and _etag, to be ignored
	etag mdlEtag // IfMatch
	dt   int64   // clock: seconds the wall clock moves (negative: back)
	dttl int64   // setttl, create-container: DefaultTTL (mdlTTLOff: absent)
	sub  []mdlOp // batch: its operations, on distinct ids
	dup  bool    // batch: also writes its first id a second time
	back int64   // reopen: seconds the wall clock is set back before Open
	fix  bool    // clock: a wall clock behind the engine's time is first corrected to it
	land bool    // clock: move to the next expiry instant of a live item, plus dt (-1 or 0), if within the hour
	sync bool    // reopen: fsync writes (NoSync off)
	comp Compression
}

func mdlTTLString(dttl int64) string {
	if dttl == mdlTTLOff {
		return "nil"
	}
	return strconv.FormatInt(dttl, 10)
}

func (o mdlOp) String() string {
	var b strings.Builder
	b.WriteString(o.kind.String())
	switch o.kind {
	case mdlCreate, mdlUpsert, mdlReplace, mdlDelete, mdlRead, mdlBadTTL:
		fmt.Fprintf(&b, " %s/%s", mdlCName(o.c), mdlID(o.id))
	case mdlItems, mdlStats, mdlCompact, mdlSetTTL, mdlCreateContainer, mdlDeleteContainer, mdlBadProps, mdlBatch:
		fmt.Fprintf(&b, " %s", mdlCName(o.c))
	}
	switch o.kind {
	case mdlCreate, mdlUpsert, mdlReplace:
		if o.ttl != 0 {
			fmt.Fprintf(&b, " ttl=%d", o.ttl)
		}
		fmt.Fprintf(&b, " v=%d", o.val)
		if o.sys {
			b.WriteString(" +sys")
		}
	case mdlBadTTL:
		fmt.Fprintf(&b, " %s ttl=%s", []mdlKind{mdlCreate, mdlUpsert, mdlReplace}[o.val%3], mdlBadTTLs[o.val%len(mdlBadTTLs)])
	case mdlBadProps:
		fmt.Fprintf(&b, " #%d", o.val%4)
	case mdlClock:
		fmt.Fprintf(&b, " %+d", o.dt)
		if o.fix {
			b.WriteString(" +fix")
		}
		if o.land {
			b.WriteString(" to-next-expiry")
		}
	case mdlSetTTL, mdlCreateContainer:
		fmt.Fprintf(&b, " defaultTtl=%s", mdlTTLString(o.dttl))
	case mdlReopen:
		fmt.Fprintf(&b, " back=%d sync=%v comp=%d", o.back, o.sync, o.comp)
	case mdlCrash:
		fmt.Fprintf(&b, " sync=%v comp=%d", o.sync, o.comp)
	case mdlBatch:
		b.WriteString(" [")
		for i, s := range o.sub {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(s.String())
		}
		b.WriteString("]")
		if o.dup {
			b.WriteString(" +dup")
		}
	}
	switch o.etag {
	case mdlRightEtag:
		b.WriteString(" if=right")
	case mdlStaleEtag:
		b.WriteString(" if=stale")
	case mdlBogusEtag:
		b.WriteString(" if=bogus")
	}
	return b.String()
}

// ---- generation ----

// mdlGen returns the ops of one variant: n random operations, with
// compactions after every step or restarts every few steps where the
// variant asks for them, a full check every 50 steps, and a final restart.
func mdlGen(rng *rand.Rand, n int, variant string) []mdlOp {
	ops := []mdlOp{
		{kind: mdlCreateContainer, c: 0, dttl: mdlGenDTTL(rng)},
		{kind: mdlCreateContainer, c: 1, dttl: mdlGenDTTL(rng)},
	}
	untilRestart := 0
	for i := range n {
		ops = append(ops, mdlGenOp(rng))
		f := float64(i) / float64(n)
		if variant == "compact" || (variant == "mixed" && f >= 0.40 && f < 0.45) {
			ops = append(ops, mdlOp{kind: mdlCompactAll})
		}
		if variant == "restart" || (variant == "mixed" && f >= 0.70 && f < 0.80) {
			if untilRestart--; untilRestart <= 0 {
				ops = append(ops, mdlGenReopen(rng))
				untilRestart = 1 + rng.IntN(5)
			}
		}
		if i%50 == 49 {
			ops = append(ops, mdlOp{kind: mdlCheckAll})
		}
	}
	return append(ops, mdlOp{kind: mdlCheckAll}, mdlGenReopen(rng), mdlOp{kind: mdlCompactAll})
}

func mdlGenContainer(rng *rand.Rand) int {
	switch p := rng.IntN(100); {
	case p < 45:
		return 0
	case p < 85:
		return 1
	default:
		return 2
	}
}

func mdlGenItemTTL(rng *rand.Rand) int32 {
	switch p := rng.IntN(100); {
	case p < 30:
		return 0
	case p < 45:
		return -1
	case p < 47:
		return 2147483647
	default:
		return 1 + rng.Int32N(60)
	}
}

func mdlGenDTTL(rng *rand.Rand) int64 {
	switch p := rng.IntN(100); {
	case p < 20:
		return mdlTTLOff
	case p < 40:
		return -1
	case p < 85:
		return 1 + rng.Int64N(50)
	case p < 92:
		return 86400
	default:
		return 2147483647
	}
}

// mdlGenEtag picks an IfMatch mode; pNone is the percentage without one.
func mdlGenEtag(rng *rand.Rand, pNone int) mdlEtag {
	p := rng.IntN(100)
	switch {
	case p < pNone:
		return mdlNoEtag
	case p < pNone+(100-pNone)/2:
		return mdlRightEtag
	case p < pNone+(100-pNone)*4/5:
		return mdlStaleEtag
	default:
		return mdlBogusEtag
	}
}

func mdlGenWrite(rng *rand.Rand, kind mdlKind, c, id int) mdlOp {
	o := mdlOp{kind: kind, c: c, id: id}
	switch kind {
	case mdlCreate:
	case mdlUpsert:
		o.etag = mdlGenEtag(rng, 85)
	case mdlReplace:
		o.etag = mdlGenEtag(rng, 45)
	case mdlDelete:
		o.etag = mdlGenEtag(rng, 50)
	}
	if kind != mdlDelete {
		o.ttl = mdlGenItemTTL(rng)
		o.val = rng.IntN(100000)
		o.sys = rng.IntN(20) == 0
	}
	return o
}

func mdlGenReopen(rng *rand.Rand) mdlOp {
	o := mdlOp{kind: mdlReopen, sync: rng.IntN(100) < 15}
	if rng.IntN(100) < 25 {
		o.kind = mdlCrash
	} else if rng.IntN(100) < 35 {
		o.back = 3600 * (1 + rng.Int64N(3))
	}
	o.comp = []Compression{CompressionDefault, CompressionDefault, CompressionS2, CompressionNone}[rng.IntN(4)]
	return o
}

func mdlGenOp(rng *rand.Rand) mdlOp {
	c, id := mdlGenContainer(rng), rng.IntN(mdlIDs)
	if rng.IntN(100) < 60 { // a few hot ids, so that items often exist
		id = rng.IntN(8)
	}
	switch w := rng.IntN(1000); {
	case w < 130:
		return mdlGenWrite(rng, mdlCreate, c, id)
	case w < 270:
		return mdlGenWrite(rng, mdlUpsert, c, id)
	case w < 360:
		return mdlGenWrite(rng, mdlReplace, c, id)
	case w < 430:
		return mdlGenWrite(rng, mdlDelete, c, id)
	case w < 580:
		return mdlOp{kind: mdlRead, c: c, id: id}
	case w < 640:
		o := mdlOp{kind: mdlBatch, c: c, dup: rng.IntN(25) == 0}
		ids := rng.Perm(mdlIDs)[:2+rng.IntN(3)]
		if rng.IntN(2) == 0 {
			ids = rng.Perm(8)[:len(ids)]
		}
		for _, id := range ids {
			kind := []mdlKind{mdlUpsert, mdlUpsert, mdlUpsert, mdlCreate, mdlCreate, mdlReplace, mdlDelete}[rng.IntN(7)]
			s := mdlGenWrite(rng, kind, c, id)
			if rng.IntN(100) < 70 {
				s.etag = mdlNoEtag
			}
			o.sub = append(o.sub, s)
		}
		if rng.IntN(4) == 0 { // one operation that must fail: nothing is applied
			s := &o.sub[rng.IntN(len(o.sub))]
			s.kind, s.etag = mdlReplace, mdlBogusEtag
			if s.val == 0 {
				s.val, s.ttl = rng.IntN(100000), mdlGenItemTTL(rng)
			}
		}
		return o
	case w < 665:
		return mdlOp{kind: mdlItems, c: c}
	case w < 690:
		return mdlOp{kind: mdlStats, c: c}
	case w < 820:
		o := mdlOp{kind: mdlClock, id: id}
		switch p := rng.IntN(100); {
		case p < 55:
			o.dt = rng.Int64N(6)
		case p < 85:
			o.dt = rng.Int64N(61)
		case p < 93:
			o.dt = 61 + rng.Int64N(140)
		case p < 97:
			o.dt = 3600 * (1 + rng.Int64N(5))
		default:
			o.dt = -3600 * (1 + rng.Int64N(5))
		}
		o.fix = o.dt >= 0 && rng.IntN(3) == 0
		if rng.IntN(100) < 15 {
			o.land, o.dt, o.fix = true, -rng.Int64N(2), true
		}
		return o
	case w < 850:
		return mdlOp{kind: mdlSetTTL, c: c, dttl: mdlGenDTTL(rng)}
	case w < 870:
		return mdlOp{kind: mdlCompact, c: c}
	case w < 880:
		return mdlGenReopen(rng)
	case w < 900:
		return mdlOp{kind: mdlCreateContainer, c: c, dttl: mdlGenDTTL(rng)}
	case w < 904:
		return mdlOp{kind: mdlDeleteContainer, c: c}
	case w < 920:
		return mdlOp{kind: mdlBadTTL, c: c, id: id, val: rng.IntN(1000)}
	case w < 930:
		return mdlOp{kind: mdlBadProps, c: c, val: rng.IntN(1000)}
	default:
		return mdlOp{kind: mdlRead, c: c, id: id}
	}
}

// mdlBadTTLs are item ttl values the TTL rules reject.
var mdlBadTTLs = []string{`0`, `null`, `1.5`, `"10"`, `true`, `{}`, `-2`, `2147483648`, `-2147483649`, `[]`, `-0.5`}

// ---- documents ----

// mdlDoc returns the JSON of a document and the user properties a read of it
// must show (everything but _ts and _etag).
func mdlDoc(id string, ttl int32, val int, sys bool) ([]byte, map[string]any) {
	m := map[string]any{"id": id, "v": val, "pad": strings.Repeat("x", val%300)}
	if ttl != 0 {
		m["ttl"] = ttl
	}
	if val%7 == 0 {
		m["nested"] = map[string]any{"a": []any{val, "s", true, nil}, "b": map[string]any{}}
	}
	if sys {
		m["_ts"] = 12345
		m["_etag"] = `"junk"`
	}
	doc, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	body, err := mdlDecode(doc)
	if err != nil {
		panic(err)
	}
	delete(body, "_ts")
	delete(body, "_etag")
	return doc, body
}

func mdlDecode(b []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the object: %v", err)
	}
	return m, nil
}

func mdlTTLPtr(dttl int64) *int32 {
	if dttl == mdlTTLOff {
		return nil
	}
	return TTL(int32(dttl))
}

func mdlSameTTL(p *int32, dttl int64) bool {
	if p == nil {
		return dttl == mdlTTLOff
	}
	return dttl != mdlTTLOff && int64(*p) == dttl
}

// ---- discrepancies ----

// mdlDiff is a disagreement between the engine and the model. class is
// stable across replays (no ids, values or etags) so that shrinking keeps
// looking for the same failure.
type mdlDiff struct{ class, msg string }

func (d *mdlDiff) Error() string { return d.class + ": " + d.msg }

func mdlf(class, format string, args ...any) error {
	return &mdlDiff{class: class, msg: fmt.Sprintf(format, args...)}
}

func mdlClass(err error) string {
	var d *mdlDiff
	if errors.As(err, &d) {
		return d.class
	}
	return err.Error()
}

func mdlErrName(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrNotFound):
		return "ErrNotFound"
	case errors.Is(err, ErrConflict):
		return "ErrConflict"
	case errors.Is(err, ErrPreconditionFailed):
		return "ErrPreconditionFailed"
	case errors.Is(err, ErrInvalidTTL):
		return "ErrInvalidTTL"
	case errors.Is(err, ErrInvalidDocument):
		return "ErrInvalidDocument"
	case errors.Is(err, ErrInvalidProperties):
		return "ErrInvalidProperties"
	case errors.Is(err, ErrClosed):
		return "ErrClosed"
	case errors.Is(err, ErrCorrupt):
		return "ErrCorrupt"
	}
	return "other error"
}

// ---- the runner ----

type mdlRun struct {
	ctx     context.Context
	base    string // every database directory of the run is under it
	dir     string // the current one
	crashes int
	clk     *fakeClock
	db      *DB
	m       mdlModel
	stale   [mdlConts]*Container // handles of deleted containers, this session
	counts  [mdlKinds]int
	spent   [mdlKinds]time.Duration
	live    int            // sum over steps of the model's live items, for the summary
	outc    map[string]int // outcomes of writes by kind
	trace   []string
	note    string // the outcome of the op being run, for the trace
	logf    func(format string, args ...any)

	// The background reader (see background) reads r.db under dbMu; the
	// runner holds dbMu for writing while it swaps the DB.
	dbMu   sync.RWMutex
	bgStop chan struct{}
	bgDone chan struct{}
	bgErr  atomic.Pointer[string]
	bgOps  atomic.Int64
}

// newMdlRun returns a runner whose databases live under base.
func newMdlRun(base string) *mdlRun {
	return &mdlRun{
		ctx:  context.Background(),
		base: base,
		dir:  filepath.Join(base, "db0"),
		clk:  newFakeClock(t0),
		m:    mdlModel{now: t0, wall: t0, conts: make([]*mdlCont, mdlConts)},
		outc: map[string]int{},
	}
}

func (r *mdlRun) options(op mdlOp) *Options {
	return &Options{
		Clock:              r.clk.Now,
		NoSync:             !op.sync,
		SealThreshold:      6 << 10,
		BlockSize:          1 << 10,
		JournalSegmentSize: 256 << 10,
		Compression:        op.comp,
		// The background compactor runs often, concurrently with the ops:
		// what it drops or rewrites must never change what a read sees.
		CompactionInterval: 2 * time.Millisecond,
	}
}

// run executes ops; it returns the index of the first op that disagreed.
func (r *mdlRun) run(ops []mdlOp) (int, error) {
	db, err := Open(r.dir, r.options(mdlOp{}))
	if err != nil {
		return 0, fmt.Errorf("open: %w", err)
	}
	r.db = db
	r.bgStop, r.bgDone = make(chan struct{}), make(chan struct{})
	go r.background()
	defer r.stopBackground()
	for i, op := range ops {
		r.note = ""
		r.counts[op.kind]++
		began := time.Now()
		err := r.exec(op)
		if e := r.bgErr.Load(); e != nil && err == nil {
			err = mdlf("background reader: unexpected answer", "%s", *e)
		}
		r.spent[op.kind] += time.Since(began)
		for _, mc := range r.m.conts {
			if mc != nil {
				r.live += len(mc.items)
			}
		}
		line := fmt.Sprintf("%5d t=+%-6d %s  %s", i, r.m.now-t0, op, r.note)
		if err != nil {
			line += "\n      !! " + err.Error()
		}
		r.trace = append(r.trace, line)
		if r.logf != nil {
			r.logf("%s", line)
		}
		if err != nil {
			return i, err
		}
	}
	return -1, nil
}

// background reads, lists and counts items while the runner works, so that
// the race detector sees reads running against seals, compactions and
// expiry marking. It cannot know which answer is right at which instant, so
// it only checks that every answer is one a reader may get: an item, or
// ErrNotFound.
func (r *mdlRun) background() {
	defer close(r.bgDone)
	rng := rand.New(rand.NewPCG(1, 2))
	bad := func(what string, err error) {
		if err != nil && !errors.Is(err, ErrNotFound) {
			msg := fmt.Sprintf("%s: %v", what, err)
			r.bgErr.CompareAndSwap(nil, &msg)
		}
	}
	for {
		select {
		case <-r.bgStop:
			return
		case <-time.After(200 * time.Microsecond):
		}
		r.dbMu.RLock()
		if db := r.db; db != nil {
			c, err := db.Container(mdlCName(rng.IntN(mdlConts)))
			if err == nil {
				switch p := rng.IntN(10); {
				case p < 7:
					_, err := c.Read(r.ctx, mdlID(rng.IntN(mdlIDs)))
					bad("Read", err)
				case p < 9:
					if st := c.Stats(); st.Items < 0 || st.ExpiredPending < 0 {
						bad("Stats", fmt.Errorf("%+v", st))
					}
				default:
					for _, err := range c.Items(r.ctx) {
						bad("Items", err)
					}
				}
				r.bgOps.Add(1)
			}
		}
		r.dbMu.RUnlock()
	}
}

func (r *mdlRun) stopBackground() {
	if r.bgStop != nil {
		close(r.bgStop)
		<-r.bgDone
		r.bgStop = nil
	}
}

// setDB swaps the DB under dbMu.
func (r *mdlRun) setDB(db *DB) {
	r.dbMu.Lock()
	r.db = db
	r.dbMu.Unlock()
}

func (r *mdlRun) close() {
	r.stopBackground()
	if r.db != nil {
		r.db.Close()
		r.db = nil
	}
}

func (r *mdlRun) exec(op mdlOp) error {
	r.m.sweep()
	switch op.kind {
	case mdlCreate, mdlUpsert, mdlReplace, mdlDelete:
		return r.write(op)
	case mdlRead:
		return r.read(op)
	case mdlBatch:
		return r.batch(op)
	case mdlItems, mdlStats:
		mc, c, err := r.cont(op.c)
		if err != nil || mc == nil {
			return r.orStale(op, err)
		}
		if op.kind == mdlItems {
			return r.checkItems(mc, c)
		}
		return r.checkStats(mc, c, false)
	case mdlClock:
		return r.clock(op)
	case mdlSetTTL:
		return r.setTTL(op)
	case mdlCompact:
		mc, c, err := r.cont(op.c)
		if err != nil || mc == nil {
			return r.orStale(op, err)
		}
		return r.compact(mc, c)
	case mdlCompactAll:
		for k := range mdlConts {
			mc, c, err := r.cont(k)
			if err != nil {
				return err
			}
			if mc != nil {
				if err := r.compact(mc, c); err != nil {
					return err
				}
			}
		}
		return nil
	case mdlReopen:
		return r.reopen(op)
	case mdlCrash:
		return r.crash(op)
	case mdlCreateContainer:
		return r.createContainer(op)
	case mdlDeleteContainer:
		return r.deleteContainer(op)
	case mdlBadTTL:
		return r.badTTL(op)
	case mdlBadProps:
		return r.badProps(op)
	case mdlCheckAll:
		return r.checkAll()
	}
	return fmt.Errorf("unknown op %v", op)
}

// cont returns container k of the model and the engine's handle for it,
// checking that the engine agrees on whether it exists.
func (r *mdlRun) cont(k int) (*mdlCont, *Container, error) {
	mc := r.m.conts[k]
	c, err := r.db.Container(mdlCName(k))
	if mc == nil {
		if !errors.Is(err, ErrNotFound) {
			return nil, nil, mdlf("container: got "+mdlErrName(err)+", want ErrNotFound", "Container(%q) = %v", mdlCName(k), err)
		}
		r.note = "(no container)"
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, mdlf("container: got "+mdlErrName(err)+", want ok", "Container(%q) = %v", mdlCName(k), err)
	}
	return mc, c, nil
}

// orStale passes err on, or, when the op's container does not exist but a
// handle to a deleted incarnation of it does, runs the op on that handle:
// every call must answer ErrNotFound (Stats: zero).
func (r *mdlRun) orStale(op mdlOp, err error) error {
	if err != nil {
		return err
	}
	c := r.stale[op.c]
	if c == nil {
		return nil
	}
	id := mdlID(op.id)
	doc, _ := mdlDoc(id, op.ttl, op.val, false)
	switch op.kind {
	case mdlRead:
		_, err = c.Read(r.ctx, id)
	case mdlCreate:
		_, err = c.Create(r.ctx, doc)
	case mdlUpsert:
		_, err = c.Upsert(r.ctx, doc)
	case mdlReplace:
		_, err = c.Replace(r.ctx, doc)
	case mdlDelete:
		err = c.Delete(r.ctx, id)
	case mdlItems:
		for _, e := range c.Items(r.ctx) {
			err = e
			break
		}
	case mdlStats:
		if st := c.Stats(); st != (Stats{}) {
			return mdlf("deleted container handle: stats not zero", "%+v", st)
		}
		r.note = "(deleted handle) stats zero"
		return nil
	case mdlSetTTL:
		p := c.Properties()
		p.DefaultTTL = mdlTTLPtr(op.dttl)
		err = c.SetProperties(r.ctx, p)
	case mdlCompact:
		err = c.Compact(r.ctx)
	case mdlBatch:
		_, err = c.ExecuteBatch(r.ctx, new(Batch).Upsert(doc))
	default:
		return nil
	}
	r.note = "(deleted handle) -> " + mdlErrName(err)
	if !errors.Is(err, ErrNotFound) {
		return mdlf(op.kind.String()+" on a deleted container's handle: got "+mdlErrName(err)+", want ErrNotFound", "%v", err)
	}
	return nil
}

func (r *mdlRun) resolveEtag(mc *mdlCont, id string, mode mdlEtag) (string, bool) {
	switch mode {
	case mdlNoEtag:
		return "", false
	case mdlRightEtag:
		if it := mc.items[id]; it != nil {
			return it.etag, true
		}
		if e, ok := mc.lastEtag(id); ok {
			return e, true
		}
	case mdlStaleEtag:
		if e, ok := mc.staleEtag(id); ok {
			return e, true
		}
	}
	return mdlBogus, true
}

// outcome compares an engine answer with the model's expectation.
func (r *mdlRun) outcome(what string, want, got error) error {
	r.outc[what+"->"+mdlErrName(want)]++
	if r.note == "" {
		r.note = "-> " + mdlErrName(got)
	}
	if errors.Is(got, want) || (want == nil && got == nil) {
		return nil
	}
	w := "ok"
	if want != nil {
		w = mdlErrName(want)
	}
	return mdlf(fmt.Sprintf("%s: got %s, want %s", what, mdlErrName(got), w), "%v", got)
}

// accept records a successful put of id in the model after checking the
// item the write returned.
func (r *mdlRun) accept(what string, mc *mdlCont, id string, ttl int32, body map[string]any, it Item) error {
	if it.ETag == "" {
		return mdlf(what+": empty etag", "%+v", it)
	}
	if mc.issued(id, it.ETag) {
		return mdlf(what+": etag issued twice", "item %q got etag %s, issued before for it (history %v)", id, it.ETag, mc.etags[id])
	}
	want := &mdlItem{body: body, ts: r.m.now, ttl: ttl, etag: it.ETag}
	if err := r.checkItem(what+" result", it, want, id); err != nil {
		return err
	}
	mc.items[id] = want
	delete(mc.ghosts, id)
	mc.etags[id] = append(mc.etags[id], it.ETag)
	r.note = fmt.Sprintf("-> ok ts=+%d etag=%s", it.TS-t0, it.ETag)
	// The write may have been expired the instant it was written (ttl 1 is
	// not, since _ts+1 > now; but the model checks anyway).
	r.m.sweep()
	return nil
}

func (r *mdlRun) checkItem(what string, got Item, want *mdlItem, id string) error {
	if got.ID != id {
		return mdlf(what+": wrong id", "got %q, want %q", got.ID, id)
	}
	if got.TS != want.ts {
		return mdlf(what+": wrong _ts", "item %q: TS = %d (t0%+d), want %d (t0%+d)", id, got.TS, got.TS-t0, want.ts, want.ts-t0)
	}
	if got.ETag != want.etag {
		return mdlf(what+": wrong etag", "item %q: ETag = %s, want %s (the etag its write returned)", id, got.ETag, want.etag)
	}
	m, err := mdlDecode(got.Body)
	if err != nil {
		return mdlf(what+": body is not a JSON object", "item %q: %v: %s", id, err, got.Body)
	}
	if ts, ok := m["_ts"].(json.Number); !ok || ts.String() != strconv.FormatInt(want.ts, 10) {
		return mdlf(what+": wrong body _ts", "item %q: _ts = %v, want %d; body %s", id, m["_ts"], want.ts, got.Body)
	}
	if e, ok := m["_etag"].(string); !ok || e != want.etag {
		return mdlf(what+": wrong body _etag", "item %q: _etag = %v, want %s; body %s", id, m["_etag"], want.etag, got.Body)
	}
	delete(m, "_ts")
	delete(m, "_etag")
	if !reflect.DeepEqual(m, want.body) {
		return mdlf(what+": wrong body", "item %q:\n got %v\nwant %v", id, m, want.body)
	}
	return nil
}

func (r *mdlRun) checkRead(k int, mc *mdlCont, c *Container, id string) error {
	it, err := c.Read(r.ctx, id)
	want := mc.items[id]
	if want == nil {
		if !errors.Is(err, ErrNotFound) {
			return mdlf("read: got "+mdlErrName(err)+", want ErrNotFound", "%s/%s: got %+v, %v; model: gone (defaultTtl %s, history %v)",
				mdlCName(k), id, mdlShow(it), err, mdlTTLString(mc.dttl), mc.etags[id])
		}
		return nil
	}
	if err != nil {
		return mdlf("read: got "+mdlErrName(err)+", want item", "%s/%s: %v; model: _ts t0%+d ttl %d defaultTtl %s etag %s",
			mdlCName(k), id, err, want.ts-t0, want.ttl, mdlTTLString(mc.dttl), want.etag)
	}
	return r.checkItem("read", it, want, id)
}

func mdlShow(it Item) string {
	return fmt.Sprintf("{ID:%q TS:t0%+d ETag:%s Body:%s}", it.ID, it.TS-t0, it.ETag, it.Body)
}

func (r *mdlRun) write(op mdlOp) error {
	mc, c, err := r.cont(op.c)
	if err != nil || mc == nil {
		return r.orStale(op, err)
	}
	id := mdlID(op.id)
	doc, body := mdlDoc(id, op.ttl, op.val, op.sys)
	etag, has := r.resolveEtag(mc, id, op.etag)
	var opts []WriteOption
	if has {
		opts = append(opts, IfMatch(etag))
	}
	want := mc.expect(op.kind, id, has, etag)
	var it Item
	switch op.kind {
	case mdlCreate:
		it, err = c.Create(r.ctx, doc, opts...)
	case mdlUpsert:
		it, err = c.Upsert(r.ctx, doc, opts...)
	case mdlReplace:
		it, err = c.Replace(r.ctx, doc, opts...)
	case mdlDelete:
		err = c.Delete(r.ctx, id, opts...)
	}
	if e := r.outcome(op.kind.String(), want, err); e != nil {
		return e
	}
	if want == nil {
		if op.kind == mdlDelete {
			delete(mc.items, id)
		} else if err := r.accept(op.kind.String(), mc, id, op.ttl, body, it); err != nil {
			return err
		}
	}
	return r.checkRead(op.c, mc, c, id)
}

func (r *mdlRun) read(op mdlOp) error {
	mc, c, err := r.cont(op.c)
	if err != nil || mc == nil {
		return r.orStale(op, err)
	}
	id := mdlID(op.id)
	if err := r.checkRead(op.c, mc, c, id); err != nil {
		return err
	}
	if it := mc.items[id]; it != nil {
		r.note = fmt.Sprintf("-> found ts=+%d ttl=%d", it.ts-t0, it.ttl)
	} else {
		r.note = "-> ErrNotFound"
	}
	// A handle to a deleted incarnation of the container must not see the
	// new one.
	if s := r.stale[op.c]; s != nil {
		if _, err := s.Read(r.ctx, id); !errors.Is(err, ErrNotFound) {
			return mdlf("read through a deleted container's handle: got "+mdlErrName(err)+", want ErrNotFound", "%s/%s: %v", mdlCName(op.c), id, err)
		}
	}
	return nil
}

func (r *mdlRun) batch(op mdlOp) error {
	mc, c, err := r.cont(op.c)
	if err != nil || mc == nil {
		return r.orStale(op, err)
	}
	b := new(Batch)
	bodies := make([]map[string]any, len(op.sub))
	var want error
	for i, s := range op.sub {
		id := mdlID(s.id)
		etag, has := r.resolveEtag(mc, id, s.etag)
		var opts []WriteOption
		if has {
			opts = append(opts, IfMatch(etag))
		}
		var doc []byte
		doc, bodies[i] = mdlDoc(id, s.ttl, s.val, s.sys)
		switch s.kind {
		case mdlCreate:
			b.Create(doc, opts...)
		case mdlUpsert:
			b.Upsert(doc, opts...)
		case mdlReplace:
			b.Replace(doc, opts...)
		case mdlDelete:
			b.Delete(id, opts...)
		}
		if want == nil {
			want = mc.expect(s.kind, id, has, etag)
		}
	}
	if op.dup && len(op.sub) > 0 {
		doc, _ := mdlDoc(mdlID(op.sub[0].id), 0, 1, false)
		b.Upsert(doc)
		want = ErrInvalidDocument
	}
	items, err := c.ExecuteBatch(r.ctx, b)
	if e := r.outcome("batch", want, err); e != nil {
		return e
	}
	if want == nil {
		if len(items) != len(op.sub) {
			return mdlf("batch: wrong number of items", "got %d items for %d operations", len(items), len(op.sub))
		}
		for i, s := range op.sub {
			id := mdlID(s.id)
			if s.kind == mdlDelete {
				if items[i].ID != "" || items[i].ETag != "" || items[i].Body != nil {
					return mdlf("batch: delete returned an item", "operation %d: %+v", i, mdlShow(items[i]))
				}
				delete(mc.items, id)
				continue
			}
			if err := r.accept("batch "+s.kind.String(), mc, id, s.ttl, bodies[i], items[i]); err != nil {
				return err
			}
		}
		r.note = "-> ok"
	}
	for _, s := range op.sub {
		if err := r.checkRead(op.c, mc, c, mdlID(s.id)); err != nil {
			return err
		}
	}
	return nil
}

func (r *mdlRun) checkItems(mc *mdlCont, c *Container) error {
	var got []Item
	for it, err := range c.Items(r.ctx) {
		if err != nil {
			return mdlf("items: error", "%v", err)
		}
		got = append(got, it)
	}
	want := mc.ids()
	gotIDs := make([]string, len(got))
	for i, it := range got {
		gotIDs[i] = it.ID
	}
	if !reflect.DeepEqual(gotIDs, want) && !(len(got) == 0 && len(want) == 0) {
		g := map[string]bool{}
		for _, id := range gotIDs {
			g[id] = true
		}
		var extra, missing []string
		for _, id := range gotIDs {
			if mc.items[id] == nil {
				extra = append(extra, id)
			}
		}
		for _, id := range want {
			if !g[id] {
				missing = append(missing, id)
			}
		}
		class := "items: wrong ids"
		switch {
		case len(extra) > 0 && len(missing) == 0:
			class = "items: extra ids"
		case len(extra) == 0 && len(missing) > 0:
			class = "items: missing ids"
		case len(extra) == 0 && len(missing) == 0:
			class = "items: wrong order or duplicates"
		}
		return mdlf(class, "%s: got %v, want %v (extra %v, missing %v)", c.ID(), gotIDs, want, extra, missing)
	}
	for i, id := range want {
		if err := r.checkItem("items", got[i], mc.items[id], id); err != nil {
			return err
		}
	}
	r.note = fmt.Sprintf("-> %d items", len(got))
	return nil
}

func (r *mdlRun) checkStats(mc *mdlCont, c *Container, compacted bool) error {
	st := c.Stats()
	n := int64(len(mc.items))
	switch {
	case st.Items != n:
		return mdlf("stats: wrong Items", "%s: %+v, want Items %d (%v)", c.ID(), st, n, mc.ids())
	case st.ExpiredPending < 0 || st.LiveBytes < 0 || st.DiskBytes < 0:
		return mdlf("stats: negative", "%s: %+v", c.ID(), st)
	case (st.LiveBytes > 0) != (n > 0):
		return mdlf("stats: LiveBytes disagrees with Items", "%s: %+v, want LiveBytes > 0 iff Items > 0", c.ID(), st)
	case compacted && st.ExpiredPending != 0:
		return mdlf("stats: ExpiredPending after Compact", "%s: %+v, want ExpiredPending 0 right after Compact", c.ID(), st)
	}
	if r.note == "" {
		r.note = fmt.Sprintf("-> %+v", st)
	}
	return nil
}

func (r *mdlRun) clock(op mdlOp) error {
	if op.land {
		// The wall moves on by as much as the engine's now must to land on
		// the expiry instant (plus dt), whether or not it is behind.
		if next, ok := r.m.nextExpiry(); ok && next <= r.m.now+3600 {
			r.clk.Set(r.clk.Unix() + max(0, next+op.dt-r.m.now))
		}
	} else {
		// A correction of a wall behind the engine's time moves the engine's
		// now on by as much: to it, the wall moved forward.
		if op.fix && r.clk.Unix() < r.m.now {
			r.clk.Set(r.m.now)
		}
		r.clk.Set(r.clk.Unix() + op.dt)
	}
	r.m.observe(r.clk.Unix())
	r.note = fmt.Sprintf("-> wall=+%d", r.clk.Unix()-t0)
	// Show the engine this second at once, so that engine and model agree on
	// which instants were seen even when the clock moves again before the
	// next request: by a Stats call (which also marks what expired) or by a
	// point read of an id never written (which only looks).
	for k := range mdlConts {
		if mc := r.m.conts[k]; mc != nil {
			_, c, err := r.cont(k)
			if err != nil {
				return err
			}
			if op.id%2 == 0 {
				return r.checkStats(mc, c, false)
			}
			if _, err := c.Read(r.ctx, "never-written"); !errors.Is(err, ErrNotFound) {
				return mdlf("read: got "+mdlErrName(err)+", want ErrNotFound", "%s/never-written: %v", c.ID(), err)
			}
			return nil
		}
	}
	r.db.clock.now()
	return nil
}

func (r *mdlRun) setTTL(op mdlOp) error {
	mc, c, err := r.cont(op.c)
	if err != nil || mc == nil {
		return r.orStale(op, err)
	}
	p := c.Properties()
	if !mdlSameTTL(p.DefaultTTL, mc.dttl) {
		return mdlf("properties: wrong DefaultTTL", "%s: %v, want %s", c.ID(), p.DefaultTTL, mdlTTLString(mc.dttl))
	}
	p.DefaultTTL = mdlTTLPtr(op.dttl)
	if e := r.outcome("setttl", nil, c.SetProperties(r.ctx, p)); e != nil {
		return e
	}
	r.m.setDefaultTTL(op.c, op.dttl)
	if p := c.Properties(); !mdlSameTTL(p.DefaultTTL, op.dttl) {
		return mdlf("properties: wrong DefaultTTL after SetProperties", "%s: %v, want %s", c.ID(), p.DefaultTTL, mdlTTLString(op.dttl))
	}
	r.note = fmt.Sprintf("-> ok, %d live", len(mc.items))
	return r.checkStats(mc, c, false)
}

func (r *mdlRun) compact(mc *mdlCont, c *Container) error {
	if err := c.Compact(r.ctx); err != nil {
		return mdlf("compact: error", "%s: %v", c.ID(), err)
	}
	if err := r.checkItems(mc, c); err != nil {
		return err
	}
	return r.checkStats(mc, c, true)
}

func (r *mdlRun) reopen(op mdlOp) error {
	r.dbMu.Lock()
	err := r.db.Close()
	r.db = nil
	r.dbMu.Unlock()
	if err != nil {
		return mdlf("close: error", "%v", err)
	}
	r.stale = [mdlConts]*Container{}
	if op.back > 0 {
		r.clk.Set(r.clk.Unix() - op.back)
	}
	db, err := Open(r.dir, r.options(op))
	if err != nil {
		return mdlf("open: error", "%v", err)
	}
	r.setDB(db)
	r.m.reopen(r.clk.Unix())
	r.note = fmt.Sprintf("-> wall=+%d", r.clk.Unix()-r.m.now)
	return r.checkAll()
}

// crash simulates a crash of the process: it copies the database directory
// as it is on disk while the DB is open (with no seal or compaction in
// progress, and no request in flight, so that the copy is a state the files
// really pass through), abandons the DB and opens the copy. Everything
// acknowledged is in the files the OS holds, so the model stays as it is.
// The engine's high clock mark may have been persisted late, so the wall
// clock is first brought up to the model's now: then the engine's now must
// be exactly the model's.
func (r *mdlRun) crash(op mdlOp) error {
	r.crashes++
	to := filepath.Join(r.base, "db"+strconv.Itoa(r.crashes))
	r.db.sealMu.Lock()
	err := mdlCopyDir(r.dir, to)
	r.db.sealMu.Unlock()
	if err != nil {
		return fmt.Errorf("crash: copy %s: %w", r.dir, err)
	}
	r.dbMu.Lock()
	err = r.db.Close()
	r.db, r.dir = nil, to
	r.dbMu.Unlock()
	if err != nil {
		return mdlf("close: error", "%v", err)
	}
	r.stale = [mdlConts]*Container{}
	if r.clk.Unix() < r.m.now {
		r.clk.Set(r.m.now)
	}
	db, err := Open(r.dir, r.options(op))
	if err != nil {
		return mdlf("open after a crash: error", "%v", err)
	}
	r.setDB(db)
	r.m.reopen(r.clk.Unix())
	return r.checkAll()
}

func mdlCopyDir(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // a temporary file renamed meanwhile
		}
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
}

func (r *mdlRun) checkAll() error {
	var want []string
	for k := range mdlConts {
		if r.m.conts[k] != nil {
			want = append(want, mdlCName(k))
		}
	}
	if got := r.db.Containers(); !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
		return mdlf("containers: wrong list", "got %v, want %v", got, want)
	}
	for k := range mdlConts {
		mc, c, err := r.cont(k)
		if err != nil {
			return err
		}
		if mc == nil {
			continue
		}
		if p := c.Properties(); !mdlSameTTL(p.DefaultTTL, mc.dttl) || p.ID != mdlCName(k) {
			return mdlf("properties: wrong", "%s: %+v, want DefaultTTL %s", mdlCName(k), p, mdlTTLString(mc.dttl))
		}
		if err := r.checkItems(mc, c); err != nil {
			return err
		}
		if err := r.checkStats(mc, c, false); err != nil {
			return err
		}
		for i := range mdlIDs {
			if err := r.checkRead(k, mc, c, mdlID(i)); err != nil {
				return err
			}
		}
	}
	r.note = "-> ok"
	return nil
}

func (r *mdlRun) createContainer(op mdlOp) error {
	name := mdlCName(op.c)
	c, err := r.db.CreateContainer(r.ctx, ContainerProperties{ID: name, DefaultTTL: mdlTTLPtr(op.dttl)})
	if r.m.conts[op.c] != nil {
		return r.outcome("create-container", ErrConflict, err)
	}
	if e := r.outcome("create-container", nil, err); e != nil {
		return e
	}
	r.m.conts[op.c] = newMdlCont(op.dttl)
	if p := c.Properties(); !mdlSameTTL(p.DefaultTTL, op.dttl) || p.ID != name {
		return mdlf("properties: wrong after CreateContainer", "%+v, want DefaultTTL %s", p, mdlTTLString(op.dttl))
	}
	return r.checkItems(r.m.conts[op.c], c)
}

func (r *mdlRun) deleteContainer(op mdlOp) error {
	mc, c, err := r.cont(op.c)
	if err != nil {
		return err
	}
	err = r.db.DeleteContainer(r.ctx, mdlCName(op.c))
	if mc == nil {
		return r.outcome("delete-container", ErrNotFound, err)
	}
	if e := r.outcome("delete-container", nil, err); e != nil {
		return e
	}
	r.m.conts[op.c] = nil
	r.stale[op.c] = c
	if _, _, err := r.cont(op.c); err != nil {
		return err
	}
	r.note = "-> ok"
	return nil
}

func (r *mdlRun) badTTL(op mdlOp) error {
	mc, c, err := r.cont(op.c)
	if err != nil || mc == nil {
		return err
	}
	id := mdlID(op.id)
	doc := []byte(fmt.Sprintf(`{"id":%q,"v":1,"ttl":%s}`, id, mdlBadTTLs[op.val%len(mdlBadTTLs)]))
	switch op.val % 3 {
	case 0:
		_, err = c.Create(r.ctx, doc)
	case 1:
		_, err = c.Upsert(r.ctx, doc)
	default:
		_, err = c.Replace(r.ctx, doc)
	}
	if e := r.outcome("bad-ttl", ErrInvalidTTL, err); e != nil {
		return e
	}
	return r.checkRead(op.c, mc, c, id)
}

func (r *mdlRun) badProps(op mdlOp) error {
	mc, c, err := r.cont(op.c)
	if err != nil || mc == nil {
		return err
	}
	p := c.Properties()
	switch op.val % 4 {
	case 0:
		p.DefaultTTL = TTL(0)
	case 1:
		p.DefaultTTL = TTL([]int32{-2, -100, -2147483648}[op.val%3])
	case 2: // TTL on together with indexing none
		if p.DefaultTTL == nil {
			p.DefaultTTL = TTL(-1)
		}
		p.Indexing = IndexingNone
	default:
		p.ID += "x"
	}
	if e := r.outcome("bad-props", ErrInvalidProperties, c.SetProperties(r.ctx, p)); e != nil {
		return e
	}
	if p := c.Properties(); !mdlSameTTL(p.DefaultTTL, mc.dttl) || p.Indexing != IndexingConsistent || p.ID != mdlCName(op.c) {
		return mdlf("properties: changed by a rejected SetProperties", "%+v, want DefaultTTL %s", p, mdlTTLString(mc.dttl))
	}
	return r.checkStats(mc, c, false)
}

// ---- the test ----

type mdlVariant struct {
	name       string
	ops, short int
}

var mdlVariants = []mdlVariant{
	// mixed: everything; compaction after every step through 40-45% of the
	// run and restarts every few steps through 70-80%.
	{"mixed", 2000, 400},
	// compact: compaction (and full checks) after every step.
	{"compact", 250, 60},
	// restart: Close and Open every 1-5 steps, the clock often set back.
	{"restart", 600, 100},
}

func TestModel(t *testing.T) {
	seed := time.Now().UnixNano()
	if s := os.Getenv("EBB_MODEL_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("EBB_MODEL_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d; replay with EBB_MODEL_SEED=%d go test -race -run TestModel ./engine/", seed, seed)
	for vi, v := range mdlVariants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel() // they mostly wait for fsync
			n := v.ops
			if testing.Short() {
				n = v.short
			}
			if s := os.Getenv("EBB_MODEL_OPS"); s != "" {
				var err error
				if n, err = strconv.Atoi(s); err != nil {
					t.Fatalf("EBB_MODEL_OPS=%q: %v", s, err)
				}
			}
			ops := mdlGen(rand.New(rand.NewPCG(uint64(seed), uint64(vi)+1)), n, v.name)
			start := time.Now()
			r := newMdlRun(t.TempDir())
			if os.Getenv("EBB_MODEL_TRACE") != "" {
				r.logf = t.Logf
			}
			at, err := r.run(ops)
			r.close()
			t.Logf("%s: %d ops in %v, model now t0%+d\n  %s", v.name, len(r.trace), time.Since(start).Round(time.Millisecond), r.m.now-t0, r.summary())
			if err == nil {
				return
			}
			from := max(0, len(r.trace)-40)
			t.Errorf("seed %d, variant %s: op %d (%s) disagrees with the model:\n%v\nlast ops:\n%s",
				seed, v.name, at, ops[at], err, strings.Join(r.trace[from:], "\n"))
			if os.Getenv("EBB_MODEL_SHRINK") != "" {
				trace := mdlShrink(t, ops[:at+1], err)
				t.Logf("minimal failing sequence (%d ops):\n%s", len(trace), strings.Join(trace, "\n"))
			} else {
				t.Logf("set EBB_MODEL_SHRINK=1 to shrink it to a minimal sequence")
			}
		})
	}
}

func (r *mdlRun) summary() string {
	var b strings.Builder
	b.WriteString("ops:")
	for k := range mdlKinds {
		if r.counts[k] > 0 {
			fmt.Fprintf(&b, " %s=%d", mdlKind(k), r.counts[k])
			if r.spent[k] > time.Second {
				fmt.Fprintf(&b, "(%.1fs)", r.spent[k].Seconds())
			}
		}
	}
	fmt.Fprintf(&b, "\n  model: mean live items %.1f, expirations %d, expired items that a DefaultTTL change would have revived but for expiry-is-final %d; background reads %d",
		float64(r.live)/float64(max(1, len(r.trace))), r.m.expirations, r.m.traps, r.bgOps.Load())
	fmt.Fprintf(&b, "\n  outcomes: create ok/conflict %d/%d, replace ok/notfound/precond %d/%d/%d, delete ok/notfound/precond %d/%d/%d, upsert precond %d, batch ok/failed %d/%d",
		r.outc["create->ok"], r.outc["create->ErrConflict"],
		r.outc["replace->ok"], r.outc["replace->ErrNotFound"], r.outc["replace->ErrPreconditionFailed"],
		r.outc["delete->ok"], r.outc["delete->ErrNotFound"], r.outc["delete->ErrPreconditionFailed"],
		r.outc["upsert->ErrPreconditionFailed"], r.outc["batch->ok"],
		r.outc["batch->ErrNotFound"]+r.outc["batch->ErrPreconditionFailed"]+r.outc["batch->ErrConflict"]+r.outc["batch->ErrInvalidDocument"])
	return b.String()
}

// mdlShrink drops operations from ops while the run still fails the same way
// and returns the trace of the smallest failing sequence found.
func mdlShrink(t *testing.T, ops []mdlOp, first error) []string {
	class := mdlClass(first)
	deadline := time.Now().Add(10 * time.Minute)
	try := func(cand []mdlOp) (int, []string, bool) {
		base, err := os.MkdirTemp("", "ebb-model-shrink-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(base)
		r := newMdlRun(base)
		at, err := r.run(cand)
		r.close()
		return at, r.trace, err != nil && mdlClass(err) == class
	}
	runs := 0
	for chunk := len(ops) / 2; chunk >= 1 && time.Now().Before(deadline); {
		removed := false
		for start := 0; start < len(ops) && time.Now().Before(deadline); {
			end := min(start+chunk, len(ops))
			cand := append(append([]mdlOp{}, ops[:start]...), ops[end:]...)
			runs++
			if at, _, ok := try(cand); ok {
				ops, removed = cand[:at+1], true
			} else {
				start = end
			}
		}
		if !removed {
			chunk /= 2
		}
	}
	// Then the operations inside batches.
	for i := 0; i < len(ops); i++ {
		for j := 0; ops[i].kind == mdlBatch && j < len(ops[i].sub) && len(ops[i].sub) > 1; {
			cand := append([]mdlOp{}, ops...)
			cand[i].sub = append(append([]mdlOp{}, ops[i].sub[:j]...), ops[i].sub[j+1:]...)
			runs++
			if at, _, ok := try(cand); ok && at == len(cand)-1 {
				ops = cand
			} else {
				j++
			}
		}
	}
	_, trace, _ := try(ops)
	t.Logf("shrinking: %d runs", runs)
	return trace
}
