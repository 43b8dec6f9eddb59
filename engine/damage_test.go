package engine_test

// Damage tests: bytes damaged on disk are reported
// as ErrCorrupt, never returned as data, never skipped silently, never a
// panic; an Open that refuses a damaged directory changes nothing in it. And
// a directory is opened by one DB at a time (ErrLocked).
//
// Each test builds a small database whose records sit in compacted segment
// files, in sealed but uncompacted segment files (puts and tombstones), and
// in several journal files, closes it, and then damages copies of it.
// The write model (crashDoc, itemState, verifyContainer) is in
// crash_test.go.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
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
	"github.com/ebbdb/ebb/index"
)

// damageFixture is a closed database and what it must hold.
type damageFixture struct {
	dir         string // pristine: only ever copied
	compression engine.Compression
	model       map[string]map[string]itemState // container -> id -> visible version
	universe    map[string]map[string]bool      // container -> every id written
	locs        map[string]map[string]index.Loc
	owner       map[uint32]string // segment file -> container
	journalFrom uint64
	// The journal's very last entry: one write of last.id, whose state was
	// lastBefore before it.
	lastContainer, lastID string
	lastBefore            itemState
}

const damageNow = t0 + 500

func damageOptions(c engine.Compression) *engine.Options {
	return &engine.Options{
		Clock:              func() time.Time { return time.Unix(damageNow, 0) },
		BlockSize:          1 << 10,
		JournalSegmentSize: 4 << 10,
		Compression:        c,
		// The fixture's files must stay as built: no background merging.
		CompactionInterval: -1,
	}
}

// openDamaged opens dir, failing the test on a panic.
func openDamaged(t *testing.T, dir string, c engine.Compression) (db *engine.DB, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Open(%s) panicked: %v\n%s", dir, r, debug.Stack())
		}
	}()
	return engine.Open(dir, damageOptions(c))
}

// buildDamageFixture writes the fixture database.
func buildDamageFixture(t *testing.T, comp engine.Compression) *damageFixture {
	t.Helper()
	ctx := context.Background()
	fx := &damageFixture{
		dir:         filepath.Join(t.TempDir(), "pristine"),
		compression: comp,
		model:       map[string]map[string]itemState{"c": {}, "d": {}},
		universe:    map[string]map[string]bool{"c": {}, "d": {}},
		locs:        map[string]map[string]index.Loc{},
		owner:       map[uint32]string{},
	}
	db, err := engine.Open(fx.dir, damageOptions(comp))
	if err != nil {
		t.Fatal(err)
	}
	cs := map[string]*engine.Container{}
	for _, id := range []string{"c", "d"} {
		cs[id] = mustCreateContainer(t, db, engine.ContainerProperties{ID: id, DefaultTTL: engine.TTL(crashDefaultTTL)})
	}
	rng := rand.New(rand.NewPCG(uint64(comp), 99))
	n := 0
	write := func(cid string, id string, del bool) {
		t.Helper()
		c, m := cs[cid], fx.model[cid]
		fx.universe[cid][id] = true
		before := m[id]
		if del {
			if !before.Present {
				return
			}
			if err := c.Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
			delete(m, id)
		} else {
			w := fmt.Sprintf("f%d.%s", n, cid)
			n++
			it, err := c.Upsert(ctx, crashDoc(id, w))
			if err != nil {
				t.Fatal(err)
			}
			m[id] = itemState{Present: true, W: w, TS: damageNow, ETag: it.ETag}
		}
		fx.lastContainer, fx.lastID, fx.lastBefore = cid, id, before
	}
	phase := func(cid string, newIDs, overwrites, deletes int, prefix string) {
		for i := range newIDs {
			write(cid, fmt.Sprintf("%s%03d", prefix, i), false)
		}
		ids := make([]string, 0, len(fx.model[cid]))
		for id := range fx.model[cid] {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for range overwrites {
			write(cid, ids[rng.IntN(len(ids))], false)
		}
		for range deletes {
			write(cid, ids[rng.IntN(len(ids))], true)
		}
	}
	// A: compacted files of c and d.
	phase("c", 120, 20, 12, "a")
	phase("d", 60, 10, 6, "a")
	for _, id := range []string{"c", "d"} {
		if err := cs[id].Compact(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// B, B2: sealed, uncompacted files of c (compacting d seals c too).
	phase("c", 40, 40, 12, "b")
	phase("d", 10, 10, 3, "b")
	if err := cs["d"].Compact(ctx); err != nil {
		t.Fatal(err)
	}
	phase("c", 30, 30, 10, "e")
	if err := cs["d"].Compact(ctx); err != nil {
		t.Fatal(err)
	}
	// C: only in the journal, over several of its files.
	phase("d", 10, 10, 3, "j")
	phase("c", 25, 25, 8, "j")
	write("c", "zz-last", false) // the journal's last entry: a new item
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Check the pristine database and note where every item lives.
	db, err = engine.Open(fx.dir, damageOptions(comp))
	if err != nil {
		t.Fatalf("open pristine: %v", err)
	}
	for cid, c := range openContainers(t, db) {
		verifyContainer(t, c, damageNow, exactStates(fx.model[cid], fx.universe[cid]))
		fx.locs[cid] = map[string]index.Loc{}
		for id := range fx.model[cid] {
			loc, ok := engine.ItemLoc(c, id)
			if !ok {
				t.Fatalf("%s/%s not in the index", cid, id)
			}
			fx.locs[cid][id] = loc
		}
		for _, num := range engine.SegmentNums(c) {
			fx.owner[num] = cid
		}
	}
	if r := engine.JournalRepair(db); r != nil {
		t.Fatalf("pristine open repaired %+v", r)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	m, err := engine.ReadManifest(fx.dir)
	if err != nil {
		t.Fatal(err)
	}
	fx.journalFrom = m.JournalFrom
	if rep, err := tool.Verify(fx.dir); err != nil || !rep.Clean() {
		t.Fatalf("Verify of the pristine database: %v %+v", err, rep)
	}
	jfiles, _ := journal.Files(filepath.Join(fx.dir, engine.JournalDir))
	if len(fx.owner) < 4 || len(jfiles) < 3 {
		t.Fatalf("fixture too small: %d segment files, %d journal files", len(fx.owner), len(jfiles))
	}
	return fx
}

func openContainers(t *testing.T, db *engine.DB) map[string]*engine.Container {
	t.Helper()
	out := map[string]*engine.Container{}
	for _, id := range []string{"c", "d"} {
		c, err := db.Container(id)
		if err != nil {
			t.Fatalf("container %s: %v", id, err)
		}
		out[id] = c
	}
	return out
}

// snapshotItems hashes every file and folder under dir except the LOCK file.
func snapshotItems(t *testing.T, dir string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel == "LOCK" {
			return nil
		}
		if d.IsDir() {
			snap[rel+"/"] = "dir"
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		snap[rel] = fmt.Sprintf("%x", sha256.Sum256(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func diffSnapshots(a, b map[string]string) string {
	var d []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			d = append(d, "removed "+k)
		} else if v != w {
			d = append(d, "changed "+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, "added "+k)
		}
	}
	sort.Strings(d)
	return strings.Join(d, ", ")
}

// mustRefuse opens the damaged dir and requires ErrCorrupt with every
// file left as it was.
func mustRefuse(t *testing.T, dir string, comp engine.Compression, what string) {
	t.Helper()
	before := snapshotItems(t, dir)
	db, err := openDamaged(t, dir, comp)
	if err == nil {
		db.Close()
		t.Errorf("%s: Open succeeded, want ErrCorrupt", what)
		return
	}
	if !errors.Is(err, engine.ErrCorrupt) {
		t.Errorf("%s: Open = %v, want ErrCorrupt", what, err)
	}
	if d := diffSnapshots(before, snapshotItems(t, dir)); d != "" {
		t.Errorf("%s: the refused Open changed the directory: %s", what, d)
	}
}

// checkVerifyNames requires Verify to report damage in dir.
func checkVerifyNames(t *testing.T, dir, what string) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: Verify panicked: %v\n%s", what, r, debug.Stack())
		}
	}()
	rep, err := tool.Verify(dir)
	if err == nil && rep.Clean() {
		t.Errorf("%s: Verify reports no problem", what)
	}
}

func flipBits(t *testing.T, path string, off int64, mask byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= mask
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func randomBit(rng *rand.Rand) byte {
	if rng.IntN(4) == 0 {
		return byte(1 + rng.IntN(255)) // several bits
	}
	return 1 << rng.IntN(8)
}

// compressionNames names the subtests of each compression.
var compressionNames = map[engine.Compression]string{
	engine.CompressionZstd: "zstd",
	engine.CompressionS2:   "s2",
	engine.CompressionNone: "none",
}

func damageRand(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("EBB_DAMAGE_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (EBB_DAMAGE_SEED replays it)", seed)
	replayOnFailure(t, "EBB_DAMAGE_SEED", uint64(seed))
	return rand.New(rand.NewPCG(seed, 3))
}

// ---------------------------------------------------------------------------

// TestDamageJournal flips bits in journal files. Damage to an entry that
// recovery needs, anywhere but in the log's very last entry, must make Open
// fail with ErrCorrupt. Damage to the very last entry looks exactly like a
// torn write and may be repaired (the journal's documented caveat), losing
// that unacknowledgeable entry only. Damage to entries already sealed into
// segments may be refused or ignored. Whenever Open succeeds, every item is
// exactly right.
func TestDamageJournal(t *testing.T) {
	fx := buildDamageFixture(t, engine.CompressionZstd)
	rng := damageRand(t)
	work := filepath.Join(t.TempDir(), "db")
	jfiles, err := journal.Files(filepath.Join(fx.dir, engine.JournalDir))
	if err != nil {
		t.Fatal(err)
	}
	type spot struct {
		file  string
		entry journalEntry
	}
	var needed, sealed, last []spot
	for i, f := range jfiles {
		es, _ := journalEntries(t, f)
		for j, e := range es {
			s := spot{f, e}
			switch {
			case i == len(jfiles)-1 && j == len(es)-1:
				last = append(last, s)
			case e.seq < fx.journalFrom:
				sealed = append(sealed, s)
			default:
				needed = append(needed, s)
			}
		}
	}
	if len(needed) < 10 || len(last) != 1 {
		t.Fatalf("fixture: %d needed entries, %d sealed, %d last", len(needed), len(sealed), len(last))
	}
	budget, minTrials := 8*time.Second, 60
	if testing.Short() {
		budget, minTrials = 2*time.Second, 20
	}
	start := time.Now()
	counts := map[string]int{}
	for trial := 0; trial < minTrials || time.Since(start) < budget; trial++ {
		if trial >= 2000 {
			break
		}
		class, pool := "needed", needed
		switch x := trial % 10; {
		case x == 7 && len(sealed) > 0:
			class, pool = "sealed", sealed
		case x == 8:
			class, pool = "last", last
		}
		s := pool[rng.IntN(len(pool))]
		off := s.entry.off + rng.Int64N(s.entry.end-s.entry.off)
		mask := randomBit(rng)
		dir := testutil.MustCopyDir(t, fx.dir, work)
		path := filepath.Join(dir, engine.JournalDir, filepath.Base(s.file))
		flipBits(t, path, off, mask)
		what := fmt.Sprintf("%s entry seq %d of %s: byte %d ^ %#02x", class, s.entry.seq, filepath.Base(s.file), off, mask)
		counts[class]++

		if class == "needed" {
			mustRefuse(t, dir, fx.compression, what)
			checkVerifyNames(t, dir, what)
		} else {
			before := snapshotItems(t, dir)
			db, err := openDamaged(t, dir, fx.compression)
			if err != nil {
				if !errors.Is(err, engine.ErrCorrupt) {
					t.Errorf("%s: Open = %v, want success or ErrCorrupt", what, err)
				}
				if d := diffSnapshots(before, snapshotItems(t, dir)); d != "" {
					t.Errorf("%s: the refused Open changed the directory: %s", what, d)
				}
				counts[class+" refused"]++
			} else {
				model := fx.model
				if rep := engine.JournalRepair(db); rep != nil {
					if class != "last" {
						t.Errorf("%s: Open cut the journal although entries follow the damage: %+v", what, rep)
					}
					// The torn last entry is gone, and only it.
					model = map[string]map[string]itemState{}
					for cid, m := range fx.model {
						model[cid] = map[string]itemState{}
						for id, st := range m {
							model[cid][id] = st
						}
					}
					if fx.lastBefore.Present {
						model[fx.lastContainer][fx.lastID] = fx.lastBefore
					} else {
						delete(model[fx.lastContainer], fx.lastID)
					}
					counts[class+" repaired"]++
				}
				for cid, c := range openContainers(t, db) {
					verifyContainer(t, c, damageNow, exactStates(model[cid], fx.universe[cid]))
				}
				db.Close()
			}
		}
		if t.Failed() {
			t.Fatalf("after %s (copy in %s)", what, dir)
		}
	}
	t.Logf("%d journal flips in %s: %v", counts["needed"]+counts["sealed"]+counts["last"], time.Since(start).Round(time.Millisecond), counts)
}

// segLayout is where the blocks of a segment file are, read from its
// footer and block table (segment/doc.go).
type segLayout struct {
	size                          int64
	blocks                        [][2]int64 // data block i spans [blocks[i][0], blocks[i][1])
	indexOff, tableOff, footerOff int64
}

func readSegLayout(t *testing.T, path string) segLayout {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	l := segLayout{size: int64(len(b)), footerOff: int64(len(b)) - 128}
	ft := b[l.footerOff:]
	l.indexOff = int64(le.Uint64(ft[0:]))
	l.tableOff = l.indexOff + int64(le.Uint32(ft[8:]))
	nblocks := int64(le.Uint64(ft[96:]))
	table := b[l.tableOff+16:]
	off := int64(16)
	for i := range nblocks {
		n := int64(le.Uint32(table[4*i:]))
		l.blocks = append(l.blocks, [2]int64{off, off + n})
		off += n
	}
	if off != l.indexOff || int64(le.Uint32(ft[12:])) != 16+4*nblocks {
		t.Fatalf("%s: cannot read the block layout (blocks end at %d, index at %d)", path, off, l.indexOff)
	}
	return l
}

func segPath(dir string, num uint32) string {
	return filepath.Join(dir, engine.SegmentDir, fmt.Sprintf("%08d.seg", num))
}

// segNums returns the fixture's segment files in order.
func (fx *damageFixture) segNums() []uint32 {
	var nums []uint32
	for n := range fx.owner {
		nums = append(nums, n)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	return nums
}

// TestDamageSegmentData flips bits in data blocks. Open reads only index
// blocks, so it succeeds; every item whose version lives in the damaged
// block must then fail to Read with ErrCorrupt (never another version,
// never "not found"), every other item must read exactly right, Items must
// yield the items before the first damaged one and then ErrCorrupt, and
// compacting the damaged file must fail with ErrCorrupt and lose nothing.
func TestDamageSegmentData(t *testing.T) {
	budgets := map[engine.Compression]time.Duration{engine.CompressionZstd: 5 * time.Second, engine.CompressionS2: 3 * time.Second, engine.CompressionNone: 3 * time.Second}
	minTrials := 8
	if testing.Short() {
		budgets = map[engine.Compression]time.Duration{engine.CompressionZstd: time.Second, engine.CompressionS2: time.Second / 2, engine.CompressionNone: time.Second / 2}
		minTrials = 4
	}
	for _, comp := range []engine.Compression{engine.CompressionZstd, engine.CompressionS2, engine.CompressionNone} {
		budget := budgets[comp]
		t.Run(compressionNames[comp], func(t *testing.T) {
			ctx := context.Background()
			fx := buildDamageFixture(t, comp)
			rng := damageRand(t)
			work := filepath.Join(t.TempDir(), "db")
			nums := fx.segNums()
			layouts := map[uint32]segLayout{}
			for _, n := range nums {
				layouts[n] = readSegLayout(t, segPath(fx.dir, n))
			}
			start := time.Now()
			trials, affectedReads, compacts := 0, 0, 0
			for ; trials < minTrials || time.Since(start) < budget; trials++ {
				if trials >= 500 {
					break
				}
				num := nums[trials%len(nums)]
				l := layouts[num]
				blk := rng.IntN(len(l.blocks))
				off := l.blocks[blk][0] + rng.Int64N(l.blocks[blk][1]-l.blocks[blk][0])
				mask := randomBit(rng)
				dir := testutil.MustCopyDir(t, fx.dir, work)
				flipBits(t, segPath(dir, num), off, mask)
				what := fmt.Sprintf("segment %d (container %s) block %d: byte %d ^ %#02x", num, fx.owner[num], blk, off, mask)

				cid := fx.owner[num]
				affected := map[string]bool{}
				for id, loc := range fx.locs[cid] {
					if loc.File == num && loc.Block == uint32(blk) {
						affected[id] = true
					}
				}
				liveInFile := false
				for _, loc := range fx.locs[cid] {
					liveInFile = liveInFile || loc.File == num
				}
				db, err := openDamaged(t, dir, comp)
				if err != nil {
					t.Fatalf("%s: Open = %v; a data block is not read at open", what, err)
				}
				cs := openContainers(t, db)
				checkDamagedReads(t, what, cs, fx, cid, affected, trials%4 == 0)
				affectedReads += len(affected)
				if trials%3 == 0 {
					compacts++
					err := cs[cid].Compact(ctx)
					switch {
					case liveInFile && !errors.Is(err, engine.ErrCorrupt):
						t.Errorf("%s: Compact = %v, want ErrCorrupt: the file holds live records", what, err)
					case !liveInFile && err != nil:
						t.Errorf("%s: Compact = %v; the file holds no live record and may be dropped unread", what, err)
					}
					checkDamagedReads(t, what+", then Compact", cs, fx, cid, affected, false)
				}
				if err := db.Close(); err != nil {
					t.Errorf("%s: Close: %v", what, err)
				}
				if liveInFile && trials%4 == 1 {
					checkVerifyNames(t, dir, what)
				}
				if t.Failed() {
					t.Fatalf("after %s (copy in %s)", what, dir)
				}
			}
			t.Logf("%d data-block flips over %d files in %s: %d reads of damaged items refused, %d compactions tried",
				trials, len(nums), time.Since(start).Round(time.Millisecond), affectedReads, compacts)
		})
	}
}

// checkDamagedReads checks every container after a data block of
// container cid was damaged: the affected items fail with ErrCorrupt, all
// others are exact.
// With full unset, the other containers are not checked.
func checkDamagedReads(t *testing.T, what string, cs map[string]*engine.Container, fx *damageFixture, cid string, affected map[string]bool, full bool) {
	t.Helper()
	ctx := context.Background()
	for name, c := range cs {
		if name != cid || len(affected) == 0 {
			if name == cid || full {
				verifyContainer(t, c, damageNow, exactStates(fx.model[name], fx.universe[name]))
			}
			continue
		}
		var ids []string
		for id := range fx.universe[name] {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			it, err := readAll(t, c, id)
			want := fx.model[name][id]
			switch {
			case affected[id]:
				if !errors.Is(err, engine.ErrCorrupt) {
					t.Errorf("%s: Read(%q) of an item in the damaged block = %v %.100s, want ErrCorrupt", what, id, err, it.Body)
				}
			case !want.Present:
				if !errors.Is(err, engine.ErrNotFound) {
					t.Errorf("%s: Read(%q) = %v %.100s, want ErrNotFound", what, id, err, it.Body)
				}
			case err != nil:
				t.Errorf("%s: Read(%q) = %v, want %s", what, id, err, want)
			default:
				if err := checkItem(it, id, want); err != nil {
					t.Errorf("%s: Read(%q): %v", what, id, err)
				}
			}
		}
		// Items: exactly the items before the first damaged one, then
		// ErrCorrupt; a damaged item is never skipped.
		var live []string
		for id := range fx.model[name] {
			live = append(live, id)
		}
		sort.Strings(live)
		k := 0
		for k < len(live) && !affected[live[k]] {
			k++
		}
		var got []string
		var iterErr error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("%s: Items panicked: %v\n%s", what, r, debug.Stack())
				}
			}()
			for it, err := range c.Items(ctx) {
				if err != nil {
					iterErr = err
					break
				}
				got = append(got, it.ID)
				if affected[it.ID] {
					t.Errorf("%s: Items yielded %q from the damaged block: %.100s", what, it.ID, it.Body)
				} else if err := checkItem(it, it.ID, fx.model[name][it.ID]); err != nil {
					t.Errorf("%s: Items: %v", what, err)
				}
			}
		}()
		if !errors.Is(iterErr, engine.ErrCorrupt) {
			t.Errorf("%s: Items ended with %v, want ErrCorrupt (%d items live in the damaged block)", what, iterErr, len(affected))
		}
		if fmt.Sprint(got) != fmt.Sprint(live[:k]) {
			t.Errorf("%s: Items yielded %v before failing, want %v", what, got, live[:k])
		}
	}
}

func readAll(t *testing.T, c *engine.Container, id string) (it engine.Item, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Read(%q) panicked: %v\n%s", id, r, debug.Stack())
		}
	}()
	return c.Read(context.Background(), id)
}

// TestDamageSegmentMeta flips bits in what Open reads of a segment file:
// the file header, the index block, the block table and the footer. Open
// must fail with ErrCorrupt and change nothing (no file removed as an
// orphan, no journal touched).
func TestDamageSegmentMeta(t *testing.T) {
	fx := buildDamageFixture(t, engine.CompressionZstd)
	rng := damageRand(t)
	work := filepath.Join(t.TempDir(), "db")
	nums := fx.segNums()
	budget, minTrials := 5*time.Second, 4*len(nums)*2
	if testing.Short() {
		budget, minTrials = 1500*time.Millisecond, 4*len(nums)
	}
	start := time.Now()
	counts := map[string]int{}
	regions := []string{"header", "index", "table", "footer"}
	for trial := 0; trial < minTrials || time.Since(start) < budget; trial++ {
		if trial >= 3000 {
			break
		}
		num := nums[trial%len(nums)]
		region := regions[(trial/len(nums))%len(regions)]
		l := readSegLayout(t, segPath(fx.dir, num))
		var lo, hi int64
		switch region {
		case "header":
			lo, hi = 0, 16
		case "index":
			lo, hi = l.indexOff, l.tableOff
		case "table":
			lo, hi = l.tableOff, l.footerOff
		case "footer":
			lo, hi = l.footerOff, l.size
		}
		off := lo + rng.Int64N(hi-lo)
		mask := randomBit(rng)
		dir := testutil.MustCopyDir(t, fx.dir, work)
		flipBits(t, segPath(dir, num), off, mask)
		what := fmt.Sprintf("segment %d %s: byte %d ^ %#02x", num, region, off, mask)
		mustRefuse(t, dir, fx.compression, what)
		if trial%4 == 0 {
			checkVerifyNames(t, dir, what)
		}
		counts[region]++
		if t.Failed() {
			t.Fatalf("after %s (copy in %s)", what, dir)
		}
	}
	t.Logf("%v flips refused in %s", counts, time.Since(start).Round(time.Millisecond))
}

// TestDamageSegmentTruncated cuts, extends and removes segment files.
func TestDamageSegmentTruncated(t *testing.T) {
	fx := buildDamageFixture(t, engine.CompressionZstd)
	rng := damageRand(t)
	work := filepath.Join(t.TempDir(), "db")
	for _, num := range fx.segNums() {
		l := readSegLayout(t, segPath(fx.dir, num))
		cuts := []int64{0, 1, 15, 16, 17, l.indexOff, l.tableOff, l.footerOff - 1, l.footerOff, l.footerOff + 1, l.size - 8, l.size - 1}
		for range 6 {
			cuts = append(cuts, rng.Int64N(l.size))
		}
		for _, n := range cuts {
			dir := testutil.MustCopyDir(t, fx.dir, work)
			if err := os.Truncate(segPath(dir, num), n); err != nil {
				t.Fatal(err)
			}
			mustRefuse(t, dir, fx.compression, fmt.Sprintf("segment %d of %d bytes cut to %d", num, l.size, n))
		}
		for _, extra := range [][]byte{make([]byte, 1), make([]byte, 4096), []byte("garbage after the footer")} {
			dir := testutil.MustCopyDir(t, fx.dir, work)
			f, err := os.OpenFile(segPath(dir, num), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(extra)
			f.Close()
			mustRefuse(t, dir, fx.compression, fmt.Sprintf("segment %d with %d bytes appended", num, len(extra)))
		}
		// A file the manifest names is missing: an error, and nothing else
		// removed. (Not a checksum failure, so ErrCorrupt is not required.)
		dir := testutil.MustCopyDir(t, fx.dir, work)
		if err := os.Remove(segPath(dir, num)); err != nil {
			t.Fatal(err)
		}
		before := snapshotItems(t, dir)
		if db, err := openDamaged(t, dir, fx.compression); err == nil {
			db.Close()
			t.Errorf("segment %d removed: Open succeeded", num)
		} else if !errors.Is(err, engine.ErrCorrupt) {
			t.Logf("segment %d removed: Open = %v (not ErrCorrupt)", num, err)
		}
		if d := diffSnapshots(before, snapshotItems(t, dir)); d != "" {
			t.Errorf("segment %d removed: the refused Open changed the directory: %s", num, d)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
}

// TestDamageManifest flips every byte of the MANIFEST, and cuts it.
func TestDamageManifest(t *testing.T) {
	fx := buildDamageFixture(t, engine.CompressionZstd)
	rng := damageRand(t)
	work := filepath.Join(t.TempDir(), "db")
	orig, err := os.ReadFile(filepath.Join(fx.dir, engine.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	step := 1
	if testing.Short() {
		step = 7
	}
	trials := 0
	for off := 0; off < len(orig); off += step {
		mask := randomBit(rng)
		dir := testutil.MustCopyDir(t, fx.dir, work)
		flipBits(t, filepath.Join(dir, engine.ManifestName), int64(off), mask)
		what := fmt.Sprintf("MANIFEST byte %d of %d ^ %#02x", off, len(orig), mask)
		mustRefuse(t, dir, fx.compression, what)
		if off%16 == 0 {
			checkVerifyNames(t, dir, what)
		}
		trials++
		if t.Failed() {
			t.Fatalf("after %s (copy in %s)", what, dir)
		}
	}
	for _, n := range []int{0, 1, 8, 19, 20, 21, len(orig) / 2, len(orig) - 1} {
		dir := testutil.MustCopyDir(t, fx.dir, work)
		if err := os.Truncate(filepath.Join(dir, engine.ManifestName), int64(n)); err != nil {
			t.Fatal(err)
		}
		mustRefuse(t, dir, fx.compression, fmt.Sprintf("MANIFEST cut to %d of %d bytes", n, len(orig)))
		trials++
	}
	t.Logf("%d damaged manifests refused in %s", trials, time.Since(start).Round(time.Millisecond))
}

// TestDamageManifestMissing removes the MANIFEST of a database with data:
// Open must refuse rather than start an empty database over it, and must
// neither delete nor create anything.
func TestDamageManifestMissing(t *testing.T) {
	fx := buildDamageFixture(t, engine.CompressionZstd)
	work := filepath.Join(t.TempDir(), "db")
	for _, variant := range []string{"all data", "journal only", "segments only"} {
		dir := testutil.MustCopyDir(t, fx.dir, work)
		if err := os.Remove(filepath.Join(dir, engine.ManifestName)); err != nil {
			t.Fatal(err)
		}
		switch variant {
		case "journal only":
			os.RemoveAll(filepath.Join(dir, engine.SegmentDir))
			os.Mkdir(filepath.Join(dir, engine.SegmentDir), 0o755)
		case "segments only":
			os.RemoveAll(filepath.Join(dir, engine.JournalDir))
		}
		mustRefuse(t, dir, fx.compression, "MANIFEST missing, "+variant)
		if _, err := os.Stat(filepath.Join(dir, engine.ManifestName)); err == nil {
			t.Errorf("MANIFEST missing, %s: the refused Open wrote a MANIFEST", variant)
		}
	}
}

// TestDamageClockFile damages the CLOCK file, a hint the engine must
// tolerate: Open succeeds and every item is exact.
func TestDamageClockFile(t *testing.T) {
	fx := buildDamageFixture(t, engine.CompressionZstd)
	work := filepath.Join(t.TempDir(), "db")
	for _, content := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte{0xff}, 12), make([]byte, 12)} {
		dir := testutil.MustCopyDir(t, fx.dir, work)
		if err := os.WriteFile(filepath.Join(dir, engine.ClockName), content, 0o644); err != nil {
			t.Fatal(err)
		}
		db, err := openDamaged(t, dir, fx.compression)
		if err != nil {
			t.Fatalf("CLOCK %x: Open = %v", content, err)
		}
		for cid, c := range openContainers(t, db) {
			verifyContainer(t, c, damageNow, exactStates(fx.model[cid], fx.universe[cid]))
		}
		db.Close()
	}
}

// openFiles lists this process's open file descriptors under dir
// (Linux only: nil, false elsewhere).
func openFiles(dir string) ([]string, bool) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, false
	}
	var open []string
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			open = append(open, target)
		}
	}
	return open, true
}

// TestDamageRefusedOpenReleasesFiles: an Open that refuses a damaged
// directory leaves no file of it open (with the garbage collector off, so
// that no finalizer hides a leak).
func TestDamageRefusedOpenReleasesFiles(t *testing.T) {
	if _, ok := openFiles(os.TempDir()); !ok {
		t.Skip("needs /proc/self/fd")
	}
	fx := buildDamageFixture(t, engine.CompressionZstd)
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	jfiles, _ := journal.Files(filepath.Join(fx.dir, engine.JournalDir))
	es, _ := journalEntries(t, jfiles[len(jfiles)-2])
	num := fx.segNums()[len(fx.segNums())-1]
	l := readSegLayout(t, segPath(fx.dir, num))
	cases := []struct {
		what   string
		damage func(dir string)
	}{
		{"MANIFEST flipped", func(dir string) { flipBits(t, filepath.Join(dir, engine.ManifestName), 30, 1) }},
		{"last segment file's index flipped", func(dir string) { flipBits(t, segPath(dir, num), l.indexOff+20, 1) }},
		{"journal entry needed by replay flipped", func(dir string) {
			e := es[len(es)/2]
			flipBits(t, filepath.Join(dir, engine.JournalDir, filepath.Base(jfiles[len(jfiles)-2])), e.end-3, 1)
		}},
	}
	for i, tc := range cases {
		dir := testutil.MustCopyDir(t, fx.dir, filepath.Join(t.TempDir(), fmt.Sprint("db", i)))
		tc.damage(dir)
		db, err := openDamaged(t, dir, fx.compression)
		if err == nil {
			db.Close()
			t.Errorf("%s: Open succeeded", tc.what)
			continue
		}
		if open, _ := openFiles(dir); len(open) > 0 {
			t.Errorf("%s: Open failed (%v) but left files open: %v", tc.what, err, open)
		}
	}
}

// ---------------------------------------------------------------------------
// Locking.

// TestLockInProcess: a second Open of an open directory fails with
// ErrLocked and disturbs nothing; Close releases the directory, and so does
// an Open that failed.
func TestLockInProcess(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := newFakeClock(t0)
	db := openTest(t, dir, clk)
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "c"})
	if _, err := c.Upsert(ctx, []byte(`{"id":"a","v":1}`)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		db2, err := engine.Open(dir, &engine.Options{Clock: clk.Now})
		if !errors.Is(err, engine.ErrLocked) {
			if err == nil {
				db2.Close()
			}
			t.Fatalf("second Open = %v, want ErrLocked", err)
		}
	}
	// The refused Open left the first handle working.
	if _, err := c.Upsert(ctx, []byte(`{"id":"b","v":2}`)); err != nil {
		t.Fatalf("write after a refused Open: %v", err)
	}
	if it, err := c.Read(ctx, "a"); err != nil || bodyField(t, it, "v") != float64(1) {
		t.Fatalf("read after a refused Open: %v %s", err, it.Body)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, dir, clk)
	if c, err := db.Container("c"); err != nil {
		t.Fatal(err)
	} else if st := c.Stats(); st.Items != 2 {
		t.Fatalf("after reopen: %+v, want 2 items", st)
	}
	db.Close()

	// An Open that fails (here: a damaged MANIFEST) releases the lock.
	path := filepath.Join(dir, engine.ManifestName)
	orig, _ := os.ReadFile(path)
	flipBits(t, path, int64(len(orig)-1), 0x10)
	if _, err := engine.Open(dir, &engine.Options{Clock: clk.Now}); !errors.Is(err, engine.ErrCorrupt) {
		t.Fatalf("Open with a damaged MANIFEST = %v, want ErrCorrupt", err)
	}
	os.WriteFile(path, orig, 0o644)
	db, err := engine.Open(dir, &engine.Options{Clock: clk.Now})
	if err != nil {
		t.Fatalf("Open after a failed Open = %v; the failed one kept the lock?", err)
	}
	db.Close()
}

// startLockChild runs the child process in mode on dir and returns it, with its
// stdout lines arriving on a channel.
func startLockChild(t *testing.T, mode, dir string) (*exec.Cmd, chan string, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), envChildMode+"="+mode, envChildDir+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		buf := make([]byte, 4096)
		var acc []byte
		for {
			n, err := out.Read(buf)
			acc = append(acc, buf[:n]...)
			for {
				i := bytes.IndexByte(acc, '\n')
				if i < 0 {
					break
				}
				lines <- string(acc[:i])
				acc = acc[i+1:]
			}
			if err != nil {
				return
			}
		}
	}()
	return cmd, lines, func() { stdin.Close() }
}

func nextLockLine(t *testing.T, lines chan string, what string) string {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatalf("%s: the child exited without a word", what)
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no answer from the child in 30s", what)
	}
	return ""
}

// TestLockChildProcess: the lock holds across processes, both ways, and a
// process killed with SIGKILL releases it.
func TestLockChildProcess(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock(t0)

	// This process holds the directory: the child is refused.
	db := openTest(t, dir, clk)
	cmd, lines, _ := startLockChild(t, "trylock", dir)
	if l := nextLockLine(t, lines, "trylock while open here"); l != "locked" {
		t.Errorf("child Open while this process has the DB open: %q, want locked", l)
	}
	cmd.Wait()
	db.Close()

	// Closed here: the child may open it.
	cmd, lines, _ = startLockChild(t, "trylock", dir)
	if l := nextLockLine(t, lines, "trylock after Close"); l != "opened" {
		t.Errorf("child Open after Close: %q, want opened", l)
	}
	cmd.Wait()

	// The child holds it: this process is refused until the child closes.
	cmd, lines, release := startLockChild(t, "hold", dir)
	if l := nextLockLine(t, lines, "hold"); l != "holding" {
		t.Fatalf("child hold: %q", l)
	}
	if db, err := engine.Open(dir, &engine.Options{Clock: clk.Now}); !errors.Is(err, engine.ErrLocked) {
		if err == nil {
			db.Close()
		}
		t.Errorf("Open while a child holds the DB = %v, want ErrLocked", err)
	}
	release()
	if l := nextLockLine(t, lines, "close"); l != "closed" {
		t.Errorf("child close: %q", l)
	}
	cmd.Wait()
	db = openTest(t, dir, clk)
	db.Close()

	// The child holds it and is killed: the kernel drops its lock.
	cmd, lines, _ = startLockChild(t, "hold", dir)
	if l := nextLockLine(t, lines, "hold"); l != "holding" {
		t.Fatalf("child hold: %q", l)
	}
	if db, err := engine.Open(dir, &engine.Options{Clock: clk.Now}); !errors.Is(err, engine.ErrLocked) {
		if err == nil {
			db.Close()
		}
		t.Errorf("Open while a child holds the DB = %v, want ErrLocked", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	db = openTest(t, dir, clk)
	db.Close()
}
