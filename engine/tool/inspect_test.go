package tool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/internal/docfmt"
	"github.com/ebbdb/ebb/engine/journal"
	"github.com/ebbdb/ebb/segment"
)

// inspectClock is a wall clock the inspection tests move by hand.
type inspectClock struct{ sec atomic.Int64 }

func (c *inspectClock) now() time.Time { return time.Unix(c.sec.Load(), 0) }

const inspectT0 = 1_700_000_000

// openInspectDB opens dir with a hand-moved clock, small blocks and no
// automatic seal, so that the files fillInspectDB makes are always the same.
// Writes are fsynced (no NoSync): tests inspect the files of the open
// database, which then hold every acknowledged write (with NoSync the
// journal queue may not yet have written the last ones).
func openInspectDB(t *testing.T, dir string, clk *inspectClock, mod func(*engine.Options)) *engine.DB {
	t.Helper()
	o := &engine.Options{Clock: clk.now, SealThreshold: 1 << 30, BlockSize: 512}
	if mod != nil {
		mod(o)
	}
	db, err := engine.Open(dir, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return db
}

// fillInspectDB writes a mix of items to container "sessions" (DefaultTTL
// 10): 30 inheriting the default, 20 with ttl 5, 10 that never expire; then
// deletes two and rewrites three. Compacting the other container, "plain"
// (TTL off, one item), seals what "sessions" holds so far, so the first 30
// records end up in seg/00000001.seg, the next 20 in seg/00000002.seg and
// the rest in the journal. It returns "sessions".
func fillInspectDB(t *testing.T, db *engine.DB) *engine.Container {
	t.Helper()
	ctx := context.Background()
	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "sessions", DefaultTTL: engine.TTL(10)})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "plain", Indexing: engine.IndexingLazy})
	if err != nil {
		t.Fatal(err)
	}
	put := func(doc string) {
		t.Helper()
		if _, err := c.Upsert(ctx, []byte(doc)); err != nil {
			t.Fatalf("Upsert(%s): %v", doc, err)
		}
	}
	seal := func() {
		t.Helper()
		if err := plain.Compact(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Only one container has records at each seal, so file numbers are
	// always the same.
	for i := range 30 {
		put(fmt.Sprintf(`{"id":"d%02d","pad":"%040d"}`, i, i))
	}
	seal() // "sessions" into file 1
	for i := range 20 {
		put(fmt.Sprintf(`{"id":"t%02d","ttl":5,"pad":"%040d"}`, i, i))
	}
	seal() // file 2
	if _, err := plain.Upsert(ctx, []byte(`{"id":"p","ttl":3}`)); err != nil {
		t.Fatal(err)
	}
	seal() // file 3, rewritten into file 4
	for i := range 10 {
		put(fmt.Sprintf(`{"id":"n%02d","ttl":-1,"pad":"%040d"}`, i, i))
	}
	for _, id := range []string{"d00", "n00"} {
		if err := c.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"d01", "t01", "n01"} {
		put(fmt.Sprintf(`{"id":%q,"v":2}`, id))
	}
	return c
}

// checkAgainstStats checks that the report's container agrees with Stats.
func checkAgainstStats(t *testing.T, rep *Report, c *engine.Container) {
	t.Helper()
	st := c.Stats()
	var cr *ContainerReport
	for i := range rep.Containers {
		if rep.Containers[i].ID == c.ID() {
			cr = &rep.Containers[i]
		}
	}
	if cr == nil {
		t.Fatalf("report has no container %q", c.ID())
	}
	got := engine.Stats{Items: cr.Items.Live, LiveBytes: cr.Items.LiveBytes, DiskBytes: cr.DiskBytes, ExpiredPending: cr.Items.Expired}
	if got != st {
		t.Errorf("Inspect says %+v, Stats says %+v", got, st)
	}
}

func TestInspectMatchesStats(t *testing.T) {
	dir := t.TempDir()
	clk := &inspectClock{}
	clk.sec.Store(inspectT0)
	db := openInspectDB(t, dir, clk, nil)
	defer db.Close()
	c := fillInspectDB(t, db)
	opts := &InspectOptions{Clock: clk.now}

	// The database is open: Inspect must not need its lock.
	rep, err := InspectWithOptions(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstStats(t, rep, c)
	cr := rep.Containers[0]
	if cr.ID != "sessions" || *cr.DefaultTTL != 10 || cr.Indexing != "consistent" || len(cr.History) != 1 {
		t.Errorf("container properties: %+v", cr)
	}
	if p := rep.Containers[1]; p.ID != "plain" || p.DefaultTTL != nil || p.Indexing != "lazy" {
		t.Errorf("second container: %+v", p)
	}
	if cr.Items.Live != 58 || cr.Items.Expired != 0 || cr.Items.NeverExpire != 8 || cr.Items.Tombstones != 2 {
		t.Errorf("items at t0: %+v", cr.Items)
	}
	if len(cr.Segments) == 0 || len(rep.Journal.Files) == 0 {
		t.Fatalf("want segments and journal files, got %d and %d", len(cr.Segments), len(rep.Journal.Files))
	}
	if cr.TS == nil || cr.TS.Min != inspectT0 || cr.Expiry == nil || cr.Expiry.Min != inspectT0+5 || cr.Expiry.Max != inspectT0+10 {
		t.Errorf("ranges: ts %+v expiry %+v", cr.TS, cr.Expiry)
	}
	for _, s := range cr.Segments {
		if s.Error != "" || s.Bytes == 0 || s.Records == 0 || s.CompressionRatio <= 0 || s.Compression != "s2" { // sealed, not compacted: the default codec is s2
			t.Errorf("segment %+v", s)
		}
	}
	if len(rep.Errors) != 0 {
		t.Errorf("errors: %v", rep.Errors)
	}

	// Items with ttl 5 expire; Inspect judges at the clock given.
	clk.sec.Add(6)
	rep, err = InspectWithOptions(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstStats(t, rep, c)
	if it := rep.Containers[0].Items; it.Live != 39 || it.Expired != 19 {
		t.Errorf("items at t0+6: %+v", it)
	}
	if rep.Now != inspectT0+6 {
		t.Errorf("now %d, want %d", rep.Now, inspectT0+6)
	}

	// Compaction drops every dead record.
	if err := c.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	rep, err = InspectWithOptions(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstStats(t, rep, c)
	cr = rep.Containers[0]
	if cr.Items.Expired != 0 || cr.Items.Tombstones != 0 || cr.DeadBytes != 0 || cr.DeadShare != 0 {
		t.Errorf("after compaction: items %+v dead %d (%.2f)", cr.Items, cr.DeadBytes, cr.DeadShare)
	}

	// A clock behind the database's is not believed.
	rep, err = InspectWithOptions(dir, &InspectOptions{Clock: func() time.Time { return time.Unix(0, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Now < inspectT0 {
		t.Errorf("now %d with a clock at 0; the database saw %d", rep.Now, inspectT0)
	}
}

func TestInspectDeadShare(t *testing.T) {
	dir := t.TempDir()
	clk := &inspectClock{}
	clk.sec.Store(inspectT0)
	db := openInspectDB(t, dir, clk, nil)
	c := fillInspectDB(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	clk.sec.Add(100) // everything but the ttl -1 items expired
	rep, err := InspectWithOptions(dir, &InspectOptions{Clock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	cr := rep.Containers[0]
	if cr.Items.Live != 8 || cr.Items.Live != cr.Items.NeverExpire {
		t.Errorf("items: %+v", cr.Items)
	}
	var records, live int64
	for _, s := range cr.Segments {
		records += s.Records
		live += s.LiveRecords
		if s.LiveRecords+s.DeadRecords != s.Records || s.DeadShare < 0 || s.DeadShare > 1 {
			t.Errorf("segment %s: %+v", s.File, s.RecordUsage)
		}
		if s.LiveRecords == 0 && s.DeadShare != 1 {
			t.Errorf("segment %s has no live record but dead share %.2f", s.File, s.DeadShare)
		}
	}
	live += cr.Journal.LiveRecords
	if live != 8 {
		t.Errorf("%d live records over segments and journal, want 8", live)
	}
	if records == 0 {
		t.Error("no segment records")
	}
	_ = c
}

func TestInspectNotADatabase(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	empty := filepath.Join(root, "empty")
	os.Mkdir(empty, 0o755)
	other := filepath.Join(root, "other")
	os.Mkdir(other, 0o755)
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("hello"), 0o644)
	for _, dir := range []string{filepath.Join(root, "absent"), file, empty, other} {
		if _, err := Inspect(dir); !errors.Is(err, engine.ErrNoDatabase) {
			t.Errorf("Inspect(%s): %v, want ErrNoDatabase", dir, err)
		}
		if _, err := Verify(dir); !errors.Is(err, engine.ErrNoDatabase) {
			t.Errorf("Verify(%s): %v, want ErrNoDatabase", dir, err)
		}
	}
	// A database without its MANIFEST is damaged, not "not a database".
	dir := filepath.Join(root, "db")
	clk := &inspectClock{}
	clk.sec.Store(inspectT0)
	db := openInspectDB(t, dir, clk, nil)
	fillInspectDB(t, db)
	db.Close()
	os.Remove(filepath.Join(dir, dbfile.ManifestName))
	if _, err := Inspect(dir); !errors.Is(err, engine.ErrCorrupt) {
		t.Errorf("Inspect without MANIFEST: %v, want ErrCorrupt", err)
	}
}

// dirState is every file under a directory with its size, mode, time and
// contents hash.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := make(map[string]string)
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, err := d.Info()
		if err != nil {
			t.Fatal(err)
		}
		sum := ""
		if !d.IsDir() {
			b, _ := os.ReadFile(path)
			sum = fmt.Sprintf("%x", sha256.Sum256(b))
		}
		out[path] = fmt.Sprintf("%d %v %d %s", fi.Size(), fi.Mode(), fi.ModTime().UnixNano(), sum)
		return nil
	})
	return out
}

func TestInspectChangesNothing(t *testing.T) {
	dir := t.TempDir()
	clk := &inspectClock{}
	clk.sec.Store(inspectT0)
	db := openInspectDB(t, dir, clk, nil)
	fillInspectDB(t, db)
	db.Close()
	os.Remove(filepath.Join(dir, "LOCK")) // Inspect must not create one
	before := dirState(t, dir)
	if _, err := Inspect(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(dir); err != nil {
		t.Fatal(err)
	}
	kind, recs, err := DumpFile(filepath.Join(dir, dbfile.SegmentRel(1)))
	if err != nil || kind != FileSegment {
		t.Fatalf("DumpFile: %v %v", kind, err)
	}
	for _, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
	}
	after := dirState(t, dir)
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Errorf("inspection changed the directory:\nbefore %v\nafter  %v", before, after)
	}
}

// TestInspectWhileBusy runs Inspect and Verify while another handle writes,
// seals, compacts and lets items expire, so that files appear and vanish
// under them.
func TestInspectWhileBusy(t *testing.T) {
	dir := t.TempDir()
	db, err := engine.Open(dir, &engine.Options{SealThreshold: 8 << 10, BlockSize: 1 << 10, JournalSegmentSize: 16 << 10, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "busy", DefaultTTL: engine.TTL(1)})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			doc := fmt.Sprintf(`{"id":"k%d","pad":"%0100d"}`, i%500, i)
			if _, err := c.Upsert(ctx, []byte(doc)); err != nil {
				t.Error(err)
				return
			}
			if i%300 == 299 {
				if err := c.Compact(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	deadline := time.Now().Add(3 * time.Second)
	for n := 0; n < 20 || time.Now().Before(deadline); n++ {
		rep, err := Inspect(dir)
		if err != nil {
			t.Fatalf("Inspect #%d: %v", n, err)
		}
		if len(rep.Errors) != 0 {
			t.Errorf("Inspect #%d: errors %v", n, rep.Errors)
		}
		vr, err := Verify(dir)
		if err != nil {
			t.Fatalf("Verify #%d: %v", n, err)
		}
		if !vr.Clean() {
			t.Errorf("Verify #%d: %v", n, vr.Problems)
		}
		if n >= 200 {
			break
		}
	}
	close(stop)
	wg.Wait()
}

func TestInspectDumpFile(t *testing.T) {
	dir := t.TempDir()
	clk := &inspectClock{}
	clk.sec.Store(inspectT0)
	db := openInspectDB(t, dir, clk, func(o *engine.Options) { o.SealThreshold = 1 << 30 })
	fillInspectDB(t, db)
	c, _ := db.Container("sessions")
	if err := c.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Writes after the seal stay in the journal.
	if _, err := c.Upsert(context.Background(), []byte(`{"id":"late","ttl":7}`)); err != nil {
		t.Fatal(err)
	}
	db.Close()

	rep, err := Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, rep.Containers[0].Segments[0].File)
	kind, recs, err := DumpFile(seg)
	if err != nil || kind != FileSegment {
		t.Fatalf("DumpFile(%s): %v %v", seg, kind, err)
	}
	n := 0
	for r, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
		if r.Op != "put" || r.Container != 1 || r.TS != inspectT0 || r.Size == 0 || r.Handle == "" {
			t.Errorf("segment record %+v", r)
		}
		if n == 0 && string(r.Document()) == "" {
			t.Error("no document")
		}
		n++
	}
	if int64(n) != rep.Containers[0].Segments[0].Records {
		t.Errorf("dumped %d records, report says %d", n, rep.Containers[0].Segments[0].Records)
	}

	files, err := journal.Files(filepath.Join(dir, dbfile.JournalDir))
	if err != nil || len(files) == 0 {
		t.Fatalf("journal files: %v %v", files, err)
	}
	kind, recs, err = DumpFile(files[len(files)-1])
	if err != nil || kind != FileJournal {
		t.Fatalf("DumpFile(journal): %v %v", kind, err)
	}
	var last DumpRecord
	for r, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
		last = r
	}
	etag, _ := json.Marshal(docfmt.ETag(last.Seq))
	if last.ID != "late" || last.TTL != 7 || string(last.Document()) != `{"_ts":1700000000,"_etag":`+string(etag)+`,"id":"late","ttl":7}` {
		t.Errorf("last journal record %+v %s", last, last.Document())
	}

	for _, path := range []string{filepath.Join(dir, "nope"), dir, filepath.Join(dir, dbfile.ManifestName)} {
		if _, _, err := DumpFile(path); !errors.Is(err, ErrUnknownFile) {
			t.Errorf("DumpFile(%s): %v, want ErrUnknownFile", path, err)
		}
	}
}

// TestInspectHides checks that Inspect shows, per segment file, the files
// the MANIFEST says it may hide.
func TestInspectHides(t *testing.T) {
	dir := t.TempDir()
	clk := &inspectClock{}
	clk.sec.Store(inspectT0)
	db := openInspectDB(t, dir, clk, nil)
	ctx := context.Background()
	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "h"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "o"})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a", "b", "c"} {
		_, err := c.Upsert(ctx, []byte(fmt.Sprintf(`{"id":%q}`, id)))
		must(err)
	}
	must(other.Compact(ctx)) // seals "h" into file 1
	_, err = c.Upsert(ctx, []byte(`{"id":"a","v":2}`))
	must(err)
	must(c.Delete(ctx, "b"))
	must(other.Compact(ctx)) // seals the new versions, which hide file 1
	must(db.Close())

	rep, err := Inspect(dir)
	must(err)
	raw, err := os.ReadFile(filepath.Join(dir, dbfile.ManifestName))
	must(err)
	m, _, err := dbfile.DecodeManifest(raw, dbfile.ManifestName)
	must(err)
	segs := rep.Containers[0].Segments
	hiding := 0
	for _, s := range segs {
		want := m.Containers[0].Hides[s.Num]
		if fmt.Sprint(s.Hides) != fmt.Sprint(want) {
			t.Errorf("%s: hides %v, the MANIFEST says %v", s.File, s.Hides, want)
		}
		b, err := json.Marshal(s)
		must(err)
		if got := strings.Contains(string(b), `"hides":`); got != (len(want) > 0) {
			t.Errorf("%s: JSON %s", s.File, b)
		}
		if len(s.Hides) > 0 {
			hiding++
			if s.Hides[0] != segs[0].Num {
				t.Errorf("%s hides %v, want file %d", s.File, s.Hides, segs[0].Num)
			}
		}
	}
	if len(segs) < 2 || hiding == 0 {
		t.Errorf("segments %+v: want a later file hiding the first", segs)
	}
}

// TestDumpFileDetects checks that DumpFile tells files by their contents.
func TestDumpFileDetects(t *testing.T) {
	dir := buildVerifyDB(t)
	seg, err := os.ReadFile(filepath.Join(dir, dbfile.SegmentRel(1)))
	if err != nil {
		t.Fatal(err)
	}
	files, err := journal.Files(filepath.Join(dir, dbfile.JournalDir))
	if err != nil {
		t.Fatal(err)
	}
	jrn, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	write := func(name string, b []byte) string {
		t.Helper()
		path := filepath.Join(tmp, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	damage := func(off int) []byte {
		b := bytes.Clone(seg)
		b[off] ^= 0x10
		return b
	}

	// A segment file under any name is a segment file.
	if kind, _, err := DumpFile(write("copy", seg)); kind != FileSegment || err != nil {
		t.Errorf("segment copy: %q %v", kind, err)
	}
	// So is a damaged one, whose damage DumpFile reports.
	for name, b := range map[string][]byte{"footer": damage(len(seg) - 60), "header": damage(9), "cut": seg[:len(seg)/2]} {
		_, _, err := DumpFile(write(name, b))
		var ce *segment.CorruptError
		if !errors.Is(err, engine.ErrCorrupt) || !errors.As(err, &ce) || errors.Is(err, ErrUnknownFile) {
			t.Errorf("segment with damaged %s: %v, want a *segment.CorruptError", name, err)
		}
	}
	kind, recs, err := DumpFile(write("block", damage(40)))
	if kind != FileSegment || err != nil {
		t.Fatalf("segment with a damaged block: %q %v", kind, err)
	}
	var ce *segment.CorruptError
	for _, err = range recs {
		if err != nil {
			break
		}
	}
	if !errors.As(err, &ce) || ce.Block != 0 || ce.Offset != 16 {
		t.Errorf("damaged block: %v", err)
	}

	// A journal file under another name is a journal file.
	if kind, _, err := DumpFile(write("log", jrn)); kind != FileJournal || err != nil {
		t.Errorf("journal copy: %q %v", kind, err)
	}
	// Anything else is unknown.
	for name, b := range map[string][]byte{"text": []byte("hello, world"), "empty": nil} {
		if _, _, err := DumpFile(write(name, b)); !errors.Is(err, ErrUnknownFile) {
			t.Errorf("%s: %v, want ErrUnknownFile", name, err)
		}
	}
}
