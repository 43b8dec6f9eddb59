package engine

// Crash-safety tests: an acknowledged write
// survives a crash with the default durability, an unacknowledged one is
// whole or absent, and a torn journal tail is repaired on open.
//
//   - SIGKILL at random moments, under a mixed workload and a wall clock
//     that jumps, is the crash loop's job: package engine/crashloop
//     (`go test ./engine/crashloop`, `ebb crashloop`).
//   - TestCrashPowerLoss simulates what SIGKILL cannot: bytes that never
//     reached the disk. After a clean run it cuts or pads the journal's last
//     file and checks that Open repairs it, keeps a copy under broken/, and
//     loses exactly the entries after the cut.
//
// Helpers shared with damage_test.go are prefixed ck.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/internal/testdoc"
	"github.com/ebbdb/ebb/engine/journal"
)

// ---------------------------------------------------------------------------
// The write model shared by the crash and damage tests.

const (
	ckContainer  = "c"
	ckDefaultTTL = 3600 // the container's DefaultTTL
)

// ckHash is the hash a write's tag derives from.
func ckHash(s string) uint64 { return testdoc.Hash(s) }

// ckTTL is the item ttl that write w puts in its document: 0 (absent), -1,
// a large one, or 5 seconds.
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

// ckDoc is the document that write w stores in item id.
func ckDoc(id, w string) []byte { return testdoc.Doc(id, w, ckTTL(w)) }

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
	ckEnvMode = "EBB_CRASH_CHILD" // "trylock" or "hold"
	ckEnvDir  = "EBB_CRASH_DIR"
)

// TestCrashChild is not a test: it is the child process of the lock tests
// (TestLockChildProcess), run only when EBB_CRASH_CHILD is set.
func TestCrashChild(t *testing.T) {
	mode := os.Getenv(ckEnvMode)
	if mode == "" {
		t.Skip("helper process of TestLockChildProcess; runs only with " + ckEnvMode + " set")
	}
	os.Exit(ckRunChild(mode))
}

// ckEmit writes one line to stdout with a single write, so that lines from
// concurrent goroutines never interleave on the pipe.
func ckEmit(format string, args ...any) {
	os.Stdout.Write([]byte(fmt.Sprintf(format, args...) + "\n"))
}

func ckRunChild(mode string) int {
	// Never outlive the parent (a killed `go test` must not leave children).
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
	files, err := journal.Files(filepath.Join(dir, dbfile.JournalDir))
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
		brokenBefore := ckListDir(t, filepath.Join(dir, dbfile.BrokenDir))
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
		brokenAfter := ckListDir(t, filepath.Join(dir, dbfile.BrokenDir))
		switch {
		case d.repair && rep == nil:
			t.Errorf("iteration %d: %s: Open reported no repair", it, d.kind)
		case !d.repair && rep != nil:
			t.Errorf("iteration %d: %s at an entry boundary: Open repaired %+v", it, d.kind, rep)
		case d.repair:
			if len(brokenAfter) != len(brokenBefore)+1 {
				t.Errorf("iteration %d: %s: broken/ holds %v, was %v: want one new copy", it, d.kind, brokenAfter, brokenBefore)
			} else if b, err := os.ReadFile(rep.Copy); err != nil || !bytes.Equal(b, d.damaged[d.size:]) {
				t.Errorf("iteration %d: broken copy %s (err %v) is not the cut bytes of the damaged file", it, rep.Copy, err)
			} else if filepath.Dir(rep.Copy) != filepath.Join(dir, dbfile.BrokenDir) {
				t.Errorf("broken copy at %s, want under %s", rep.Copy, filepath.Join(dir, dbfile.BrokenDir))
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
