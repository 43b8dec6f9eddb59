package engine_test

// The damage matrix (damage is repaired or reported, never returned as data): every kind of file ebb
// writes (the journal's last file, an earlier journal file, a segment file,
// the MANIFEST, the CLOCK file, the LOCK file) × every kind of damage
// (truncation at a random offset, a zeroed random range, flipped random
// bits, a zeroed tail) × several seeds. damage_test.go aims at chosen parts
// of each file; this matrix damages blindly and checks one rule for all:
// the outcome is exactly one of
//
//   - Open refuses with ErrCorrupt and changes nothing;
//   - Open repairs a torn tail of the journal's last file, and what is
//     visible is exactly what the writes before the cut left;
//   - Open succeeds and every item reads exactly as written, or fails to
//     read with ErrCorrupt (never another version, never not-found);
//
// never a panic, and Verify, run on the damaged directory before anything
// opens it, names the damaged file (with an offset or record for segment
// and journal files), or, for a torn tail that Open would repair, notes it.
// The CLOCK file is a hint (its damage is tolerated) and the LOCK file holds
// no data: damage to either must change nothing that is read.
//
// EBB_DAMAGE_KINDS_SEEDS sets the seeds per (file, damage) pair (default 3);
// EBB_DAMAGE_SEED replays one run.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/internal/testutil"
	"github.com/ebbdb/ebb/engine/journal"
	"github.com/ebbdb/ebb/engine/tool"
)

// kindsWrite is one acknowledged write of the fixture: its journal seq and the
// item's state after it.
type kindsWrite struct {
	seq     uint64
	cid, id string
	st      itemState
}

// kindsFixture is a closed database, its write history and its files.
type kindsFixture struct {
	dir      string // pristine: only ever copied
	history  []kindsWrite
	universe map[string]map[string]bool
}

// model returns, per container, the state of every item after the writes
// with a seq below next.
func (fx *kindsFixture) model(next uint64) map[string]map[string]itemState {
	m := map[string]map[string]itemState{"c": {}, "d": {}}
	for _, w := range fx.history {
		if w.seq >= next {
			continue
		}
		if w.st.Present {
			m[w.cid][w.id] = w.st
		} else {
			delete(m[w.cid], w.id)
		}
	}
	return m
}

// buildKindsFixture writes a database whose records sit in compacted segment files,
// sealed but uncompacted ones, and several journal files, recording the
// journal seq of every write.
func buildKindsFixture(t *testing.T) *kindsFixture {
	t.Helper()
	ctx := context.Background()
	fx := &kindsFixture{
		dir:      filepath.Join(t.TempDir(), "pristine"),
		universe: map[string]map[string]bool{"c": {}, "d": {}},
	}
	db, err := engine.Open(fx.dir, damageOptions(engine.CompressionZstd))
	if err != nil {
		t.Fatal(err)
	}
	cs := map[string]*engine.Container{}
	for _, id := range []string{"c", "d"} {
		cs[id] = mustCreateContainer(t, db, engine.ContainerProperties{ID: id, DefaultTTL: engine.TTL(crashDefaultTTL)})
	}
	live := map[string]map[string]bool{"c": {}, "d": {}}
	rng := rand.New(rand.NewPCG(5, 55))
	n := 0
	write := func(cid, id string, del bool) {
		c := cs[cid]
		fx.universe[cid][id] = true
		var st itemState
		if del {
			if err := c.Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
			delete(live[cid], id)
		} else {
			w := fmt.Sprintf("k%d.%s", n, cid)
			n++
			it, err := c.Upsert(ctx, crashDoc(id, w))
			if err != nil {
				t.Fatal(err)
			}
			st = itemState{Present: true, W: w, TS: damageNow, ETag: it.ETag}
			live[cid][id] = true
		}
		fx.history = append(fx.history, kindsWrite{seq: engine.JournalNextSeq(db) - 1, cid: cid, id: id, st: st})
	}
	phase := func(cid string, fresh, over, dels int, prefix string) {
		for i := range fresh {
			write(cid, fmt.Sprintf("%s%03d", prefix, i), false)
		}
		for range over + dels {
			ids := make([]string, 0, len(live[cid]))
			for id := range live[cid] {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			write(cid, ids[rng.IntN(len(ids))], over <= 0)
			over--
		}
	}
	phase("c", 100, 20, 10, "a")
	phase("d", 50, 10, 5, "a")
	for _, c := range cs {
		if err := c.Compact(ctx); err != nil {
			t.Fatal(err)
		}
	}
	phase("c", 30, 30, 10, "b")
	phase("d", 10, 10, 3, "b")
	if err := cs["d"].Compact(ctx); err != nil { // seals c's records too, uncompacted
		t.Fatal(err)
	}
	phase("d", 10, 10, 3, "j")
	phase("c", 25, 25, 8, "j")
	// End with several entries in the journal's last file, so that damage
	// to it has entries to hit.
	for i := 0; ; i++ {
		paths, err := journal.Files(filepath.Join(fx.dir, engine.JournalDir))
		if err != nil {
			t.Fatal(err)
		}
		if es, _ := journalEntries(t, paths[len(paths)-1]); len(es) >= 6 {
			break
		}
		write("c", fmt.Sprintf("zz%03d", i), false)
	}
	if err := engine.PersistClock(db); err != nil { // as the sealer does every second
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// The history must describe what the pristine database holds.
	db, err = engine.Open(fx.dir, damageOptions(engine.CompressionZstd))
	if err != nil {
		t.Fatal(err)
	}
	final := fx.model(1 << 62)
	for cid, c := range openContainers(t, db) {
		verifyContainer(t, c, damageNow, exactStates(final[cid], fx.universe[cid]))
	}
	db.Close()
	if engine.ClockFileHigh(fx.dir) != damageNow {
		t.Fatalf("fixture: the CLOCK file says %d, want %d", engine.ClockFileHigh(fx.dir), damageNow)
	}
	if rep, err := tool.Verify(fx.dir); err != nil || !rep.Clean() {
		t.Fatalf("Verify of the pristine database: %v %+v", err, rep)
	}
	if t.Failed() {
		t.FailNow()
	}
	var shape []string
	for _, rel := range journalFiles(t, fx.dir) {
		es, _ := journalEntries(t, filepath.Join(fx.dir, rel))
		shape = append(shape, fmt.Sprintf("%s: %d entries", filepath.Base(rel), len(es)))
	}
	t.Logf("fixture: %d writes; journal %v", len(fx.history), shape)
	return fx
}

// damageTarget is a kind of file to damage, and how to pick one in a directory.
type damageTarget struct {
	name string
	pick func(t *testing.T, dir string, rng *rand.Rand) string // relative path
}

var damageTargets = []damageTarget{
	{"journal last file", func(t *testing.T, dir string, rng *rand.Rand) string {
		fs := journalFiles(t, dir)
		return fs[len(fs)-1]
	}},
	{"journal earlier file", func(t *testing.T, dir string, rng *rand.Rand) string {
		fs := journalFiles(t, dir)
		return fs[rng.IntN(len(fs)-1)]
	}},
	{"segment file", func(t *testing.T, dir string, rng *rand.Rand) string {
		ents, err := os.ReadDir(filepath.Join(dir, engine.SegmentDir))
		if err != nil || len(ents) == 0 {
			t.Fatalf("segment files: %v %v", ents, err)
		}
		return filepath.Join(engine.SegmentDir, ents[rng.IntN(len(ents))].Name())
	}},
	{"MANIFEST", func(*testing.T, string, *rand.Rand) string { return engine.ManifestName }},
	{"CLOCK", func(*testing.T, string, *rand.Rand) string { return engine.ClockName }},
	{"LOCK", func(*testing.T, string, *rand.Rand) string { return "LOCK" }},
}

func journalFiles(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := journal.Files(filepath.Join(dir, engine.JournalDir))
	if err != nil || len(paths) < 2 {
		t.Fatalf("journal files: %v %v", paths, err)
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Join(engine.JournalDir, filepath.Base(p))
	}
	return out
}

// damageKind damages b (a file's bytes) and says how; an empty file (LOCK)
// gets garbage instead, as nothing in it can be cut or flipped.
type damageKind struct {
	name string
	// apply damages b and returns it, a description, and the range
	// [lo, hi) of the original bytes that changed or went away.
	apply func(b []byte, rng *rand.Rand) (out []byte, how string, lo, hi int)
}

var damageKinds = []damageKind{
	{"truncate", func(b []byte, rng *rand.Rand) ([]byte, string, int, int) {
		n := rng.IntN(len(b))
		return b[:n:n], fmt.Sprintf("cut from %d to %d bytes", len(b), n), n, len(b)
	}},
	{"zero range", func(b []byte, rng *rand.Rand) ([]byte, string, int, int) {
		off := rng.IntN(len(b))
		n := 1 + rng.IntN(min(len(b)-off, 256))
		clear(b[off : off+n])
		return b, fmt.Sprintf("bytes [%d,%d) of %d zeroed", off, off+n, len(b)), off, off + n
	}},
	{"flip bits", func(b []byte, rng *rand.Rand) ([]byte, string, int, int) {
		var where []string
		lo, hi := len(b), 0
		for range 1 + rng.IntN(3) {
			off, bit := rng.IntN(len(b)), rng.IntN(8)
			b[off] ^= 1 << bit
			lo, hi = min(lo, off), max(hi, off+1)
			where = append(where, fmt.Sprintf("byte %d bit %d", off, bit))
		}
		return b, fmt.Sprintf("%s of %d flipped", strings.Join(where, ", "), len(b)), lo, hi
	}},
	{"zero tail", func(b []byte, rng *rand.Rand) ([]byte, string, int, int) {
		off := rng.IntN(len(b))
		clear(b[off:])
		return b, fmt.Sprintf("bytes [%d,%d) zeroed", off, len(b)), off, len(b)
	}},
}

// outcome is what a damaged case came to.
type outcome string

const (
	outcomeNoop     outcome = "damage changed no byte"
	outcomeRefused  outcome = "ErrCorrupt at open"
	outcomeRepaired outcome = "torn tail repaired, exact prefix"
	outcomeReadErr  outcome = "open, then ErrCorrupt at read"
	outcomeExact    outcome = "exactly correct data"
	// outcomeBoundary: the journal's last file cut (or zeroed to its end)
	// exactly between two entries looks like a log whose last writes never
	// happened; no check can tell,
	// so the data must be an exact prefix.
	outcomeBoundary outcome = "cut at an entry boundary, exact prefix"
)

func TestDamageEveryFileKind(t *testing.T) {
	fx := buildKindsFixture(t)
	rng := damageRand(t)
	seeds := 3
	if testing.Short() {
		seeds = 1
	}
	if s := os.Getenv("EBB_DAMAGE_KINDS_SEEDS"); s != "" {
		seeds, _ = strconv.Atoi(s)
	}
	work := filepath.Join(t.TempDir(), "db")
	outcomes := map[string]map[outcome]int{}
	start := time.Now()
	cases := 0
	for _, tg := range damageTargets {
		outcomes[tg.name] = map[outcome]int{}
		for _, dm := range damageKinds {
			for range seeds {
				o := damageCase(t, fx, work, tg, dm, rng)
				outcomes[tg.name][o]++
				cases++
				if t.Failed() {
					t.FailNow()
				}
			}
		}
	}
	t.Logf("%d damaged copies in %s", cases, time.Since(start).Round(time.Millisecond))
	for _, tg := range damageTargets {
		t.Logf("  %-20s %v", tg.name, outcomes[tg.name])
	}
}

// damageCase damages one copy of the fixture and checks the outcome.
func damageCase(t *testing.T, fx *kindsFixture, work string, tg damageTarget, dm damageKind, rng *rand.Rand) outcome {
	t.Helper()
	dir := testutil.MustCopyDir(t, fx.dir, work)
	rel := tg.pick(t, dir, rng)
	path := filepath.Join(dir, rel)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var damaged []byte
	var how string
	var lo, hi int
	if len(orig) == 0 {
		damaged, how = []byte("not a lock, garbage\x00\xff"), "garbage written into the empty file"
	} else {
		damaged, how, lo, hi = dm.apply(append([]byte(nil), orig...), rng)
	}
	what := fmt.Sprintf("%s %s: %s", tg.name, rel, how)
	if string(damaged) == string(orig) {
		return outcomeNoop
	}
	if err := os.WriteFile(path, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	rep := verifyOutcome(t, dir, what)

	before := snapshotItems(t, dir)
	db, err := openDamaged(t, dir, engine.CompressionZstd)
	var out outcome
	switch {
	case err != nil:
		out = outcomeRefused
		if !errors.Is(err, engine.ErrCorrupt) {
			t.Errorf("%s: Open = %v, want ErrCorrupt or success", what, err)
		}
		if tg.name == "CLOCK" || tg.name == "LOCK" {
			t.Errorf("%s: Open refused (%v); this file's damage must be tolerated", what, err)
		}
		if d := diffSnapshots(before, snapshotItems(t, dir)); d != "" {
			t.Errorf("%s: the refused Open changed the directory: %s", what, d)
		}
	default:
		next := uint64(1 << 62)
		out = outcomeExact
		if r := engine.JournalRepair(db); r != nil {
			out = outcomeRepaired
			if tg.name != "journal last file" {
				t.Errorf("%s: Open repaired %+v, but the damage is not in the journal's last file", what, r)
			}
			next = engine.JournalNextSeq(db)
			checkCut(t, path, orig, lo, hi, next, what)
		} else if tg.name == "journal last file" && cutOrZeroed(orig, damaged) {
			out = outcomeBoundary
			next = engine.JournalNextSeq(db)
			checkCut(t, path, orig, lo, hi, next, what)
		}
		if checkData(t, db, fx, fx.model(next), what) && out == outcomeExact {
			out = outcomeReadErr
		}
		db.Close()
	}
	checkReport(t, rep, tg.name, rel, out, what)
	return out
}

// cutOrZeroed reports whether damaged is a prefix of orig, or one followed
// by zeros only: zeros after an entry are the end of the entries (they are
// what a crash leaves of those the journal's tail is written ahead with),
// so when the prefix ends between two entries Open cuts the zeros without
// a repair.
func cutOrZeroed(orig, damaged []byte) bool {
	n := 0
	for n < len(orig) && n < len(damaged) && orig[n] == damaged[n] {
		n++
	}
	for _, b := range damaged[n:] {
		if b != 0 {
			return false
		}
	}
	return n < len(orig)
}

// verifyOutcome runs Verify, failing the test on a panic or an error.
func verifyOutcome(t *testing.T, dir, what string) (rep *tool.VerifyReport) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: Verify panicked: %v\n%s", what, r, debug.Stack())
		}
	}()
	rep, err := tool.Verify(dir)
	if err != nil {
		t.Fatalf("%s: Verify: %v", what, err)
	}
	return rep
}

// checkReport checks that Verify named the damaged file.
func checkReport(t *testing.T, rep *tool.VerifyReport, target, rel string, out outcome, what string) {
	t.Helper()
	if target == "LOCK" {
		if !rep.Clean() {
			t.Errorf("%s: Verify reports %v; the LOCK file holds no data", what, rep.Problems)
		}
		return
	}
	var named []tool.Problem
	for _, p := range rep.Problems {
		if p.File == rel {
			named = append(named, p)
		}
	}
	if len(named) == 0 {
		if out == outcomeBoundary {
			return // nothing on disk says the cut entries ever existed
		}
		if out == outcomeRepaired {
			for _, n := range rep.Notes {
				if strings.HasPrefix(n, rel+": torn tail") {
					return
				}
			}
		}
		t.Errorf("%s (outcome: %s): Verify does not name %s; problems %v, notes %v", what, out, rel, rep.Problems, rep.Notes)
		return
	}
	if out == outcomeRepaired {
		t.Errorf("%s: Open repaired a torn tail, but Verify reports it as damage: %v", what, named)
	}
	if strings.HasPrefix(rel, engine.JournalDir) || strings.HasPrefix(rel, engine.SegmentDir) {
		for _, p := range named {
			if p.Offset >= 0 || p.Record != "" {
				return
			}
		}
		t.Errorf("%s: Verify names %s but says neither where nor which record: %v", what, rel, named)
	}
}

// checkData reads every item of the fixture's universe and every item
// Items yields: each must be exactly the version model holds, or fail with
// ErrCorrupt. It returns whether any ErrCorrupt was met.
func checkData(t *testing.T, db *engine.DB, fx *kindsFixture, model map[string]map[string]itemState, what string) (corrupt bool) {
	t.Helper()
	ctx := context.Background()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: reading panicked: %v\n%s", what, r, debug.Stack())
		}
	}()
	for cid, c := range openContainers(t, db) {
		m := model[cid]
		visible := 0
		for id := range fx.universe[cid] {
			want := m[id]
			if visibleAt(want, damageNow) {
				visible++
			}
			it, err := c.Read(ctx, id)
			switch {
			case errors.Is(err, engine.ErrCorrupt):
				corrupt = true
			case errors.Is(err, engine.ErrNotFound):
				if visibleAt(want, damageNow) {
					t.Errorf("%s: %s/%s: not found, want %v", what, cid, id, want)
				}
			case err != nil:
				t.Errorf("%s: %s/%s: Read = %v, want the item or ErrCorrupt", what, cid, id, err)
			case !visibleAt(want, damageNow):
				t.Errorf("%s: %s/%s: Read returned %s %.80s, want not found", what, cid, id, it.ETag, it.Body)
			default:
				if err := checkItem(it, id, want); err != nil {
					t.Errorf("%s: %s/%s: wrong data: %v", what, cid, id, err)
				}
			}
		}
		var got int64
		var iterErr error
		for it, err := range c.Items(ctx) {
			if err != nil {
				iterErr = err
				break
			}
			got++
			if want := m[it.ID]; !visibleAt(want, damageNow) {
				t.Errorf("%s: %s: Items yielded %s, want it absent", what, cid, it.ID)
			} else if err := checkItem(it, it.ID, want); err != nil {
				t.Errorf("%s: %s: Items: wrong data: %v", what, cid, err)
			}
		}
		switch {
		case errors.Is(iterErr, engine.ErrCorrupt):
			corrupt = true
		case iterErr != nil:
			t.Errorf("%s: %s: Items ended with %v, want ErrCorrupt or nothing", what, cid, iterErr)
		case got != int64(visible):
			t.Errorf("%s: %s: Items yielded %d items without an error, want %d", what, cid, got, visible)
		}
		if st := c.Stats(); st.Items != int64(visible) {
			t.Errorf("%s: %s: Stats.Items = %d, want %d", what, cid, st.Items, visible)
		}
	}
	return corrupt
}

// checkCut checks a repair of the journal file at path, whose bytes
// were orig before damage to [lo, hi): the entries before the damage are
// kept (next, the first seq dropped, is past them), and no entry that lies
// whole after the damage, intact, was dropped: that is corruption to
// report, not a torn write to cut.
func checkCut(t *testing.T, path string, orig []byte, lo, hi int, next uint64, what string) {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(tmp, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	es, _ := journalEntries(t, tmp)
	for _, e := range es {
		switch {
		case e.end <= int64(lo) && e.seq >= next:
			t.Errorf("%s: the repair dropped entry seq %d at [%d,%d), before the damage", what, e.seq, e.off, e.end)
		case e.off >= int64(hi) && e.seq >= next:
			t.Errorf("%s: the repair dropped entry seq %d at [%d,%d), intact after the damage", what, e.seq, e.off, e.end)
		}
	}
}
