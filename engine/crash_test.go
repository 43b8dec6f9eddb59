package engine

// Crash-safety tests (DESIGN.md, invariant 2): an acknowledged write
// survives a crash with the default durability, an unacknowledged one is
// whole or absent, and a torn journal tail is repaired on open.
//
//   - TestCrashKill runs a writer in a child process (this test binary,
//     re-executed into TestCrashChild), kills it with SIGKILL at a random
//     moment, reopens the directory in-process and checks every item against
//     the log of writes the child started and acknowledged. Several rounds
//     run on the same directory.
//   - TestCrashPowerLoss simulates what SIGKILL cannot: bytes that never
//     reached the disk. After a clean run it cuts or pads the journal's last
//     file and checks that Open repairs it, keeps a copy under broken/, and
//     loses exactly the entries after the cut.
//
// Helpers shared with damage_test.go are prefixed ck.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine/journal"
)

// ---------------------------------------------------------------------------
// The write model shared by the crash and damage tests.

// The kill test's containers: workers of even number write to "c", odd to
// "c2", so that seals (which freeze every container at one journal
// position) and compactions of one container cross the other's writes.
var ckContainers = []string{"c", "c2"}

// ckContainerOf returns the container of a kill-test id ("w<worker>-<n>").
func ckContainerOf(id string) string {
	w, _ := strconv.Atoi(strings.TrimPrefix(id[:strings.IndexByte(id, '-')], "w"))
	return ckContainers[w%len(ckContainers)]
}

const (
	ckContainer  = "c"
	ckDefaultTTL = 3600 // the container's DefaultTTL
	ckRoundSecs  = 10   // the fake clock moves this much between kill rounds
)

func ckHash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// ckTTL is the item ttl that write w puts in its document: 0 (absent), -1,
// a large one, or 5 seconds (which expires before the next kill round).
func ckTTL(w string) int32 {
	switch ckHash(w) % 8 {
	case 0, 1, 2:
		return 0
	case 3, 4:
		return -1
	case 5:
		return 1_000_000
	default:
		return 5
	}
}

// ckDoc is the document that write w stores in item id: a pure function of
// both, so that any body read back can be checked byte for byte against the
// write it claims to be.
func ckDoc(id, w string) []byte {
	h := ckHash(w)
	n := 20 + int(h>>8%400)
	if h>>20%16 == 0 {
		n = 2000 + int(h>>24%5000) // a few large ones fill blocks
	}
	r := rand.New(rand.NewPCG(h, 0x9e3779b97f4a7c15))
	pad := make([]byte, n)
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	for i := range pad {
		pad[i] = alphabet[r.IntN(len(alphabet))]
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":%q,"w":%q,"n":{"h":%d,"a":[1,"two",null,true]},"pad":"%s"`, id, w, h%1_000_000, pad)
	if ttl := ckTTL(w); ttl != 0 {
		fmt.Fprintf(&b, `,"ttl":%d`, ttl)
	}
	b.WriteString("}")
	return []byte(b.String())
}

// ckDocs caches the decoded documents of ckDoc (read-only once stored).
var ckDocs sync.Map

// ckDocMap is ckDoc(id, w) decoded.
func ckDocMap(id, w string) map[string]any {
	key := id + "\x00" + w
	if m, ok := ckDocs.Load(key); ok {
		return m.(map[string]any)
	}
	var m map[string]any
	if err := json.Unmarshal(ckDoc(id, w), &m); err != nil {
		panic(err)
	}
	ckDocs.Store(key, m)
	return m
}

// ckState is what an item is: absent, or the version written by w at ts.
// etag is "" when the test does not know it (a write in flight at a crash).
type ckState struct {
	present bool
	w       string
	ts      int64
	etag    string
}

func (s ckState) String() string {
	if !s.present {
		return "absent"
	}
	e := s.etag
	if e == "" {
		e = "?"
	}
	return fmt.Sprintf("%s@%d etag %s", s.w, s.ts, e)
}

// expire is the first instant at which s is invisible, in a container whose
// DefaultTTL has always been ckDefaultTTL.
func (s ckState) expire() int64 {
	switch ttl := ckTTL(s.w); {
	case ttl == -1:
		return 1<<63 - 1
	case ttl == 0:
		return s.ts + ckDefaultTTL
	default:
		return s.ts + int64(ttl)
	}
}

func (s ckState) visible(now int64) bool { return s.present && s.expire() > now }

// ckCheckItem reports how it differs from version want of item id, or nil.
func ckCheckItem(it Item, id string, want ckState) error {
	if it.ID != id {
		return fmt.Errorf("Item.ID %q, want %q", it.ID, id)
	}
	var got map[string]any
	if err := json.Unmarshal(it.Body, &got); err != nil {
		return fmt.Errorf("body %q is not JSON: %v", it.Body, err)
	}
	if w, _ := got["w"].(string); w != want.w {
		return fmt.Errorf("body is write %q, want %q (body %.200s)", w, want.w, it.Body)
	}
	if got["_ts"] != float64(it.TS) || got["_etag"] != it.ETag {
		return fmt.Errorf("body _ts %v _etag %v, Item has TS %d ETag %s", got["_ts"], got["_etag"], it.TS, it.ETag)
	}
	if it.TS != want.ts {
		return fmt.Errorf("_ts %d, want %d", it.TS, want.ts)
	}
	if want.etag != "" && it.ETag != want.etag {
		return fmt.Errorf("_etag %s, want %s", it.ETag, want.etag)
	}
	delete(got, "_ts")
	delete(got, "_etag")
	if !reflect.DeepEqual(got, ckDocMap(id, want.w)) {
		return fmt.Errorf("body %.300s does not match the document of write %s", it.Body, want.w)
	}
	return nil
}

// ckBodyIntact checks an item read without knowing which version to expect:
// its body must be exactly the document of the write it names.
func ckBodyIntact(it Item) error {
	var got map[string]any
	if err := json.Unmarshal(it.Body, &got); err != nil {
		return fmt.Errorf("item %q: body is not JSON: %v", it.ID, err)
	}
	w, _ := got["w"].(string)
	return ckCheckItem(it, it.ID, ckState{present: true, w: w, ts: it.TS, etag: it.ETag})
}

// ckVerify checks container c at now against allowed: every id's visible
// state must match one of allowed[id] (ids missing from allowed must be
// absent), Read and Items must agree, Items must be in id order, and
// Stats.Items must count them. It returns, per id, the indexes of the
// allowed states that matched, and the state found (absent or the version
// read, with its etag).
func ckVerify(t *testing.T, c *Container, now int64, allowed map[string][]ckState) (matched map[string][]int, found map[string]ckState) {
	t.Helper()
	ctx := context.Background()
	matched = make(map[string][]int, len(allowed))
	found = make(map[string]ckState)
	read := make(map[string]Item)
	for id, states := range allowed {
		it, err := c.Read(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
			for i, s := range states {
				if !s.visible(now) {
					matched[id] = append(matched[id], i)
				}
			}
			if matched[id] == nil {
				t.Errorf("item %q: Read = not found; want one of %v", id, states)
			}
		case err != nil:
			t.Errorf("item %q: Read: %v", id, err)
		default:
			read[id] = it
			var why []string
			for i, s := range states {
				if !s.visible(now) {
					why = append(why, s.String()+": should be invisible")
					continue
				}
				if err := ckCheckItem(it, id, s); err != nil {
					why = append(why, s.String()+": "+err.Error())
					continue
				}
				matched[id] = append(matched[id], i)
			}
			if matched[id] == nil {
				t.Errorf("item %q: Read returned _ts %d _etag %s body %.200s\n\tmatching none of the allowed states:\n\t%s",
					id, it.TS, it.ETag, it.Body, strings.Join(why, "\n\t"))
			}
			var body map[string]any
			_ = json.Unmarshal(it.Body, &body)
			w, _ := body["w"].(string)
			found[id] = ckState{present: true, w: w, ts: it.TS, etag: it.ETag}
		}
	}
	var prev string
	n := 0
	for it, err := range c.Items(ctx) {
		if err != nil {
			t.Errorf("Items: %v", err)
			break
		}
		if n > 0 && it.ID <= prev {
			t.Errorf("Items: %q after %q: not in id order", it.ID, prev)
		}
		prev = it.ID
		n++
		r, ok := read[it.ID]
		switch {
		case !ok:
			if _, known := allowed[it.ID]; !known {
				t.Errorf("Items yielded an item no write created: %q %.200s", it.ID, it.Body)
			} else {
				t.Errorf("Items yielded %q, which Read did not find", it.ID)
			}
		case r.TS != it.TS || r.ETag != it.ETag || !bytes.Equal(r.Body, it.Body):
			t.Errorf("item %q: Items yielded %d %s %.200s, Read %d %s %.200s", it.ID, it.TS, it.ETag, it.Body, r.TS, r.ETag, r.Body)
		}
	}
	if n != len(read) {
		t.Errorf("Items yielded %d items, Read found %d", n, len(read))
	}
	if st := c.Stats(); st.Items != int64(len(read)) {
		t.Errorf("Stats.Items = %d, Read found %d", st.Items, len(read))
	}
	return matched, found
}

// ckExact turns a model (present items) and a universe of ids into the
// single allowed state of each id.
func ckExact(model map[string]ckState, universe map[string]bool) map[string][]ckState {
	allowed := make(map[string][]ckState, len(universe))
	for id := range universe {
		allowed[id] = []ckState{model[id]}
	}
	for id, s := range model {
		allowed[id] = []ckState{s}
	}
	return allowed
}

func ckSeqOf(etag string) uint64 {
	n, err := strconv.ParseUint(strings.Trim(etag, `"`), 16, 64)
	if err != nil {
		return 0
	}
	return n
}

// ckListDir returns the names in dir, or nil if it does not exist.
func ckListDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// ---------------------------------------------------------------------------
// The child process.

// Environment of the child process.
const (
	ckEnvMode    = "EBB_CRASH_CHILD" // "writer", "trylock" or "hold"
	ckEnvDir     = "EBB_CRASH_DIR"
	ckEnvClock   = "EBB_CRASH_CLOCK" // the fixed wall clock, unix seconds
	ckEnvRound   = "EBB_CRASH_ROUND"
	ckEnvSeed    = "EBB_CRASH_SEED"
	ckEnvWorkers = "EBB_CRASH_WORKERS"
	ckEnvIDs     = "EBB_CRASH_IDS" // ids per worker
)

// Options of the child writer: small thresholds, so that a short run seals,
// rolls journal files and compacts many times.
func ckChildOptions(o *Options) {
	o.SealThreshold = 8 << 10
	o.JournalSegmentSize = 16 << 10
	o.BlockSize = 1 << 10
}

// TestCrashChild is not a test: it is the child process of TestCrashKill
// and of the lock tests, run only when EBB_CRASH_CHILD is set.
func TestCrashChild(t *testing.T) {
	mode := os.Getenv(ckEnvMode)
	if mode == "" {
		t.Skip("helper process of TestCrashKill and TestLockChildProcess; runs only with " + ckEnvMode + " set")
	}
	os.Exit(ckRunChild(mode))
}

// ckEmit writes one line to stdout with a single write, so that lines from
// concurrent goroutines never interleave on the pipe.
func ckEmit(format string, args ...any) {
	os.Stdout.Write([]byte(fmt.Sprintf(format, args...) + "\n"))
}

func ckFail(format string, args ...any) {
	ckEmit("fail "+format, args...)
	os.Exit(3)
}

func ckRunChild(mode string) int {
	// Never outlive the parent (a killed `go test` must not leave writers).
	ppid := os.Getppid()
	go func() {
		for range time.Tick(50 * time.Millisecond) {
			if os.Getppid() != ppid {
				os.Exit(5)
			}
		}
	}()
	dir := os.Getenv(ckEnvDir)
	switch mode {
	case "writer":
		ckChildWriter(dir)
	case "trylock":
		db, err := Open(dir, nil)
		switch {
		case errors.Is(err, ErrLocked):
			ckEmit("locked")
		case err != nil:
			ckEmit("error %v", err)
		default:
			ckEmit("opened")
			if err := db.Close(); err != nil {
				ckEmit("error close: %v", err)
			}
		}
		return 0
	case "hold":
		db, err := Open(dir, nil)
		if err != nil {
			ckEmit("error %v", err)
			return 0
		}
		ckEmit("holding")
		// Hold until stdin closes (then close cleanly) or a SIGKILL.
		var b [1]byte
		os.Stdin.Read(b[:])
		if err := db.Close(); err != nil {
			ckEmit("error close: %v", err)
		}
		ckEmit("closed")
		return 0
	}
	ckEmit("error unknown mode %q", mode)
	return 2
}

func ckChildWriter(dir string) {
	ctx := context.Background()
	clockSec, _ := strconv.ParseInt(os.Getenv(ckEnvClock), 10, 64)
	round, _ := strconv.Atoi(os.Getenv(ckEnvRound))
	seed, _ := strconv.ParseUint(os.Getenv(ckEnvSeed), 10, 64)
	workers, _ := strconv.Atoi(os.Getenv(ckEnvWorkers))
	idsPer, _ := strconv.Atoi(os.Getenv(ckEnvIDs))
	now := time.Unix(clockSec, 0)
	o := &Options{Clock: func() time.Time { return now }}
	ckChildOptions(o)
	db, err := Open(dir, o)
	if err != nil {
		ckFail("open: %v", err)
	}
	var cs []*Container
	for _, name := range ckContainers {
		c, err := db.Container(name)
		if errors.Is(err, ErrNotFound) {
			c, err = db.CreateContainer(ctx, ContainerProperties{ID: name, DefaultTTL: TTL(ckDefaultTTL)})
		}
		if err != nil {
			ckFail("container %s: %v", name, err)
		}
		cs = append(cs, c)
	}
	ckEmit("ready")
	for w := range workers {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		go ckChildWorker(ctx, cs[w%len(cs)], round, w, idsPer, clockSec, rng)
	}
	go func() { // compaction, now and then
		rng := rand.New(rand.NewPCG(seed, 1000))
		for {
			time.Sleep(time.Duration(5+rng.IntN(40)) * time.Millisecond)
			c := cs[rng.IntN(len(cs))]
			ckEmit("compacting")
			if err := c.Compact(ctx); err != nil {
				ckFail("compact %s: %v", c.ID(), err)
			}
			ckEmit("compacted")
		}
	}()
	go func() { // scans: every body must be exactly one of the writes
		for {
			for _, c := range cs {
				for it, err := range c.Items(ctx) {
					if err != nil {
						ckFail("scan: Items: %v", err)
					}
					if err := ckBodyIntact(it); err != nil {
						ckFail("scan: %v", err)
					}
					if ckContainerOf(it.ID) != c.ID() {
						ckFail("scan: item %q in container %s", it.ID, c.ID())
					}
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	time.Sleep(60 * time.Second) // the parent kills us long before
	ckFail("not killed after 60s")
}

// A child request line: "start TAG kind id w [kind id w ...]"; its answer:
// "ack TAG etag ts [etag ts ...]" (etag "-" and ts 0 for a delete).
func ckChildWorker(ctx context.Context, c *Container, round, w, idsPer int, now int64, rng *rand.Rand) {
	etags := make(map[string]string) // live items of this worker: id -> etag
	ids := make([]string, idsPer)
	for k := range ids {
		ids[k] = fmt.Sprintf("w%d-%03d", w, k)
		it, err := c.Read(ctx, ids[k])
		switch {
		case err == nil:
			if err := ckBodyIntact(it); err != nil {
				ckFail("initial read: %v", err)
			}
			etags[ids[k]] = it.ETag
		case !errors.Is(err, ErrNotFound):
			ckFail("initial read %s: %v", ids[k], err)
		}
	}
	type wop struct {
		kind, id, w string
		opts        []WriteOption
	}
	pick := func(id, wtag string) wop {
		o := wop{id: id, w: wtag}
		etag, live := etags[id]
		if !live {
			o.kind = []string{"create", "create", "upsert"}[rng.IntN(3)]
			return o
		}
		switch x := rng.IntN(20); {
		case x < 7:
			o.kind = "upsert"
		case x < 11:
			o.kind, o.opts = "replace", []WriteOption{IfMatch(etag)}
		case x < 13:
			o.kind = "replace"
		case x < 15:
			o.kind, o.opts = "upsert", []WriteOption{IfMatch(etag)}
		case x < 18:
			o.kind, o.w = "delete", "-"
		default:
			o.kind, o.w, o.opts = "delete", "-", []WriteOption{IfMatch(etag)}
		}
		return o
	}
	for n := 0; ; n++ {
		tag := fmt.Sprintf("r%d.w%d.%d", round, w, n)
		var ops []wop
		if rng.IntN(8) == 0 { // a transactional batch of 2 to 4 items
			perm := rng.Perm(idsPer)[:2+rng.IntN(3)]
			for j, k := range perm {
				ops = append(ops, pick(ids[k], fmt.Sprintf("%s.%d", tag, j)))
			}
		} else {
			ops = append(ops, pick(ids[rng.IntN(idsPer)], tag+".0"))
		}
		var line strings.Builder
		line.WriteString("start " + tag)
		for _, o := range ops {
			fmt.Fprintf(&line, " %s %s %s", o.kind, o.id, o.w)
		}
		ckEmit("%s", line.String())

		var items []Item
		var err error
		if len(ops) == 1 {
			o := ops[0]
			var it Item
			switch o.kind {
			case "create":
				it, err = c.Create(ctx, ckDoc(o.id, o.w), o.opts...)
			case "upsert":
				it, err = c.Upsert(ctx, ckDoc(o.id, o.w), o.opts...)
			case "replace":
				it, err = c.Replace(ctx, ckDoc(o.id, o.w), o.opts...)
			case "delete":
				err = c.Delete(ctx, o.id, o.opts...)
			}
			items = []Item{it}
		} else {
			var b Batch
			for _, o := range ops {
				switch o.kind {
				case "create":
					b.Create(ckDoc(o.id, o.w), o.opts...)
				case "upsert":
					b.Upsert(ckDoc(o.id, o.w), o.opts...)
				case "replace":
					b.Replace(ckDoc(o.id, o.w), o.opts...)
				case "delete":
					b.Delete(o.id, o.opts...)
				}
			}
			items, err = c.ExecuteBatch(ctx, &b)
		}
		if err != nil {
			ckFail("%s: %v", tag, err)
		}
		line.Reset()
		line.WriteString("ack " + tag)
		for i, o := range ops {
			if o.kind == "delete" {
				line.WriteString(" - 0")
				delete(etags, o.id)
				continue
			}
			it := items[i]
			if err := ckCheckItem(it, o.id, ckState{present: true, w: o.w, ts: now}); err != nil {
				ckFail("%s: returned item: %v", tag, err)
			}
			fmt.Fprintf(&line, " %s %d", it.ETag, it.TS)
			etags[o.id] = it.ETag
		}
		ckEmit("%s", line.String())

		// Read your writes, through seals and compactions running meanwhile.
		if rng.IntN(4) == 0 {
			for _, o := range ops {
				it, err := c.Read(ctx, o.id)
				if o.kind == "delete" {
					if !errors.Is(err, ErrNotFound) {
						ckFail("%s: read after delete %s: %v", tag, o.id, err)
					}
					continue
				}
				if err != nil {
					ckFail("%s: read after write %s: %v", tag, o.id, err)
				}
				if err := ckCheckItem(it, o.id, ckState{present: true, w: o.w, ts: now, etag: etags[o.id]}); err != nil {
					ckFail("%s: read after write: %v", tag, err)
				}
			}
		}
	}
}

// ---------------------------------------------------------------------------
// TestCrashKill: the parent.

type ckOp struct {
	req   *ckReq
	kind  string
	id    string
	w     string
	etag  string
	ts    int64
	acked bool
}

type ckReq struct {
	tag   string
	ops   []*ckOp
	acked bool
}

// ckRound is what one child run printed.
type ckRound struct {
	ready           bool
	reqs            []*ckReq
	byID            map[string][]*ckOp // in start order: each id's writes are sequential
	compacts        int
	compactsStarted int
	fails           []string
	exit            string
	stderr          string
	killAfter       time.Duration
	early           bool
}

func (r *ckRound) parse(t *testing.T, line string) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return
	}
	switch f[0] {
	case "ready":
		r.ready = true
	case "compacting":
		r.compactsStarted++
	case "compacted":
		r.compacts++
	case "fail":
		r.fails = append(r.fails, line)
	case "start":
		if len(f) < 5 || (len(f)-2)%3 != 0 {
			t.Fatalf("child: malformed line %q", line)
		}
		req := &ckReq{tag: f[1]}
		for i := 2; i < len(f); i += 3 {
			op := &ckOp{req: req, kind: f[i], id: f[i+1], w: f[i+2]}
			req.ops = append(req.ops, op)
			r.byID[op.id] = append(r.byID[op.id], op)
		}
		r.reqs = append(r.reqs, req)
	case "ack":
		var req *ckReq
		for i := len(r.reqs) - 1; i >= 0; i-- {
			if r.reqs[i].tag == f[1] {
				req = r.reqs[i]
				break
			}
		}
		if req == nil || len(f) != 2+2*len(req.ops) {
			t.Fatalf("child: ack %q matches no start line", line)
		}
		req.acked = true
		for i, op := range req.ops {
			op.acked = true
			op.etag = f[2+2*i]
			op.ts, _ = strconv.ParseInt(f[3+2*i], 10, 64)
		}
	}
}

// ckRunChildRound runs the child writer on dir with the wall clock at
// clock, kills it with SIGKILL, and returns what it printed.
func ckRunChildRound(t *testing.T, dir string, round int, clock int64, seed uint64, rng *rand.Rand) *ckRound {
	t.Helper()
	res := &ckRound{byID: make(map[string][]*ckOp)}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v=false")
	cmd.Env = append(os.Environ(),
		ckEnvMode+"=writer",
		ckEnvDir+"="+dir,
		ckEnvClock+"="+strconv.FormatInt(clock, 10),
		ckEnvRound+"="+strconv.Itoa(round),
		ckEnvSeed+"="+strconv.FormatUint(seed, 10),
		ckEnvWorkers+"=8",
		ckEnvIDs+"=24",
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	ready := make(chan struct{})
	eof := make(chan struct{})
	go func() {
		defer close(eof)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
			if sc.Text() == "ready" {
				once.Do(func() { close(ready) })
			}
		}
	}()
	// Mostly kill 10-300 ms into the writes; sometimes during Open (recovery).
	if rng.IntN(6) == 0 {
		res.early = true
		res.killAfter = time.Duration(rng.IntN(40)) * time.Millisecond
		time.Sleep(res.killAfter)
	} else {
		select {
		case <-ready:
		case <-eof:
		case <-time.After(30 * time.Second):
			t.Errorf("round %d: child not ready after 30s", round)
		}
		res.killAfter = time.Duration(10+rng.IntN(291)) * time.Millisecond
		time.Sleep(res.killAfter)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-eof
	werr := cmd.Wait()
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			res.exit = "killed"
		} else {
			res.exit = ee.String()
		}
	case werr != nil:
		res.exit = werr.Error()
	default:
		res.exit = "exit 0"
	}
	res.stderr = stderr.String()
	for _, l := range lines {
		res.parse(t, l)
	}
	return res
}

// ckAllowed computes, for every id, the states it may be in after round r:
// the result of its last acknowledged write, or, if a write was in flight at
// the kill, that write's result too.
func ckAllowed(t *testing.T, model map[string]ckState, universe map[string]bool, r *ckRound, clock int64) map[string][]ckState {
	allowed := ckExact(model, universe)
	for id, ops := range r.byID {
		cur := model[id]
		for i, op := range ops {
			next := ckState{}
			if op.kind != "delete" {
				next = ckState{present: true, w: op.w, ts: clock, etag: op.etag}
			}
			if op.acked {
				if op.ts != 0 && op.ts != clock {
					t.Errorf("%s: acknowledged with _ts %d, clock is %d", op.req.tag, op.ts, clock)
				}
				cur = next
				continue
			}
			if i != len(ops)-1 {
				t.Errorf("item %q: write %s was never acknowledged, yet the child went on to write it again", id, op.req.tag)
			}
			allowed[id] = []ckState{cur, next}
			break
		}
		if ops[len(ops)-1].acked {
			allowed[id] = []ckState{cur}
		}
	}
	return allowed
}

func TestCrashKill(t *testing.T) {
	rounds, budget := 40, 20*time.Second
	if testing.Short() {
		rounds, budget = 6, 5*time.Second
	}
	start := time.Now()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("EBB_CRASH_TEST_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (set EBB_CRASH_TEST_SEED to replay the parent's choices)", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	model := make(map[string]ckState) // exact visible state after the last verification
	universe := make(map[string]bool) // every id ever written
	var acks, inflight, batchesChecked, earlyKills, compacts, compactsStarted, sealRounds int
	var journalFrom uint64

	open := func(clock int64) *DB {
		t.Helper()
		db, err := Open(dir, &Options{Clock: func() time.Time { return time.Unix(clock, 0) }})
		if err != nil {
			t.Fatalf("reopen after the crash: %v", err)
		}
		return db
	}
	// verify checks every container against allowed (ids of all containers).
	verify := func(db *DB, now int64, allowed map[string][]ckState) (map[string][]int, map[string]ckState) {
		t.Helper()
		matched, found := map[string][]int{}, map[string]ckState{}
		for _, name := range ckContainers {
			sub := map[string][]ckState{}
			for id, st := range allowed {
				if ckContainerOf(id) == name {
					sub[id] = st
				}
			}
			c, err := db.Container(name)
			if errors.Is(err, ErrNotFound) && len(sub) == 0 {
				continue // the first child was killed before creating it
			}
			if err != nil {
				t.Fatalf("reopen after the crash: container %s: %v", name, err)
			}
			m, f := ckVerify(t, c, now, sub)
			for id, v := range m {
				matched[id] = v
			}
			for id, v := range f {
				found[id] = v
			}
		}
		return matched, found
	}

	r := 0
	for ; r < rounds && (r < 2 || time.Since(start) < budget); r++ {
		clock := int64(t0 + r*ckRoundSecs)
		res := ckRunChildRound(t, dir, r, clock, seed+uint64(r)*7919, rng)
		for _, f := range res.fails {
			t.Errorf("round %d: child: %s", r, f)
		}
		if res.exit != "killed" {
			t.Errorf("round %d: child ended with %s, want killed by SIGKILL", r, res.exit)
		}
		for _, bad := range []string{"DATA RACE", "panic:", "fatal error:"} {
			if strings.Contains(res.stderr, bad) {
				t.Errorf("round %d: child stderr:\n%s", r, res.stderr)
				break
			}
		}
		if t.Failed() {
			t.FailNow()
		}
		if res.early {
			earlyKills++
		}
		compacts += res.compacts
		compactsStarted += res.compactsStarted
		for id := range res.byID {
			universe[id] = true
		}
		allowed := ckAllowed(t, model, universe, res, clock)

		now := clock + ckRoundSecs // ttl-5 items of this round have expired by now
		db := open(now)
		matched, found := verify(db, now, allowed)

		// An unacknowledged batch is whole or absent.
		for _, req := range res.reqs {
			if req.acked {
				acks += len(req.ops)
				continue
			}
			inflight++
			if len(req.ops) < 2 {
				continue
			}
			verdict := map[bool][]string{}
			for _, op := range req.ops {
				m := matched[op.id]
				applied, notApplied := ckContainsInt(m, 1), ckContainsInt(m, 0)
				if applied != notApplied { // otherwise both versions look the same now
					verdict[applied] = append(verdict[applied], op.id)
				}
			}
			if len(verdict[true]) > 0 && len(verdict[false]) > 0 {
				t.Errorf("round %d: batch %s in flight at the kill is torn: applied to %v, not to %v", r, req.tag, verdict[true], verdict[false])
			}
			batchesChecked++
		}
		// A version written in flight must carry a newer etag than the one it replaced.
		for id, ops := range res.byID {
			last := ops[len(ops)-1]
			if last.acked || !found[id].present || found[id].w != last.w {
				continue
			}
			var prev string
			for _, op := range ops[:len(ops)-1] {
				prev = op.etag
			}
			if prev == "" {
				prev = model[id].etag
			}
			if prev != "" && prev != "-" && ckSeqOf(found[id].etag) <= ckSeqOf(prev) {
				t.Errorf("item %q: in-flight write %s has etag %s, not newer than %s", id, last.w, found[id].etag, prev)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatalf("round %d: close: %v", r, err)
		}
		if m, err := readManifest(dir); err == nil && m.JournalFrom > journalFrom {
			journalFrom = m.JournalFrom
			sealRounds++
		}
		if t.Failed() {
			t.Fatalf("round %d (clock %d, killed %v after %s): state check failed; dir %s", r, clock, res.killAfter, map[bool]string{true: "start", false: "ready"}[res.early], dir)
		}
		model = found
	}

	// Finally: compaction after all those crashes changes nothing visible,
	// and neither does a clean restart.
	now := int64(t0 + r*ckRoundSecs)
	db := open(now)
	verify(db, now, ckExact(model, universe))
	for _, name := range ckContainers {
		c, err := db.Container(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Compact(context.Background()); err != nil {
			t.Fatalf("final Compact of %s: %v", name, err)
		}
		verify(db, now, ckExact(model, universe))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open(now)
	verify(db, now, ckExact(model, universe))
	db.Close()

	t.Logf("%d rounds in %s: %d acknowledged writes, %d in flight at a kill, %d unacknowledged batches checked, %d kills during Open, %d rounds sealed, %d compactions started, %d finished; %d items live at the end",
		r, time.Since(start).Round(time.Millisecond), acks, inflight, batchesChecked, earlyKills, sealRounds, compactsStarted, compacts, len(model))
	if acks == 0 {
		t.Error("no write was acknowledged in any round: the test exercised nothing")
	}
}

func ckContainsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// ---------------------------------------------------------------------------
// TestCrashPowerLoss.

// ckPLWrite is one acknowledged write of TestCrashPowerLoss: the journal
// entry seq, and the item's state after it.
type ckPLWrite struct {
	seq uint64
	id  string
	st  ckState
}

// ckPLEntry is one entry of a journal file, with where it ends.
type ckPLEntry struct {
	off, end int64
	seq      uint64
}

func ckPLEntries(t *testing.T, path string) ([]ckPLEntry, []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var es []ckPLEntry
	for e, err := range journal.ReadFile(path) {
		if err != nil {
			t.Fatalf("journal file %s before damage: %v", path, err)
		}
		if n := len(es); n > 0 {
			es[n-1].end = e.Offset
		}
		es = append(es, ckPLEntry{off: e.Offset, seq: e.Seq})
	}
	if n := len(es); n > 0 {
		es[n-1].end = int64(len(data))
	}
	return es, data
}

type ckPLDamage struct {
	kind     string
	file     string
	damaged  []byte // the file's bytes after the damage
	lostFrom uint64 // first seq lost; 0 if none
	repair   bool   // Open must cut a torn tail
	size     int64  // the file's size after Open
}

// ckPLInflict damages the last journal file of dir the way a power cut can.
func ckPLInflict(t *testing.T, dir string, kind string, rng *rand.Rand) ckPLDamage {
	t.Helper()
	m, err := readManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := journal.Files(filepath.Join(dir, journalDir))
	if err != nil || len(files) == 0 {
		t.Fatalf("journal files: %v %v", files, err)
	}
	path := files[len(files)-1]
	es, data := ckPLEntries(t, path)
	var unsealed []ckPLEntry // only entries not sealed into segments can be unsynced
	for _, e := range es {
		if e.seq >= m.JournalFrom {
			unsealed = append(unsealed, e)
		}
	}
	if len(unsealed) == 0 && kind != "append-zeros" && kind != "append-garbage" {
		kind = "append-zeros"
	}
	d := ckPLDamage{kind: kind, file: path, size: int64(len(data))}
	switch kind {
	case "cut-last-entry": // the last write's bytes only partly reached the disk
		e := unsealed[len(unsealed)-1]
		cut := e.off + 1 + rng.Int64N(e.end-e.off-1)
		d.damaged, d.lostFrom, d.repair, d.size = data[:cut], e.seq, true, e.off
	case "cut-anywhere": // several unsynced writes lost, the cut at any byte
		e := unsealed[rng.IntN(len(unsealed))]
		cut := e.off + rng.Int64N(e.end-e.off)
		d.damaged, d.lostFrom, d.repair, d.size = data[:cut], e.seq, cut != e.off, e.off
	case "zero-fill": // the file's size reached the disk, its last pages did not
		e := unsealed[rng.IntN(len(unsealed))]
		p := e.off + rng.Int64N(e.end-e.off)
		d.damaged = bytes.Clone(data)
		clear(d.damaged[p:])
		d.lostFrom, d.repair, d.size = e.seq, true, e.off
	case "append-zeros":
		d.damaged = append(bytes.Clone(data), make([]byte, 1+rng.IntN(8192))...)
		d.repair = true
	case "append-garbage":
		g := make([]byte, 1+rng.IntN(8192))
		for i := range g {
			g[i] = byte(rng.Uint32())
		}
		d.damaged = append(bytes.Clone(data), g...)
		d.repair = true
	default:
		t.Fatalf("unknown damage %q", kind)
	}
	if err := os.WriteFile(path, d.damaged, 0o640); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCrashPowerLoss(t *testing.T) {
	ctx := context.Background()
	iterations := 40
	if testing.Short() {
		iterations = 12
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	dir := t.TempDir()
	clk := newFakeClock(t0)
	small := func(o *Options) { o.JournalSegmentSize = 8 << 10; o.BlockSize = 2 << 10 }
	db := openTest(t, dir, clk, small)
	c := mustCreateContainer(t, db, ContainerProperties{ID: ckContainer, DefaultTTL: TTL(ckDefaultTTL)})
	universe := make(map[string]bool)
	for i := range 48 {
		universe[fmt.Sprintf("p%02d", i)] = true
	}
	ids := make([]string, 0, len(universe))
	for id := range universe {
		ids = append(ids, id)
	}
	sort.Strings(ids)

	var hist []ckPLWrite
	stateAt := func(upTo uint64) map[string]ckState { // the model after writes with seq < upTo
		m := make(map[string]ckState)
		for _, w := range hist {
			if w.seq >= upTo {
				break
			}
			if w.st.present {
				m[w.id] = w.st
			} else {
				delete(m, w.id)
			}
		}
		return m
	}
	kinds := []string{"cut-last-entry", "append-zeros", "cut-anywhere", "append-garbage", "zero-fill"}
	counts := map[string]int{}
	lostTotal := 0
	for it := 0; it < iterations; it++ {
		// A clean run of acknowledged writes, sometimes with a compaction
		// (which seals everything) in the middle.
		now := clk.Unix()
		model := stateAt(1 << 63)
		next := db.jnl.NextSeq()
		if len(hist) > 0 && next != hist[len(hist)-1].seq+1 {
			t.Fatalf("iteration %d: journal's next seq %d, want %d", it, next, hist[len(hist)-1].seq+1)
		}
		n := 10 + rng.IntN(60)
		compactAt := -1
		if rng.IntN(3) == 0 {
			compactAt = rng.IntN(n - 1)
		}
		for k := range n {
			if k == compactAt {
				if err := c.Compact(ctx); err != nil {
					t.Fatalf("Compact: %v", err)
				}
			}
			id := ids[rng.IntN(len(ids))]
			w := fmt.Sprintf("p%d.%d", it, k)
			st, live := model[id]
			live = live && st.visible(now)
			var item Item
			var err error
			del := false
			switch x := rng.IntN(10); {
			case !live && x < 5:
				item, err = c.Create(ctx, ckDoc(id, w))
			case !live:
				item, err = c.Upsert(ctx, ckDoc(id, w))
			case x < 5:
				item, err = c.Upsert(ctx, ckDoc(id, w))
			case x < 8:
				item, err = c.Replace(ctx, ckDoc(id, w), IfMatch(st.etag))
			default:
				err, del = c.Delete(ctx, id), true
			}
			if err != nil {
				t.Fatalf("iteration %d write %d on %s: %v", it, k, id, err)
			}
			wr := ckPLWrite{seq: next, id: id}
			if !del {
				wr.st = ckState{present: true, w: w, ts: now, etag: etagOf(next)}
				if err := ckCheckItem(item, id, wr.st); err != nil {
					t.Fatalf("write %s: %v", w, err)
				}
				model[id] = wr.st
			} else {
				delete(model, id)
			}
			hist = append(hist, wr)
			next++
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}

		// The power cut.
		kind := kinds[it%len(kinds)]
		brokenBefore := ckListDir(t, filepath.Join(dir, brokenDir))
		d := ckPLInflict(t, dir, kind, rng)
		counts[d.kind]++

		clk.Advance(1)
		var err error
		db, err = Open(dir, &Options{Clock: clk.Now, JournalSegmentSize: 8 << 10, BlockSize: 2 << 10})
		if err != nil {
			t.Fatalf("iteration %d: Open after %s of %s: %v", it, d.kind, d.file, err)
		}
		c, err = db.Container(ckContainer)
		if err != nil {
			t.Fatal(err)
		}
		rep := db.jnl.Repair()
		brokenAfter := ckListDir(t, filepath.Join(dir, brokenDir))
		switch {
		case d.repair && rep == nil:
			t.Errorf("iteration %d: %s: Open reported no repair", it, d.kind)
		case !d.repair && rep != nil:
			t.Errorf("iteration %d: %s at an entry boundary: Open repaired %+v", it, d.kind, rep)
		case d.repair:
			if len(brokenAfter) != len(brokenBefore)+1 {
				t.Errorf("iteration %d: %s: broken/ holds %v, was %v: want one new copy", it, d.kind, brokenAfter, brokenBefore)
			} else if b, err := os.ReadFile(rep.Copy); err != nil || !bytes.Equal(b, d.damaged) {
				t.Errorf("iteration %d: broken copy %s (err %v) is not the damaged file", it, rep.Copy, err)
			} else if filepath.Dir(rep.Copy) != filepath.Join(dir, brokenDir) {
				t.Errorf("broken copy at %s, want under %s", rep.Copy, filepath.Join(dir, brokenDir))
			}
			if rep.File != d.file || rep.Offset != d.size {
				t.Errorf("iteration %d: %s: repair %+v, want file %s cut at %d", it, d.kind, rep, d.file, d.size)
			}
		}
		if !d.repair && len(brokenAfter) != len(brokenBefore) {
			t.Errorf("iteration %d: broken/ changed without a repair: %v", it, brokenAfter)
		}
		if fi, err := os.Stat(d.file); err != nil || fi.Size() != d.size {
			t.Errorf("iteration %d: %s: journal file after Open: %v, size want %d", it, d.kind, fi, d.size)
		}
		if d.lostFrom != 0 {
			i := sort.Search(len(hist), func(i int) bool { return hist[i].seq >= d.lostFrom })
			lostTotal += len(hist) - i
			hist = hist[:i]
		}
		want := stateAt(1 << 63)
		ckVerify(t, c, clk.Unix(), ckExact(want, universe))
		if t.Failed() {
			t.Fatalf("iteration %d: after %s (lost from seq %d): state differs; dir %s", it, d.kind, d.lostFrom, dir)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, dir, clk, small)
	defer db.Close()
	if r := db.jnl.Repair(); r != nil {
		t.Errorf("clean reopen repaired %+v", r)
	}
	c, _ = db.Container(ckContainer)
	ckVerify(t, c, clk.Unix(), ckExact(stateAt(1<<63), universe))
	t.Logf("%d power cuts %v; %d unsynced writes lost as they should be, %d writes kept", iterations, counts, lostTotal, len(hist))
}
