package crashloop

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The child process learns its round from the environment and reports
// every step of its workload on stdout, one line per event, each written
// with a single write(2) so that lines of concurrent goroutines never
// interleave. A line is printed before the event it announces starts
// (clock, policy, start) and after the event it acknowledges ends (clocked,
// policied, ack, nack, read), so the order of the lines brackets every
// operation between what certainly happened before it and what may have
// happened until its answer.
//
//	ready                               the workload starts (after step 0)
//	created C                           container C was created (DefaultTTL as defaultTTLOf(C))
//	clock K X T                         step K: the wall clock is about to read X (true time T)
//	clocked K                           the engine has observed step K's wall clock
//	policy K C D                        about to set C's DefaultTTL to D (nil, -1 or n) at step K
//	policied K C                        that change is acknowledged
//	start TAG C kind id w [kind id w]   a write (several: a transactional batch) of docFor(id, w)
//	ack TAG etag ts [etag ts]           it is acknowledged: one etag and _ts per op ("- 0" for deletes)
//	nack TAG reason                     it was refused: notfound, conflict or precondition
//	read K C id -                       a point read, started after "clocked K", found nothing
//	read K C id w ts etag               ... found write w
//	compacting C, compacted C           a Compact call starts, ends
//	held K                              step K was a hold: observed by reads alone, then
//	                                    every own id read; nothing writes for a while
//	fail MESSAGE                        the child saw something wrong and stops
//
// A kind ending in "!" carries IfMatch with the etag of the item's version
// the worker last wrote.

// Environment of the child process.
const (
	envChild   = "EBB_CRASHLOOP_CHILD" // "1": this process is the child
	envDir     = "EBB_CRASHLOOP_DIR"
	envWall    = "EBB_CRASHLOOP_WALL" // the wall clock at the start, unix seconds
	envTrue    = "EBB_CRASHLOOP_TRUE" // the true time at the start, unix seconds
	envRound   = "EBB_CRASHLOOP_ROUND"
	envSeed    = "EBB_CRASHLOOP_SEED"
	envWorkers = "EBB_CRASHLOOP_WORKERS"
	envFaults  = "EBB_CRASHLOOP_FAULTS" // "1": the clock jumps
)

// IsChild reports whether this process was started by Run as the child.
func IsChild() bool { return os.Getenv(envChild) == "1" }

// Nack reasons.
const (
	reasonNotFound     = "notfound"
	reasonConflict     = "conflict"
	reasonPrecondition = "precondition"
)

// lineKind is the first word of a protocol line.
type lineKind string

const (
	lnReady      lineKind = "ready"
	lnCreated    lineKind = "created"
	lnClock      lineKind = "clock"
	lnClocked    lineKind = "clocked"
	lnPolicy     lineKind = "policy"
	lnPolicied   lineKind = "policied"
	lnStart      lineKind = "start"
	lnAck        lineKind = "ack"
	lnNack       lineKind = "nack"
	lnRead       lineKind = "read"
	lnCompacting lineKind = "compacting"
	lnCompacted  lineKind = "compacted"
	lnHeld       lineKind = "held"
	lnFail       lineKind = "fail"
)

// wop is one write of a start line.
type wop struct {
	kind    string // create, upsert, replace, delete
	ifMatch bool
	id, w   string
}

// logLine is one protocol line, parsed.
type logLine struct {
	kind      lineKind
	text      string
	step      int    // clock, clocked, held, policy, policied, read
	wall, tru int64  // clock
	cont      string // created, policy, policied, start, read, compacting, compacted
	ttl       *int32 // policy
	tag       string // start, ack, nack
	ops       []wop  // start
	etags     []string
	tss       []int64
	reason    string // nack
	id        string // read
	found     bool   // read
	w         string // read
	ts        int64  // read
	etag      string // read
}

// parseLine parses one protocol line.
func parseLine(s string) (logLine, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return logLine{}, fmt.Errorf("empty line")
	}
	l := logLine{kind: lineKind(f[0]), text: s}
	bad := func() (logLine, error) { return logLine{}, fmt.Errorf("malformed line %q", s) }
	num := func(x string) (int64, bool) {
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	}
	var ok, ok2 bool
	var k int64
	switch l.kind {
	case lnReady:
	case lnFail:
		l.reason = strings.TrimSpace(strings.TrimPrefix(s, "fail"))
	case lnCreated, lnCompacting, lnCompacted:
		if len(f) != 2 {
			return bad()
		}
		l.cont = f[1]
	case lnClock:
		if len(f) != 4 {
			return bad()
		}
		k, ok = num(f[1])
		l.wall, ok2 = num(f[2])
		l.tru, _ = num(f[3])
		l.step = int(k)
		if !ok || !ok2 {
			return bad()
		}
	case lnClocked, lnHeld:
		if len(f) != 2 {
			return bad()
		}
		k, ok = num(f[1])
		l.step = int(k)
		if !ok {
			return bad()
		}
	case lnPolicy, lnPolicied:
		if (l.kind == lnPolicy && len(f) != 4) || (l.kind == lnPolicied && len(f) != 3) {
			return bad()
		}
		k, ok = num(f[1])
		l.step, l.cont = int(k), f[2]
		if !ok {
			return bad()
		}
		if l.kind == lnPolicy && f[3] != "nil" {
			d, ok := num(f[3])
			if !ok || d < -1 || d == 0 || d > 1<<31-1 {
				return bad()
			}
			v := int32(d)
			l.ttl = &v
		}
	case lnStart:
		if len(f) < 6 || (len(f)-3)%3 != 0 {
			return bad()
		}
		l.tag, l.cont = f[1], f[2]
		for i := 3; i < len(f); i += 3 {
			o := wop{kind: strings.TrimSuffix(f[i], "!"), ifMatch: strings.HasSuffix(f[i], "!"), id: f[i+1], w: f[i+2]}
			switch o.kind {
			case "create", "upsert", "replace", "delete":
			default:
				return bad()
			}
			l.ops = append(l.ops, o)
		}
	case lnAck:
		if len(f) < 4 || len(f)%2 != 0 {
			return bad()
		}
		l.tag = f[1]
		for i := 2; i < len(f); i += 2 {
			ts, ok := num(f[i+1])
			if !ok {
				return bad()
			}
			l.etags, l.tss = append(l.etags, f[i]), append(l.tss, ts)
		}
	case lnNack:
		if len(f) != 3 {
			return bad()
		}
		l.tag, l.reason = f[1], f[2]
	case lnRead:
		if len(f) != 5 && len(f) != 7 {
			return bad()
		}
		k, ok = num(f[1])
		l.step, l.cont, l.id = int(k), f[2], f[3]
		if !ok || (len(f) == 5) != (f[4] == "-") {
			return bad()
		}
		if len(f) == 7 {
			l.found, l.w, l.etag = true, f[4], f[6]
			if l.ts, ok = num(f[5]); !ok {
				return bad()
			}
		}
	default:
		return bad()
	}
	return l, nil
}

// ttlString renders a DefaultTTL as a policy line does.
func ttlString(d *int32) string {
	if d == nil {
		return "nil"
	}
	return strconv.Itoa(int(*d))
}
