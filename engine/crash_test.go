package engine_test

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

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/internal/testdoc"
	"github.com/ebbdb/ebb/engine/journal"
	"github.com/ebbdb/ebb/policy"
)

// ---------------------------------------------------------------------------
// The write model shared by the crash and damage tests.

const (
	crashContainer  = "c"
	crashDefaultTTL = 3600 // the container's DefaultTTL
)

// docHash is the hash a write's tag derives from.
func docHash(s string) uint64 { return testdoc.Hash(s) }

// docTTL is the item ttl that write w puts in its document: 0 (absent), -1,
// a large one, or 5 seconds.
func docTTL(w string) int32 {
	switch docHash(w) % 8 {
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

// crashDoc is the document that write w stores in item id.
func crashDoc(id, w string) []byte { return testdoc.Doc(id, w, docTTL(w)) }

// crashDocs caches the decoded documents of crashDoc (read-only once stored).
var crashDocs sync.Map

// crashDocMap is crashDoc(id, w) decoded.
func crashDocMap(id, w string) map[string]any {
	key := id + "\x00" + w
	if m, ok := crashDocs.Load(key); ok {
		return m.(map[string]any)
	}
	var m map[string]any
	if err := json.Unmarshal(crashDoc(id, w), &m); err != nil {
		panic(err)
	}
	crashDocs.Store(key, m)
	return m
}

// itemState is what an item is: the crash loop's model (testdoc.State).
type itemState = testdoc.State

// crashHistory is the DefaultTTL history of the crash and damage tests'
// containers: crashDefaultTTL, always.
var crashHistory = policy.History{}.With(0, engine.TTL(crashDefaultTTL))

// expireAt is the first instant at which s is invisible.
func expireAt(s itemState) int64 { return s.ExpiresAt(crashHistory, docTTL(s.W)) }

// visibleAt reports whether s is visible at now.
func visibleAt(s itemState, now int64) bool { return s.Visible(crashHistory, docTTL(s.W), now) }

// checkItem reports how it differs from version want of item id, or nil.
func checkItem(it engine.Item, id string, want itemState) error {
	if it.ID != id {
		return fmt.Errorf("Item.ID %q, want %q", it.ID, id)
	}
	var got map[string]any
	if err := json.Unmarshal(it.Body, &got); err != nil {
		return fmt.Errorf("body %q is not JSON: %v", it.Body, err)
	}
	if w, _ := got["w"].(string); w != want.W {
		return fmt.Errorf("body is write %q, want %q (body %.200s)", w, want.W, it.Body)
	}
	if got["_ts"] != float64(it.TS) || got["_etag"] != it.ETag {
		return fmt.Errorf("body _ts %v _etag %v, Item has TS %d ETag %s", got["_ts"], got["_etag"], it.TS, it.ETag)
	}
	if it.TS != want.TS {
		return fmt.Errorf("_ts %d, want %d", it.TS, want.TS)
	}
	if want.ETag != "" && it.ETag != want.ETag {
		return fmt.Errorf("_etag %s, want %s", it.ETag, want.ETag)
	}
	delete(got, "_ts")
	delete(got, "_etag")
	if !reflect.DeepEqual(got, crashDocMap(id, want.W)) {
		return fmt.Errorf("body %.300s does not match the document of write %s", it.Body, want.W)
	}
	return nil
}

// verifyContainer checks container c at now against allowed: every id's visible
// state must match one of allowed[id] (ids missing from allowed must be
// absent), Read and Items must agree, Items must be in id order, and
// Stats.Items must count them. It returns, per id, the indexes of the
// allowed states that matched, and the state found (absent or the version
// read, with its etag).
func verifyContainer(t *testing.T, c *engine.Container, now int64, allowed map[string][]itemState) (matched map[string][]int, found map[string]itemState) {
	t.Helper()
	ctx := context.Background()
	matched = make(map[string][]int, len(allowed))
	found = make(map[string]itemState)
	read := make(map[string]engine.Item)
	for id, states := range allowed {
		it, err := c.Read(ctx, id)
		switch {
		case errors.Is(err, engine.ErrNotFound):
			for i, s := range states {
				if !visibleAt(s, now) {
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
				if !visibleAt(s, now) {
					why = append(why, s.String()+": should be invisible")
					continue
				}
				if err := checkItem(it, id, s); err != nil {
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
			found[id] = itemState{Present: true, W: w, TS: it.TS, ETag: it.ETag}
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

// exactStates turns a model (present items) and a universe of ids into the
// single allowed state of each id.
func exactStates(model map[string]itemState, universe map[string]bool) map[string][]itemState {
	allowed := make(map[string][]itemState, len(universe))
	for id := range universe {
		allowed[id] = []itemState{model[id]}
	}
	for id, s := range model {
		allowed[id] = []itemState{s}
	}
	return allowed
}

// listDir returns the names in dir, or nil if it does not exist.
func listDir(t *testing.T, dir string) []string {
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
	envChildMode = "EBB_CRASH_CHILD" // "trylock", "hold" or "feed"
	envChildDir  = "EBB_CRASH_DIR"
)

// TestCrashChild is not a test: it is the child process of the lock tests
// (TestLockChildProcess), run only when EBB_CRASH_CHILD is set.
func TestCrashChild(t *testing.T) {
	mode := os.Getenv(envChildMode)
	if mode == "" {
		t.Skip("helper process of TestLockChildProcess; runs only with " + envChildMode + " set")
	}
	os.Exit(runChild(mode))
}

// emit writes one line to stdout with a single write, so that lines from
// concurrent goroutines never interleave on the pipe.
func emit(format string, args ...any) {
	os.Stdout.Write([]byte(fmt.Sprintf(format, args...) + "\n"))
}

func runChild(mode string) int {
	// Never outlive the parent (a killed `go test` must not leave children).
	ppid := os.Getppid()
	go func() {
		for range time.Tick(50 * time.Millisecond) {
			if os.Getppid() != ppid {
				os.Exit(5)
			}
		}
	}()
	dir := os.Getenv(envChildDir)
	switch mode {
	case "trylock":
		db, err := engine.Open(dir, nil)
		switch {
		case errors.Is(err, engine.ErrLocked):
			emit("locked")
		case err != nil:
			emit("error %v", err)
		default:
			emit("opened")
			if err := db.Close(); err != nil {
				emit("error close: %v", err)
			}
		}
		return 0
	case "hold":
		db, err := engine.Open(dir, nil)
		if err != nil {
			emit("error %v", err)
			return 0
		}
		emit("holding")
		// Hold until stdin closes (then close cleanly) or a SIGKILL.
		var b [1]byte
		os.Stdin.Read(b[:])
		if err := db.Close(); err != nil {
			emit("error close: %v", err)
		}
		emit("closed")
		return 0
	case "feed":
		return feedChild(dir) // TestFeedExactlyOnceAcrossKills
	}
	emit("error unknown mode %q", mode)
	return 2
}

// ---------------------------------------------------------------------------
// TestCrashPowerLoss.

// ackedWrite is one acknowledged write of TestCrashPowerLoss: the journal
// entry seq, and the item's state after it.
type ackedWrite struct {
	seq uint64
	id  string
	st  itemState
}

// journalEntry is one entry of a journal file, with where it ends.
type journalEntry struct {
	off, end int64
	seq      uint64
}

func journalEntries(t *testing.T, path string) ([]journalEntry, []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var es []journalEntry
	for e, err := range journal.ReadFile(path) {
		if err != nil {
			t.Fatalf("journal file %s before damage: %v", path, err)
		}
		if n := len(es); n > 0 {
			es[n-1].end = e.Offset
		}
		es = append(es, journalEntry{off: e.Offset, seq: e.Seq})
	}
	if n := len(es); n > 0 {
		es[n-1].end = int64(len(data))
	}
	return es, data
}

type powerCut struct {
	kind     string
	file     string
	damaged  []byte // the file's bytes after the damage
	lostFrom uint64 // first seq lost; 0 if none
	repair   bool   // Open must cut a torn tail
	size     int64  // the file's size after Open
}

// inflictPowerCut damages the last journal file of dir the way a power cut can.
func inflictPowerCut(t *testing.T, dir string, kind string, rng *rand.Rand) powerCut {
	t.Helper()
	m, err := engine.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := journal.Files(filepath.Join(dir, engine.JournalDir))
	if err != nil || len(files) == 0 {
		t.Fatalf("journal files: %v %v", files, err)
	}
	path := files[len(files)-1]
	es, data := journalEntries(t, path)
	var unsealed []journalEntry // only entries not sealed into segments can be unsynced
	for _, e := range es {
		if e.seq >= m.JournalFrom {
			unsealed = append(unsealed, e)
		}
	}
	if len(unsealed) == 0 && kind != "append-zeros" && kind != "append-garbage" {
		kind = "append-zeros"
	}
	d := powerCut{kind: kind, file: path, size: int64(len(data))}
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
		// Zeros from the start of an entry after another are the end of
		// the entries: cut without a repair, as the zeros the tail is
		// written ahead with. A file of zeros only is a torn write.
		d.lostFrom, d.repair, d.size = e.seq, p != e.off || e.off == 0, e.off
	case "append-zeros": // after an entry, the zeros the tail is written ahead with: cut, no repair
		d.damaged = append(bytes.Clone(data), make([]byte, 1+rng.IntN(8192))...)
		d.repair = len(data) == 0
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
	small := func(o *engine.Options) { o.JournalSegmentSize = 8 << 10; o.BlockSize = 2 << 10 }
	db := openTest(t, dir, clk, small)
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: crashContainer, DefaultTTL: engine.TTL(crashDefaultTTL)})
	universe := make(map[string]bool)
	for i := range 48 {
		universe[fmt.Sprintf("p%02d", i)] = true
	}
	ids := make([]string, 0, len(universe))
	for id := range universe {
		ids = append(ids, id)
	}
	sort.Strings(ids)

	var hist []ackedWrite
	stateAt := func(upTo uint64) map[string]itemState { // the model after writes with seq < upTo
		m := make(map[string]itemState)
		for _, w := range hist {
			if w.seq >= upTo {
				break
			}
			if w.st.Present {
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
		next := engine.JournalNextSeq(db)
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
			live = live && visibleAt(st, now)
			var item engine.Item
			var err error
			del := false
			switch x := rng.IntN(10); {
			case !live && x < 5:
				item, err = c.Create(ctx, crashDoc(id, w))
			case !live:
				item, err = c.Upsert(ctx, crashDoc(id, w))
			case x < 5:
				item, err = c.Upsert(ctx, crashDoc(id, w))
			case x < 8:
				item, err = c.Replace(ctx, crashDoc(id, w), engine.IfMatch(st.ETag))
			default:
				err, del = c.Delete(ctx, id), true
			}
			if err != nil {
				t.Fatalf("iteration %d write %d on %s: %v", it, k, id, err)
			}
			wr := ackedWrite{seq: next, id: id}
			if !del {
				wr.st = itemState{Present: true, W: w, TS: now, ETag: engine.ETagOf(next)}
				if err := checkItem(item, id, wr.st); err != nil {
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
		brokenBefore := listDir(t, filepath.Join(dir, engine.BrokenDir))
		d := inflictPowerCut(t, dir, kind, rng)
		counts[d.kind]++

		clk.Advance(1)
		var err error
		db, err = engine.Open(dir, &engine.Options{Clock: clk.Now, JournalSegmentSize: 8 << 10, BlockSize: 2 << 10})
		if err != nil {
			t.Fatalf("iteration %d: Open after %s of %s: %v", it, d.kind, d.file, err)
		}
		c, err = db.Container(crashContainer)
		if err != nil {
			t.Fatal(err)
		}
		rep := engine.JournalRepair(db)
		brokenAfter := listDir(t, filepath.Join(dir, engine.BrokenDir))
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
			} else if filepath.Dir(rep.Copy) != filepath.Join(dir, engine.BrokenDir) {
				t.Errorf("broken copy at %s, want under %s", rep.Copy, filepath.Join(dir, engine.BrokenDir))
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
		verifyContainer(t, c, clk.Unix(), exactStates(want, universe))
		if t.Failed() {
			t.Fatalf("iteration %d: after %s (lost from seq %d): state differs; dir %s", it, d.kind, d.lostFrom, dir)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, dir, clk, small)
	defer db.Close()
	if r := engine.JournalRepair(db); r != nil {
		t.Errorf("clean reopen repaired %+v", r)
	}
	c, _ = db.Container(crashContainer)
	verifyContainer(t, c, clk.Unix(), exactStates(stateAt(1<<63), universe))
	t.Logf("%d power cuts %v; %d unsynced writes lost as they should be, %d writes kept", iterations, counts, lostTotal, len(hist))
}
