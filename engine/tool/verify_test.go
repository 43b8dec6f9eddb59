package tool

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/journal"
)

// buildVerifyDB makes a closed database like fillInspectDB's, returning
// its directory.
func buildVerifyDB(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	clk := &inspectClock{}
	clk.sec.Store(inspectT0)
	db := openInspectDB(t, dir, clk, nil)
	fillInspectDB(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// buildJournalDB makes a closed database whose 100 writes are all in the
// journal, spread over many small journal files.
func buildJournalDB(t *testing.T) (dir string, files []string) {
	t.Helper()
	dir = t.TempDir()
	clk := &inspectClock{}
	clk.sec.Store(inspectT0)
	db := openInspectDB(t, dir, clk, func(o *engine.Options) { o.JournalSegmentSize = 1 << 10 })
	c, err := db.CreateContainer(context.Background(), engine.ContainerProperties{ID: "j", DefaultTTL: engine.TTL(-1)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if _, err := c.Upsert(context.Background(), []byte(fmt.Sprintf(`{"id":"k%03d","pad":"%030d"}`, i, i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	files, err = journal.Files(filepath.Join(dir, dbfile.JournalDir))
	if err != nil || len(files) < 4 {
		t.Fatalf("journal files %v: %v", files, err)
	}
	return dir, files
}

func mustVerify(t *testing.T, dir string) *VerifyReport {
	t.Helper()
	rep, err := Verify(dir)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return rep
}

func flipBit(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += int64(len(b))
	}
	b[off] ^= 0x10
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func truncateBy(t *testing.T, path string, n int64) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()-n); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyClean(t *testing.T) {
	dir := buildVerifyDB(t)
	rep := mustVerify(t, dir)
	if !rep.Clean() || len(rep.Notes) != 0 {
		t.Fatalf("problems %v, notes %v", rep.Problems, rep.Notes)
	}
	want := VerifyCounts{Containers: 2, Segments: 3, SegmentRecords: 51, JournalFiles: 1, JournalEntries: 15, JournalRecords: 15, Items: 59} // a seal starts a new journal file and removes the sealed ones
	if rep.Checked != want {
		t.Errorf("checked %+v, want %+v", rep.Checked, want)
	}

	// And while the database is open.
	clk := &inspectClock{}
	clk.sec.Store(inspectT0)
	db := openInspectDB(t, dir, clk, nil)
	defer db.Close()
	if rep := mustVerify(t, dir); !rep.Clean() {
		t.Errorf("open database: %v", rep.Problems)
	}
}

// segmentIndexOffset reads the index block's offset from a segment's footer.
func segmentIndexOffset(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return int64(binary.LittleEndian.Uint64(b[len(b)-128:]))
}

func TestVerifyDamage(t *testing.T) {
	seg1 := dbfile.SegmentRel(1)
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
		file   string
		offset func(t *testing.T, dir string) int64 // nil: -1
		record string
		what   string
	}{
		{
			name:   "flipped bit in a data block",
			damage: func(t *testing.T, dir string) { flipBit(t, filepath.Join(dir, seg1), 40) },
			file:   seg1, offset: func(*testing.T, string) int64 { return 16 }, record: "block 0", what: "checksum mismatch",
		},
		{
			name: "flipped bit in the index block",
			damage: func(t *testing.T, dir string) {
				p := filepath.Join(dir, seg1)
				flipBit(t, p, segmentIndexOffset(t, p)+20)
			},
			file:   seg1,
			offset: func(t *testing.T, dir string) int64 { return segmentIndexOffset(t, filepath.Join(dir, seg1)) },
			record: "index block", what: "checksum mismatch",
		},
		{
			name:   "flipped bit in the footer",
			damage: func(t *testing.T, dir string) { flipBit(t, filepath.Join(dir, seg1), -60) },
			file:   seg1,
			offset: func(t *testing.T, dir string) int64 {
				fi, _ := os.Stat(filepath.Join(dir, seg1))
				return fi.Size() - 128
			},
			record: "footer", what: "checksum mismatch",
		},
		{
			name:   "truncated segment",
			damage: func(t *testing.T, dir string) { truncateBy(t, filepath.Join(dir, seg1), 7) },
			file:   seg1,
			offset: func(t *testing.T, dir string) int64 {
				fi, _ := os.Stat(filepath.Join(dir, seg1))
				return fi.Size() - 128
			},
			record: "footer", what: "footer",
		},
		{
			name:   "missing segment",
			damage: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, seg1)) },
			file:   seg1, what: "missing",
		},
		{
			name:   "flipped bit in the MANIFEST",
			damage: func(t *testing.T, dir string) { flipBit(t, filepath.Join(dir, dbfile.ManifestName), -3) },
			file:   dbfile.ManifestName, what: "checksum mismatch",
		},
		{
			name:   "missing MANIFEST",
			damage: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, dbfile.ManifestName)) },
			file:   dbfile.ManifestName, what: "missing",
		},
		{
			name: "damaged CLOCK",
			damage: func(t *testing.T, dir string) {
				os.WriteFile(filepath.Join(dir, dbfile.ClockName), []byte("0123456789ab"), 0o644)
			},
			file: dbfile.ClockName, offset: func(*testing.T, string) int64 { return 8 }, what: "checksum mismatch",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := buildVerifyDB(t)
			tc.damage(t, dir)
			checkProblem(t, mustVerify(t, dir), dir, tc.file, tc.offset, tc.record, tc.what)
		})
	}
}

func checkProblem(t *testing.T, rep *VerifyReport, dir, file string, offset func(*testing.T, string) int64, record, what string) {
	t.Helper()
	if rep.Clean() {
		t.Fatal("Verify found no problem")
	}
	p := rep.Problems[0]
	want := int64(-1)
	if offset != nil {
		want = offset(t, dir)
	}
	if p.File != file || p.Offset != want || !strings.Contains(p.Record, record) || !strings.Contains(p.What, what) {
		t.Errorf("problem %+v\nwant file %s offset %d record ~%q what ~%q", p, file, want, record, what)
	}
	if len(rep.Problems) > 1 {
		t.Logf("more problems: %v", rep.Problems[1:])
	}
}

func TestVerifyJournalDamage(t *testing.T) {
	t.Run("flipped bit in the last file", func(t *testing.T) {
		dir, files := buildJournalDB(t)
		last := files[len(files)-1]
		flipBit(t, last, 10) // inside the first entry; valid entries follow
		first, _ := journalFileSeq(last)
		rep := mustVerify(t, dir)
		checkProblem(t, rep, dir, dbfile.JournalDir+"/"+filepath.Base(last), func(*testing.T, string) int64 { return 0 },
			fmt.Sprintf("entry seq %d", first), "checksum mismatch; a valid entry follows")
	})
	t.Run("flipped bit in an older file", func(t *testing.T) {
		dir, files := buildJournalDB(t)
		flipBit(t, files[1], -5) // the last entry of a file that is not the tail
		rep := mustVerify(t, dir)
		if rep.Clean() || rep.Problems[0].File != dbfile.JournalDir+"/"+filepath.Base(files[1]) || !strings.Contains(rep.Problems[0].What, "not the last file") {
			t.Errorf("problems %v", rep.Problems)
		}
	})
	t.Run("torn tail", func(t *testing.T) {
		dir, files := buildJournalDB(t)
		truncateBy(t, files[len(files)-1], 3)
		rep := mustVerify(t, dir)
		if !rep.Clean() {
			t.Errorf("a torn tail is not damage: %v", rep.Problems)
		}
		if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "torn tail") || !strings.Contains(rep.Notes[0], "would be repaired on open") {
			t.Errorf("notes %v", rep.Notes)
		}
	})
	t.Run("missing file in the middle", func(t *testing.T) {
		dir, files := buildJournalDB(t)
		os.Remove(files[2])
		rep := mustVerify(t, dir)
		if rep.Clean() || rep.Problems[0].File != dbfile.JournalDir+"/"+filepath.Base(files[3]) || !strings.Contains(rep.Problems[0].What, "are missing") {
			t.Errorf("problems %v", rep.Problems)
		}
	})
	t.Run("missing first file", func(t *testing.T) {
		dir, files := buildJournalDB(t)
		os.Remove(files[0])
		rep := mustVerify(t, dir)
		if rep.Clean() || rep.Problems[0].File != dbfile.JournalDir || !strings.Contains(rep.Problems[0].What, "replay must start at seq 1") {
			t.Errorf("problems %v", rep.Problems)
		}
	})
}

// journalFileSeq returns the seq a journal file's name starts with.
func journalFileSeq(path string) (uint64, error) {
	var seq uint64
	_, err := fmt.Sscanf(filepath.Base(path)[:20], "%d", &seq)
	return seq, err
}

// TestVerifyDamageUnderChecksum changes a segment's blocks and fixes their
// checksums, so that only decoding them finds the damage, and checks that
// Verify says where it is.
func TestVerifyDamageUnderChecksum(t *testing.T) {
	seg1 := dbfile.SegmentRel(1)
	// build makes buildVerifyDB's database with uncompressed blocks.
	build := func(t *testing.T) string {
		dir := t.TempDir()
		clk := &inspectClock{}
		clk.sec.Store(inspectT0)
		db := openInspectDB(t, dir, clk, func(o *engine.Options) { o.Compression = engine.CompressionNone })
		fillInspectDB(t, db)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	// footer returns the offsets of seg1's index and table blocks.
	footer := func(t *testing.T, dir string) (index, table int64) {
		b, err := os.ReadFile(filepath.Join(dir, seg1))
		if err != nil {
			t.Fatal(err)
		}
		f := b[len(b)-128:]
		index = int64(binary.LittleEndian.Uint64(f))
		return index, index + int64(binary.LittleEndian.Uint32(f[8:]))
	}
	// rewrite changes the payload of seg1's block at off and fixes the
	// block's checksum.
	rewrite := func(t *testing.T, dir string, off int64, change func(payload []byte)) {
		path := filepath.Join(dir, seg1)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		h := b[off : off+16]
		payload := b[off+16 : off+16+int64(binary.LittleEndian.Uint32(h))]
		change(payload)
		binary.LittleEndian.PutUint32(h[12:], crc32.Update(crc32.Checksum(h[:12], dbfile.Castagnoli), dbfile.Castagnoli, payload))
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("record", func(t *testing.T) {
		dir := build(t)
		rewrite(t, dir, 16, func(p []byte) { p[0] = 0xc0 }) // not an array
		checkProblem(t, mustVerify(t, dir), dir, seg1, func(*testing.T, string) int64 { return 16 }, "record 0/0", "header byte 0xc0")
	})
	t.Run("index entry", func(t *testing.T) {
		dir := build(t)
		index, _ := footer(t, dir)
		rewrite(t, dir, index, func(p []byte) { p[0] = 0x80 | 9 }) // no such op
		checkProblem(t, mustVerify(t, dir), dir, seg1, func(*testing.T, string) int64 { return index }, "index entry 0", "invalid op")
	})
	t.Run("table block", func(t *testing.T) {
		dir := build(t)
		_, table := footer(t, dir)
		rewrite(t, dir, table, func(p []byte) { // block 0 a byte shorter
			binary.LittleEndian.PutUint32(p, binary.LittleEndian.Uint32(p)-1)
		})
		checkProblem(t, mustVerify(t, dir), dir, seg1, func(*testing.T, string) int64 { return table }, "table block", "data blocks end at")
	})
}
