package engine_test

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
// Three white-box touches: after a clock move with no container left the
// runner calls engine.Now(db) so that the engine observes that second, and a
// simulated crash holds off seals (engine.HoldSeals) while it copies the
// files, after the journal queue of NoSync has written what it holds
// (engine.DrainJournal: the entries it holds are lost to a crash of the
// process, which NoSync allows and TestPowerLoss checks).
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

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/internal/testutil"
)

type opKind uint8

const (
	opCreate opKind = iota
	opUpsert
	opReplace
	opDelete
	opRead
	opBatch
	opItems
	opStats
	opClock
	opSetTTL
	opCompact
	opCompactAll
	opReopen
	opCreateContainer
	opDeleteContainer
	opBadTTL
	opBadProps
	opCheckAll
	opCrash
	opKinds
)

var opKindNames = [opKinds]string{
	"create", "upsert", "replace", "delete", "read", "batch", "items", "stats", "clock",
	"setttl", "compact", "compact-all", "reopen", "create-container", "delete-container",
	"bad-ttl", "bad-props", "check-all", "crash",
}

func (k opKind) String() string { return opKindNames[k] }

// etagChoice names the IfMatch etag of a write symbolically.
type etagChoice uint8

const (
	etagNone  etagChoice = iota
	etagRight            // the item's current etag (its last one when it is gone)
	etagStale            // an earlier etag of the item
	etagBogus            // an etag never issued
)

const bogusETag = `"not-an-etag"`

// The id space.
const (
	modelContainers = 3
	modelIDs        = 30
)

func containerName(k int) string { return "c" + strconv.Itoa(k) }
func itemID(i int) string        { return fmt.Sprintf("i%02d", i) }

// modelOp is one step of a sequence.
type modelOp struct {
	kind opKind
	c    int        // container index
	id   int        // item index
	ttl  int32      // the item's ttl: 0 absent, -1, n
	val  int        // the user value; also picks padding and variants
	sys  bool       // the document carries stale _ts and _etag, to be ignored
	etag etagChoice // IfMatch
	dt   int64      // clock: seconds the wall clock moves (negative: back)
	dttl int64      // setttl, create-container: DefaultTTL (ttlOff: absent)
	sub  []modelOp  // batch: its operations, on distinct ids
	dup  bool       // batch: also writes its first id a second time
	back int64      // reopen: seconds the wall clock is set back before Open
	fix  bool       // clock: a wall clock behind the engine's time is first corrected to it
	land bool       // clock: move to the next expiry instant of a live item, plus dt (-1 or 0), if within the hour
	sync bool       // reopen: fsync writes (NoSync off)
	comp engine.Compression
}

func ttlString(dttl int64) string {
	if dttl == ttlOff {
		return "nil"
	}
	return strconv.FormatInt(dttl, 10)
}

func (o modelOp) String() string {
	var b strings.Builder
	b.WriteString(o.kind.String())
	switch o.kind {
	case opCreate, opUpsert, opReplace, opDelete, opRead, opBadTTL:
		fmt.Fprintf(&b, " %s/%s", containerName(o.c), itemID(o.id))
	case opItems, opStats, opCompact, opSetTTL, opCreateContainer, opDeleteContainer, opBadProps, opBatch:
		fmt.Fprintf(&b, " %s", containerName(o.c))
	}
	switch o.kind {
	case opCreate, opUpsert, opReplace:
		if o.ttl != 0 {
			fmt.Fprintf(&b, " ttl=%d", o.ttl)
		}
		fmt.Fprintf(&b, " v=%d", o.val)
		if o.sys {
			b.WriteString(" +sys")
		}
	case opBadTTL:
		fmt.Fprintf(&b, " %s ttl=%s", []opKind{opCreate, opUpsert, opReplace}[o.val%3], badTTLs[o.val%len(badTTLs)])
	case opBadProps:
		fmt.Fprintf(&b, " #%d", o.val%4)
	case opClock:
		fmt.Fprintf(&b, " %+d", o.dt)
		if o.fix {
			b.WriteString(" +fix")
		}
		if o.land {
			b.WriteString(" to-next-expiry")
		}
	case opSetTTL, opCreateContainer:
		fmt.Fprintf(&b, " defaultTtl=%s", ttlString(o.dttl))
	case opReopen:
		fmt.Fprintf(&b, " back=%d sync=%v comp=%d", o.back, o.sync, o.comp)
	case opCrash:
		fmt.Fprintf(&b, " sync=%v comp=%d", o.sync, o.comp)
	case opBatch:
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
	case etagRight:
		b.WriteString(" if=right")
	case etagStale:
		b.WriteString(" if=stale")
	case etagBogus:
		b.WriteString(" if=bogus")
	}
	return b.String()
}

// ---- generation ----

// opGen returns the ops of one variant: n random operations, with
// compactions after every step or restarts every few steps where the
// variant asks for them, a full check every 50 steps, and a final restart.
func opGen(rng *rand.Rand, n int, variant string) []modelOp {
	ops := []modelOp{
		{kind: opCreateContainer, c: 0, dttl: genDefaultTTL(rng)},
		{kind: opCreateContainer, c: 1, dttl: genDefaultTTL(rng)},
	}
	untilRestart := 0
	for i := range n {
		ops = append(ops, genOp(rng))
		f := float64(i) / float64(n)
		if variant == "compact" || (variant == "mixed" && f >= 0.40 && f < 0.45) {
			ops = append(ops, modelOp{kind: opCompactAll})
		}
		if variant == "restart" || (variant == "mixed" && f >= 0.70 && f < 0.80) {
			if untilRestart--; untilRestart <= 0 {
				ops = append(ops, genReopen(rng))
				untilRestart = 1 + rng.IntN(5)
			}
		}
		if i%50 == 49 {
			ops = append(ops, modelOp{kind: opCheckAll})
		}
	}
	return append(ops, modelOp{kind: opCheckAll}, genReopen(rng), modelOp{kind: opCompactAll})
}

func genContainer(rng *rand.Rand) int {
	switch p := rng.IntN(100); {
	case p < 45:
		return 0
	case p < 85:
		return 1
	default:
		return 2
	}
}

func genItemTTL(rng *rand.Rand) int32 {
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

func genDefaultTTL(rng *rand.Rand) int64 {
	switch p := rng.IntN(100); {
	case p < 20:
		return ttlOff
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

// genETag picks an IfMatch mode; pNone is the percentage without one.
func genETag(rng *rand.Rand, pNone int) etagChoice {
	p := rng.IntN(100)
	switch {
	case p < pNone:
		return etagNone
	case p < pNone+(100-pNone)/2:
		return etagRight
	case p < pNone+(100-pNone)*4/5:
		return etagStale
	default:
		return etagBogus
	}
}

func genWrite(rng *rand.Rand, kind opKind, c, id int) modelOp {
	o := modelOp{kind: kind, c: c, id: id}
	switch kind {
	case opCreate:
	case opUpsert:
		o.etag = genETag(rng, 85)
	case opReplace:
		o.etag = genETag(rng, 45)
	case opDelete:
		o.etag = genETag(rng, 50)
	}
	if kind != opDelete {
		o.ttl = genItemTTL(rng)
		o.val = rng.IntN(100000)
		o.sys = rng.IntN(20) == 0
	}
	return o
}

func genReopen(rng *rand.Rand) modelOp {
	o := modelOp{kind: opReopen, sync: rng.IntN(100) < 15}
	if rng.IntN(100) < 25 {
		o.kind = opCrash
	} else if rng.IntN(100) < 35 {
		o.back = 3600 * (1 + rng.Int64N(3))
	}
	o.comp = []engine.Compression{engine.CompressionDefault, engine.CompressionDefault, engine.CompressionS2, engine.CompressionNone}[rng.IntN(4)]
	return o
}

func genOp(rng *rand.Rand) modelOp {
	c, id := genContainer(rng), rng.IntN(modelIDs)
	if rng.IntN(100) < 60 { // a few hot ids, so that items often exist
		id = rng.IntN(8)
	}
	switch w := rng.IntN(1000); {
	case w < 130:
		return genWrite(rng, opCreate, c, id)
	case w < 270:
		return genWrite(rng, opUpsert, c, id)
	case w < 360:
		return genWrite(rng, opReplace, c, id)
	case w < 430:
		return genWrite(rng, opDelete, c, id)
	case w < 580:
		return modelOp{kind: opRead, c: c, id: id}
	case w < 640:
		o := modelOp{kind: opBatch, c: c, dup: rng.IntN(25) == 0}
		ids := rng.Perm(modelIDs)[:2+rng.IntN(3)]
		if rng.IntN(2) == 0 {
			ids = rng.Perm(8)[:len(ids)]
		}
		if modelKeyed(c) { // a batch is in one partition: ids p0..p9
			p := ids[0] / 10 * 10
			for i := range ids {
				ids[i] = p + ids[i]%10
			}
			ids = dedup(ids)
		}
		for _, id := range ids {
			kind := []opKind{opUpsert, opUpsert, opUpsert, opCreate, opCreate, opReplace, opDelete}[rng.IntN(7)]
			s := genWrite(rng, kind, c, id)
			if rng.IntN(100) < 70 {
				s.etag = etagNone
			}
			o.sub = append(o.sub, s)
		}
		if rng.IntN(4) == 0 { // one operation that must fail: nothing is applied
			s := &o.sub[rng.IntN(len(o.sub))]
			s.kind, s.etag = opReplace, etagBogus
			if s.val == 0 {
				s.val, s.ttl = rng.IntN(100000), genItemTTL(rng)
			}
		}
		return o
	case w < 665:
		return modelOp{kind: opItems, c: c}
	case w < 690:
		return modelOp{kind: opStats, c: c}
	case w < 820:
		o := modelOp{kind: opClock, id: id}
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
		return modelOp{kind: opSetTTL, c: c, dttl: genDefaultTTL(rng)}
	case w < 870:
		return modelOp{kind: opCompact, c: c}
	case w < 880:
		return genReopen(rng)
	case w < 900:
		return modelOp{kind: opCreateContainer, c: c, dttl: genDefaultTTL(rng)}
	case w < 904:
		return modelOp{kind: opDeleteContainer, c: c}
	case w < 920:
		return modelOp{kind: opBadTTL, c: c, id: id, val: rng.IntN(1000)}
	case w < 930:
		return modelOp{kind: opBadProps, c: c, val: rng.IntN(1000)}
	default:
		return modelOp{kind: opRead, c: c, id: id}
	}
}

// badTTLs are item ttl values the TTL rules reject.
var badTTLs = []string{`0`, `null`, `1.5`, `"10"`, `true`, `{}`, `-2`, `2147483648`, `-2147483649`, `[]`, `-0.5`}

// ---- documents ----

// modelDoc returns the JSON of a document and the user properties a read of it
// must show (everything but _ts and _etag).
func modelDoc(id string, ttl int32, val int, sys bool) ([]byte, map[string]any) {
	return modelDocWith(id, ttl, val, sys, nil)
}

// modelDocWith is modelDoc with extra properties set by extra.
func modelDocWith(id string, ttl int32, val int, sys bool, extra func(map[string]any)) ([]byte, map[string]any) {
	m := map[string]any{"id": id, "v": val, "pad": strings.Repeat("x", val%300)}
	if extra != nil {
		extra(m)
	}
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
	body, err := decodeBody(doc)
	if err != nil {
		panic(err)
	}
	delete(body, "_ts")
	delete(body, "_etag")
	return doc, body
}

func decodeBody(b []byte) (map[string]any, error) {
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

func ttlPtr(dttl int64) *int32 {
	if dttl == ttlOff {
		return nil
	}
	return engine.TTL(int32(dttl))
}

func sameDefaultTTL(p *int32, dttl int64) bool {
	if p == nil {
		return dttl == ttlOff
	}
	return dttl != ttlOff && int64(*p) == dttl
}

// ---- discrepancies ----

// diffItems is a disagreement between the engine and the model. class is
// stable across replays (no ids, values or etags) so that shrinking keeps
// looking for the same failure.
type diffItems struct{ class, msg string }

func (d *diffItems) Error() string { return d.class + ": " + d.msg }

func classErr(class, format string, args ...any) error {
	return &diffItems{class: class, msg: fmt.Sprintf(format, args...)}
}

func errClass(err error) string {
	var d *diffItems
	if errors.As(err, &d) {
		return d.class
	}
	return err.Error()
}

func errName(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, engine.ErrNotFound):
		return "ErrNotFound"
	case errors.Is(err, engine.ErrConflict):
		return "ErrConflict"
	case errors.Is(err, engine.ErrPreconditionFailed):
		return "ErrPreconditionFailed"
	case errors.Is(err, engine.ErrInvalidTTL):
		return "ErrInvalidTTL"
	case errors.Is(err, engine.ErrInvalidDocument):
		return "ErrInvalidDocument"
	case errors.Is(err, engine.ErrInvalidProperties):
		return "ErrInvalidProperties"
	case errors.Is(err, engine.ErrClosed):
		return "ErrClosed"
	case errors.Is(err, engine.ErrCorrupt):
		return "ErrCorrupt"
	}
	return "other error"
}

// ---- the runner ----

type modelRun struct {
	ctx     context.Context
	base    string // every database directory of the run is under it
	dir     string // the current one
	crashes int
	clk     *fakeClock
	db      *engine.DB
	m       refModel
	stale   [modelContainers]*engine.Container // handles of deleted containers, this session
	counts  [opKinds]int
	spent   [opKinds]time.Duration
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

// newModelRun returns a runner whose databases live under base.
func newModelRun(base string) *modelRun {
	return &modelRun{
		ctx:  context.Background(),
		base: base,
		dir:  filepath.Join(base, "db0"),
		clk:  newFakeClock(t0),
		m:    refModel{now: t0, wall: t0, conts: make([]*refContainer, modelContainers)},
		outc: map[string]int{},
	}
}

func (r *modelRun) options(op modelOp) *engine.Options {
	return &engine.Options{
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
func (r *modelRun) run(ops []modelOp) (int, error) {
	db, err := engine.Open(r.dir, r.options(modelOp{}))
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
			err = classErr("background reader: unexpected answer", "%s", *e)
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
func (r *modelRun) background() {
	defer close(r.bgDone)
	rng := rand.New(rand.NewPCG(1, 2))
	bad := func(what string, err error) {
		if err != nil && !errors.Is(err, engine.ErrNotFound) {
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
			k := rng.IntN(modelContainers)
			c, err := db.Container(containerName(k))
			if err == nil {
				switch p := rng.IntN(10); {
				case p < 7:
					p, eid := part(k, c, itemID(rng.IntN(modelIDs)))
					_, err := p.Read(r.ctx, eid)
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

func (r *modelRun) stopBackground() {
	if r.bgStop != nil {
		close(r.bgStop)
		<-r.bgDone
		r.bgStop = nil
	}
}

// setDB swaps the DB under dbMu.
func (r *modelRun) setDB(db *engine.DB) {
	r.dbMu.Lock()
	r.db = db
	r.dbMu.Unlock()
}

func (r *modelRun) close() {
	r.stopBackground()
	if r.db != nil {
		r.db.Close()
		r.db = nil
	}
}

func (r *modelRun) exec(op modelOp) error {
	r.m.sweep()
	switch op.kind {
	case opCreate, opUpsert, opReplace, opDelete:
		return r.write(op)
	case opRead:
		return r.read(op)
	case opBatch:
		return r.batch(op)
	case opItems, opStats:
		mc, c, err := r.cont(op.c)
		if err != nil || mc == nil {
			return r.orStale(op, err)
		}
		if op.kind == opItems {
			return r.checkItems(op.c, mc, c)
		}
		return r.checkStats(mc, c, false)
	case opClock:
		return r.clock(op)
	case opSetTTL:
		return r.setTTL(op)
	case opCompact:
		mc, c, err := r.cont(op.c)
		if err != nil || mc == nil {
			return r.orStale(op, err)
		}
		return r.compact(op.c, mc, c)
	case opCompactAll:
		for k := range modelContainers {
			mc, c, err := r.cont(k)
			if err != nil {
				return err
			}
			if mc != nil {
				if err := r.compact(k, mc, c); err != nil {
					return err
				}
			}
		}
		return nil
	case opReopen:
		return r.reopen(op)
	case opCrash:
		return r.crash(op)
	case opCreateContainer:
		return r.createContainer(op)
	case opDeleteContainer:
		return r.deleteContainer(op)
	case opBadTTL:
		return r.badTTL(op)
	case opBadProps:
		return r.badProps(op)
	case opCheckAll:
		return r.checkAll()
	}
	return fmt.Errorf("unknown op %v", op)
}

// cont returns container k of the model and the engine's handle for it,
// checking that the engine agrees on whether it exists.
func (r *modelRun) cont(k int) (*refContainer, *engine.Container, error) {
	mc := r.m.conts[k]
	c, err := r.db.Container(containerName(k))
	if mc == nil {
		if !errors.Is(err, engine.ErrNotFound) {
			return nil, nil, classErr("container: got "+errName(err)+", want ErrNotFound", "Container(%q) = %v", containerName(k), err)
		}
		r.note = "(no container)"
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, classErr("container: got "+errName(err)+", want ok", "Container(%q) = %v", containerName(k), err)
	}
	return mc, c, nil
}

// orStale passes err on, or, when the op's container does not exist but a
// handle to a deleted incarnation of it does, runs the op on that handle:
// every call must answer ErrNotFound (Stats: zero).
func (r *modelRun) orStale(op modelOp, err error) error {
	if err != nil {
		return err
	}
	c := r.stale[op.c]
	if c == nil {
		return nil
	}
	id := itemID(op.id)
	doc, _ := keyedDoc(op.c, id, op.ttl, op.val, false)
	switch op.kind {
	case opRead:
		p, eid := part(op.c, c, id)
		_, err = p.Read(r.ctx, eid)
	case opCreate, opUpsert, opReplace, opDelete:
		_, err = r.writeItem(op.c, c, op.kind, id, doc, op.val%2 == 0)
	case opItems:
		for _, e := range c.Items(r.ctx) {
			err = e
			break
		}
	case opStats:
		if st := c.Stats(); st != (engine.Stats{}) {
			return classErr("deleted container handle: stats not zero", "%+v", st)
		}
		r.note = "(deleted handle) stats zero"
		return nil
	case opSetTTL:
		p := c.Properties()
		p.DefaultTTL = ttlPtr(op.dttl)
		err = c.SetProperties(r.ctx, p)
	case opCompact:
		err = c.Compact(r.ctx)
	case opBatch:
		_, err = c.ExecuteBatch(r.ctx, newBatch(op.c, c, id).Upsert(doc))
	default:
		return nil
	}
	r.note = "(deleted handle) -> " + errName(err)
	if !errors.Is(err, engine.ErrNotFound) {
		return classErr(op.kind.String()+" on a deleted container's handle: got "+errName(err)+", want ErrNotFound", "%v", err)
	}
	return nil
}

func (r *modelRun) resolveEtag(mc *refContainer, id string, mode etagChoice) (string, bool) {
	switch mode {
	case etagNone:
		return "", false
	case etagRight:
		if it := mc.items[id]; it != nil {
			return it.etag, true
		}
		if e, ok := mc.lastEtag(id); ok {
			return e, true
		}
	case etagStale:
		if e, ok := mc.staleEtag(id); ok {
			return e, true
		}
	}
	return bogusETag, true
}

// outcome compares an engine answer with the model's expectation.
func (r *modelRun) outcome(what string, want, got error) error {
	r.outc[what+"->"+errName(want)]++
	if r.note == "" {
		r.note = "-> " + errName(got)
	}
	if errors.Is(got, want) || (want == nil && got == nil) {
		return nil
	}
	w := "ok"
	if want != nil {
		w = errName(want)
	}
	return classErr(fmt.Sprintf("%s: got %s, want %s", what, errName(got), w), "%v", got)
}

// accept records a successful put of id in the model after checking the
// item the write returned.
func (r *modelRun) accept(what string, mc *refContainer, id string, ttl int32, body map[string]any, it engine.Item) error {
	if it.ETag == "" {
		return classErr(what+": empty etag", "%+v", it)
	}
	if mc.issued(id, it.ETag) {
		return classErr(what+": etag issued twice", "item %q got etag %s, issued before for it (history %v)", id, it.ETag, mc.etags[id])
	}
	want := &refItem{body: body, ts: r.m.now, ttl: ttl, etag: it.ETag}
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

func (r *modelRun) checkItem(what string, got engine.Item, want *refItem, id string) error {
	if got.ID != id {
		return classErr(what+": wrong id", "got %q, want %q", got.ID, id)
	}
	if got.TS != want.ts {
		return classErr(what+": wrong _ts", "item %q: TS = %d (t0%+d), want %d (t0%+d)", id, got.TS, got.TS-t0, want.ts, want.ts-t0)
	}
	if got.ETag != want.etag {
		return classErr(what+": wrong etag", "item %q: ETag = %s, want %s (the etag its write returned)", id, got.ETag, want.etag)
	}
	m, err := decodeBody(got.Body)
	if err != nil {
		return classErr(what+": body is not a JSON object", "item %q: %v: %s", id, err, got.Body)
	}
	if ts, ok := m["_ts"].(json.Number); !ok || ts.String() != strconv.FormatInt(want.ts, 10) {
		return classErr(what+": wrong body _ts", "item %q: _ts = %v, want %d; body %s", id, m["_ts"], want.ts, got.Body)
	}
	if e, ok := m["_etag"].(string); !ok || e != want.etag {
		return classErr(what+": wrong body _etag", "item %q: _etag = %v, want %s; body %s", id, m["_etag"], want.etag, got.Body)
	}
	delete(m, "_ts")
	delete(m, "_etag")
	if !reflect.DeepEqual(m, want.body) {
		return classErr(what+": wrong body", "item %q:\n got %v\nwant %v", id, m, want.body)
	}
	return nil
}

func (r *modelRun) checkRead(k int, mc *refContainer, c *engine.Container, id string) error {
	it, err := r.readItem(k, c, id)
	if d := (*diffItems)(nil); errors.As(err, &d) {
		return err
	}
	want := mc.items[id]
	if want == nil {
		if !errors.Is(err, engine.ErrNotFound) {
			return classErr("read: got "+errName(err)+", want ErrNotFound", "%s/%s: got %+v, %v; model: gone (defaultTtl %s, history %v)",
				containerName(k), id, showOps(it), err, ttlString(mc.dttl), mc.etags[id])
		}
		return nil
	}
	if err != nil {
		return classErr("read: got "+errName(err)+", want item", "%s/%s: %v; model: _ts t0%+d ttl %d defaultTtl %s etag %s",
			containerName(k), id, err, want.ts-t0, want.ttl, ttlString(mc.dttl), want.etag)
	}
	return r.checkItem("read", it, want, id)
}

func showOps(it engine.Item) string {
	return fmt.Sprintf("{ID:%q TS:t0%+d ETag:%s Body:%s}", it.ID, it.TS-t0, it.ETag, it.Body)
}

func (r *modelRun) write(op modelOp) error {
	mc, c, err := r.cont(op.c)
	if err != nil || mc == nil {
		return r.orStale(op, err)
	}
	id := itemID(op.id)
	doc, body := keyedDoc(op.c, id, op.ttl, op.val, op.sys)
	etag, has := r.resolveEtag(mc, id, op.etag)
	var opts []engine.WriteOption
	if has {
		opts = append(opts, engine.IfMatch(etag))
	}
	want := mc.expect(op.kind, id, has, etag)
	it, err := r.writeItem(op.c, c, op.kind, id, doc, op.val%2 == 0, opts...)
	if d := (*diffItems)(nil); errors.As(err, &d) {
		return err
	}
	if e := r.outcome(op.kind.String(), want, err); e != nil {
		return e
	}
	if want == nil {
		if op.kind == opDelete {
			delete(mc.items, id)
		} else if err := r.accept(op.kind.String(), mc, id, op.ttl, body, it); err != nil {
			return err
		}
	}
	return r.checkRead(op.c, mc, c, id)
}

func (r *modelRun) read(op modelOp) error {
	mc, c, err := r.cont(op.c)
	if err != nil || mc == nil {
		return r.orStale(op, err)
	}
	id := itemID(op.id)
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
		if p, eid := part(op.c, s, id); !errors.Is(func() error { _, err := p.Read(r.ctx, eid); return err }(), engine.ErrNotFound) {
			return classErr("read through a deleted container's handle: got "+errName(err)+", want ErrNotFound", "%s/%s: %v", containerName(op.c), id, err)
		}
	}
	return nil
}

func (r *modelRun) batch(op modelOp) error {
	mc, c, err := r.cont(op.c)
	if err != nil || mc == nil {
		return r.orStale(op, err)
	}
	if len(op.sub) == 0 {
		return nil
	}
	b := newBatch(op.c, c, itemID(op.sub[0].id))
	bodies := make([]map[string]any, len(op.sub))
	var want error
	for i, s := range op.sub {
		id := itemID(s.id)
		etag, has := r.resolveEtag(mc, id, s.etag)
		var opts []engine.WriteOption
		if has {
			opts = append(opts, engine.IfMatch(etag))
		}
		var doc []byte
		doc, bodies[i] = keyedDoc(op.c, id, s.ttl, s.val, s.sys)
		switch s.kind {
		case opCreate:
			b.Create(doc, opts...)
		case opUpsert:
			b.Upsert(doc, opts...)
		case opReplace:
			b.Replace(doc, opts...)
		case opDelete:
			_, eid := modelIdent(op.c, id)
			b.Delete(eid, opts...)
		}
		if want == nil {
			want = mc.expect(s.kind, id, has, etag)
		}
	}
	if op.dup && len(op.sub) > 0 {
		doc, _ := keyedDoc(op.c, itemID(op.sub[0].id), 0, 1, false)
		b.Upsert(doc)
		want = engine.ErrInvalidDocument
	}
	items, err := c.ExecuteBatch(r.ctx, b)
	if e := r.outcome("batch", want, err); e != nil {
		return e
	}
	if want == nil {
		if len(items) != len(op.sub) {
			return classErr("batch: wrong number of items", "got %d items for %d operations", len(items), len(op.sub))
		}
		for i, s := range op.sub {
			id := itemID(s.id)
			if s.kind == opDelete {
				if items[i].ID != "" || items[i].ETag != "" || items[i].Body != nil {
					return classErr("batch: delete returned an item", "operation %d: %+v", i, showOps(items[i]))
				}
				delete(mc.items, id)
				continue
			}
			it, err := r.fromEngine(op.c, items[i])
			if err != nil {
				return err
			}
			if err := r.accept("batch "+s.kind.String(), mc, id, s.ttl, bodies[i], it); err != nil {
				return err
			}
		}
		r.note = "-> ok"
	}
	for _, s := range op.sub {
		if err := r.checkRead(op.c, mc, c, itemID(s.id)); err != nil {
			return err
		}
	}
	return nil
}

func (r *modelRun) checkItems(k int, mc *refContainer, c *engine.Container) error {
	var got []engine.Item
	for it, err := range c.Items(r.ctx) {
		if err != nil {
			return classErr("items: error", "%v", err)
		}
		if it, err = r.fromEngine(k, it); err != nil {
			return err
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
		return classErr(class, "%s: got %v, want %v (extra %v, missing %v)", c.ID(), gotIDs, want, extra, missing)
	}
	for i, id := range want {
		if err := r.checkItem("items", got[i], mc.items[id], id); err != nil {
			return err
		}
	}
	r.note = fmt.Sprintf("-> %d items", len(got))
	return nil
}

func (r *modelRun) checkStats(mc *refContainer, c *engine.Container, compacted bool) error {
	st := c.Stats()
	n := int64(len(mc.items))
	switch {
	case st.Items != n:
		return classErr("stats: wrong Items", "%s: %+v, want Items %d (%v)", c.ID(), st, n, mc.ids())
	case st.ExpiredPending < 0 || st.LiveBytes < 0 || st.DiskBytes < 0:
		return classErr("stats: negative", "%s: %+v", c.ID(), st)
	case (st.LiveBytes > 0) != (n > 0):
		return classErr("stats: LiveBytes disagrees with Items", "%s: %+v, want LiveBytes > 0 iff Items > 0", c.ID(), st)
	case compacted && st.ExpiredPending != 0:
		return classErr("stats: ExpiredPending after Compact", "%s: %+v, want ExpiredPending 0 right after Compact", c.ID(), st)
	}
	if err := engine.CheckIndex(c); err != nil {
		return classErr("index: inconsistent", "%s: %v", c.ID(), err)
	}
	if r.note == "" {
		r.note = fmt.Sprintf("-> %+v", st)
	}
	return nil
}

func (r *modelRun) clock(op modelOp) error {
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
	for k := range modelContainers {
		if mc := r.m.conts[k]; mc != nil {
			_, c, err := r.cont(k)
			if err != nil {
				return err
			}
			if op.id%2 == 0 {
				return r.checkStats(mc, c, false)
			}
			if _, err := c.Partition(engine.NoneKey()).Read(r.ctx, "never-written"); !errors.Is(err, engine.ErrNotFound) {
				return classErr("read: got "+errName(err)+", want ErrNotFound", "%s/never-written: %v", c.ID(), err)
			}
			return nil
		}
	}
	engine.Now(r.db)
	return nil
}

func (r *modelRun) setTTL(op modelOp) error {
	mc, c, err := r.cont(op.c)
	if err != nil || mc == nil {
		return r.orStale(op, err)
	}
	p := c.Properties()
	if !sameDefaultTTL(p.DefaultTTL, mc.dttl) {
		return classErr("properties: wrong DefaultTTL", "%s: %v, want %s", c.ID(), p.DefaultTTL, ttlString(mc.dttl))
	}
	p.DefaultTTL = ttlPtr(op.dttl)
	if e := r.outcome("setttl", nil, c.SetProperties(r.ctx, p)); e != nil {
		return e
	}
	r.m.setDefaultTTL(op.c, op.dttl)
	if p := c.Properties(); !sameDefaultTTL(p.DefaultTTL, op.dttl) {
		return classErr("properties: wrong DefaultTTL after SetProperties", "%s: %v, want %s", c.ID(), p.DefaultTTL, ttlString(op.dttl))
	}
	r.note = fmt.Sprintf("-> ok, %d live", len(mc.items))
	return r.checkStats(mc, c, false)
}

func (r *modelRun) compact(k int, mc *refContainer, c *engine.Container) error {
	if err := c.Compact(r.ctx); err != nil {
		return classErr("compact: error", "%s: %v", c.ID(), err)
	}
	if err := r.checkItems(k, mc, c); err != nil {
		return err
	}
	return r.checkStats(mc, c, true)
}

func (r *modelRun) reopen(op modelOp) error {
	r.dbMu.Lock()
	err := r.db.Close()
	r.db = nil
	r.dbMu.Unlock()
	if err != nil {
		return classErr("close: error", "%v", err)
	}
	r.stale = [modelContainers]*engine.Container{}
	if op.back > 0 {
		r.clk.Set(r.clk.Unix() - op.back)
	}
	db, err := engine.Open(r.dir, r.options(op))
	if err != nil {
		return classErr("open: error", "%v", err)
	}
	r.setDB(db)
	r.m.reopen(r.clk.Unix())
	r.note = fmt.Sprintf("-> wall=+%d", r.clk.Unix()-r.m.now)
	return r.checkAll()
}

// crash simulates a crash of the process: it copies the database directory
// as it is on disk while the DB is open (with no seal or compaction in
// progress, and no request in flight, so that the copy is a state the files
// really pass through, and with NoSync nothing waiting in the journal
// queue), abandons the DB and opens the copy. Everything acknowledged is in
// the files the OS holds, so the model stays as it is.
// The engine's high clock mark may have been persisted late, so the wall
// clock is first brought up to the model's now: then the engine's now must
// be exactly the model's.
func (r *modelRun) crash(op modelOp) error {
	r.crashes++
	to := filepath.Join(r.base, "db"+strconv.Itoa(r.crashes))
	release := engine.HoldSeals(r.db)
	engine.DrainJournal(r.db)
	err := testutil.CopyDir(r.dir, to)
	release()
	if err != nil {
		return fmt.Errorf("crash: copy %s: %w", r.dir, err)
	}
	r.dbMu.Lock()
	err = r.db.Close()
	r.db, r.dir = nil, to
	r.dbMu.Unlock()
	if err != nil {
		return classErr("close: error", "%v", err)
	}
	r.stale = [modelContainers]*engine.Container{}
	if r.clk.Unix() < r.m.now {
		r.clk.Set(r.m.now)
	}
	db, err := engine.Open(r.dir, r.options(op))
	if err != nil {
		return classErr("open after a crash: error", "%v", err)
	}
	r.setDB(db)
	r.m.reopen(r.clk.Unix())
	return r.checkAll()
}

func (r *modelRun) checkAll() error {
	var want []string
	for k := range modelContainers {
		if r.m.conts[k] != nil {
			want = append(want, containerName(k))
		}
	}
	if got := r.db.Containers(); !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
		return classErr("containers: wrong list", "got %v, want %v", got, want)
	}
	for k := range modelContainers {
		mc, c, err := r.cont(k)
		if err != nil {
			return err
		}
		if mc == nil {
			continue
		}
		if p := c.Properties(); !sameDefaultTTL(p.DefaultTTL, mc.dttl) || p.ID != containerName(k) || (p.PartitionKeyPath != "") != modelKeyed(k) {
			return classErr("properties: wrong", "%s: %+v, want DefaultTTL %s", containerName(k), p, ttlString(mc.dttl))
		}
		if err := r.checkItems(k, mc, c); err != nil {
			return err
		}
		if err := r.checkStats(mc, c, false); err != nil {
			return err
		}
		for i := range modelIDs {
			if err := r.checkRead(k, mc, c, itemID(i)); err != nil {
				return err
			}
		}
	}
	r.note = "-> ok"
	return nil
}

func (r *modelRun) createContainer(op modelOp) error {
	name := containerName(op.c)
	props := engine.ContainerProperties{ID: name, DefaultTTL: ttlPtr(op.dttl)}
	if modelKeyed(op.c) {
		props.PartitionKeyPath = modelKeyPath
	}
	c, err := r.db.CreateContainer(r.ctx, props)
	if r.m.conts[op.c] != nil {
		return r.outcome("create-container", engine.ErrConflict, err)
	}
	if e := r.outcome("create-container", nil, err); e != nil {
		return e
	}
	r.m.conts[op.c] = newRefContainer(op.dttl)
	if p := c.Properties(); !sameDefaultTTL(p.DefaultTTL, op.dttl) || p.ID != name || p.PartitionKeyPath != props.PartitionKeyPath {
		return classErr("properties: wrong after CreateContainer", "%+v, want DefaultTTL %s", p, ttlString(op.dttl))
	}
	return r.checkItems(op.c, r.m.conts[op.c], c)
}

func (r *modelRun) deleteContainer(op modelOp) error {
	mc, c, err := r.cont(op.c)
	if err != nil {
		return err
	}
	err = r.db.DeleteContainer(r.ctx, containerName(op.c))
	if mc == nil {
		return r.outcome("delete-container", engine.ErrNotFound, err)
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

func (r *modelRun) badTTL(op modelOp) error {
	mc, c, err := r.cont(op.c)
	if err != nil || mc == nil {
		return err
	}
	id := itemID(op.id)
	pk, eid := modelIdent(op.c, id)
	pkProp := ""
	if !pk.IsNone() {
		pkProp = fmt.Sprintf(`,"pk":%s`, strings.Trim(pk.String(), "[]"))
	}
	doc := []byte(fmt.Sprintf(`{"id":%q,"v":1%s,"ttl":%s}`, eid, pkProp, badTTLs[op.val%len(badTTLs)]))
	_, err = r.writeItem(op.c, c, []opKind{opCreate, opUpsert, opReplace}[op.val%3], id, doc, op.val%2 == 0)
	if e := r.outcome("bad-ttl", engine.ErrInvalidTTL, err); e != nil {
		return e
	}
	return r.checkRead(op.c, mc, c, id)
}

func (r *modelRun) badProps(op modelOp) error {
	mc, c, err := r.cont(op.c)
	if err != nil || mc == nil {
		return err
	}
	p := c.Properties()
	switch op.val % 4 {
	case 0:
		p.DefaultTTL = engine.TTL(0)
	case 1:
		p.DefaultTTL = engine.TTL([]int32{-2, -100, -2147483648}[op.val%3])
	case 2: // TTL on together with indexing none
		if p.DefaultTTL == nil {
			p.DefaultTTL = engine.TTL(-1)
		}
		p.Indexing = engine.IndexingNone
	default:
		p.ID += "x"
		if op.val%8 == 3 { // a new partition key path (or one where there was none)
			p.ID = containerName(op.c)
			p.PartitionKeyPath += "/other"
		}
	}
	if e := r.outcome("bad-props", engine.ErrInvalidProperties, c.SetProperties(r.ctx, p)); e != nil {
		return e
	}
	if p := c.Properties(); !sameDefaultTTL(p.DefaultTTL, mc.dttl) || p.Indexing != engine.IndexingConsistent || p.ID != containerName(op.c) {
		return classErr("properties: changed by a rejected SetProperties", "%+v, want DefaultTTL %s", p, ttlString(mc.dttl))
	}
	return r.checkStats(mc, c, false)
}

// ---- the test ----

type modelVariant struct {
	name       string
	ops, short int
}

var modelVariants = []modelVariant{
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
	replayOnFailure(t, "EBB_MODEL_SEED", uint64(seed))
	for vi, v := range modelVariants {
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
			ops := opGen(rand.New(rand.NewPCG(uint64(seed), uint64(vi)+1)), n, v.name)
			start := time.Now()
			r := newModelRun(t.TempDir())
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
				trace := shrinkOps(t, ops[:at+1], err)
				t.Logf("minimal failing sequence (%d ops):\n%s", len(trace), strings.Join(trace, "\n"))
			} else {
				t.Logf("set EBB_MODEL_SHRINK=1 to shrink it to a minimal sequence")
			}
		})
	}
}

func (r *modelRun) summary() string {
	var b strings.Builder
	b.WriteString("ops:")
	for k := range opKinds {
		if r.counts[k] > 0 {
			fmt.Fprintf(&b, " %s=%d", opKind(k), r.counts[k])
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

// shrinkOps drops operations from ops while the run still fails the same way
// and returns the trace of the smallest failing sequence found.
func shrinkOps(t *testing.T, ops []modelOp, first error) []string {
	class := errClass(first)
	deadline := time.Now().Add(10 * time.Minute)
	try := func(cand []modelOp) (int, []string, bool) {
		base, err := os.MkdirTemp("", "ebb-model-shrink-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(base)
		r := newModelRun(base)
		at, err := r.run(cand)
		r.close()
		return at, r.trace, err != nil && errClass(err) == class
	}
	runs := 0
	for chunk := len(ops) / 2; chunk >= 1 && time.Now().Before(deadline); {
		removed := false
		for start := 0; start < len(ops) && time.Now().Before(deadline); {
			end := min(start+chunk, len(ops))
			cand := append(append([]modelOp{}, ops[:start]...), ops[end:]...)
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
		for j := 0; ops[i].kind == opBatch && j < len(ops[i].sub) && len(ops[i].sub) > 1; {
			cand := append([]modelOp{}, ops...)
			cand[i].sub = append(append([]modelOp{}, ops[i].sub[:j]...), ops[i].sub[j+1:]...)
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
