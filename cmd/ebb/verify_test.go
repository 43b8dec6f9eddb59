package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/journal"
)

func TestVerifyClean(t *testing.T) {
	dir := buildDB(t, true) // open: verify must not need the lock
	stdout, stderr, code := ebb(t, "verify", dir)
	wantCode(t, code, exitOK, stdout, stderr)
	if !strings.Contains(stdout, "OK: no damage found") || !strings.Contains(stdout, "3 segment file(s) with 51 record(s)") {
		t.Errorf("output:\n%s", stdout)
	}
	stdout, stderr, code = ebb(t, "verify", "--json", dir)
	wantCode(t, code, exitOK, stdout, stderr)
	golden(t, "verify-clean", normalize(stdout, dir))
}

func TestVerifyDamage(t *testing.T) {
	cases := []struct {
		name   string
		damage func(dir string)
		want   []string // parts of the problem line
	}{
		{
			name:   "flipped bit",
			damage: func(dir string) { flip(t, filepath.Join(dir, "seg", "00000001.seg"), 40) },
			want:   []string{"seg/00000001.seg", " 16 ", "block 0", "checksum mismatch"},
		},
		{
			name: "truncated segment",
			damage: func(dir string) {
				p := filepath.Join(dir, "seg", "00000002.seg")
				fi, _ := os.Stat(p)
				os.Truncate(p, fi.Size()-100)
			},
			want: []string{"seg/00000002.seg", "footer", "bad magic"},
		},
		{
			name:   "missing segment",
			damage: func(dir string) { os.Remove(filepath.Join(dir, "seg", "00000003.seg")) },
			want:   []string{"seg/00000003.seg", "missing", `container "plain"`},
		},
		{
			name:   "flipped bit in the journal",
			damage: func(dir string) { flip(t, filepath.Join(dir, journalFile), 30) },
			want:   []string{journalFile, "entry seq 52", "checksum mismatch; a valid entry follows"},
		},
		{
			name:   "missing journal",
			damage: func(dir string) { os.Remove(filepath.Join(dir, journalFile)) },
			want:   []string{"journal ", "the journal is empty"},
		},
		{
			name:   "flipped bit in the MANIFEST",
			damage: func(dir string) { flip(t, filepath.Join(dir, "MANIFEST"), -2) },
			want:   []string{"MANIFEST", "manifest checksum mismatch"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := buildDB(t, false)
			tc.damage(dir)
			stdout, stderr, code := ebb(t, "verify", dir)
			wantCode(t, code, exitFailed, stdout, stderr)
			var line string
			for _, l := range strings.Split(stdout, "\n") {
				if strings.HasPrefix(l, tc.want[0]) {
					line = l
					break
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("problem line %q lacks %q; output:\n%s", line, w, stdout)
				}
			}
			if !strings.Contains(stdout, "DAMAGED: ") {
				t.Errorf("no verdict:\n%s", stdout)
			}
		})
	}
}

func TestVerifyDamageJSON(t *testing.T) {
	dir := buildDB(t, false)
	flip(t, filepath.Join(dir, "seg", "00000001.seg"), 40)
	os.Remove(filepath.Join(dir, "seg", "00000003.seg"))
	stdout, stderr, code := ebb(t, "verify", "--json", dir)
	wantCode(t, code, exitFailed, stdout, stderr)
	golden(t, "verify-damaged", normalize(stdout, dir))
}

// TestVerifyJournalCutShort: a journal file that is not the last one, cut
// at an entry boundary, holds only whole entries; verify must still name it
// (where its entries stop), not only the next file, whose seqs leave a gap.
func TestVerifyJournalCutShort(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	clock := func() time.Time { return time.Unix(t0, 0) }
	db, err := engine.Open(dir, &engine.Options{Clock: clock, JournalSegmentSize: 4 << 10, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := db.CreateContainer(context.Background(), engine.ContainerProperties{ID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if _, err := c.Upsert(context.Background(), fmt.Appendf(nil, `{"id":"k%02d","pad":"%0200d"}`, i, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := journal.Files(filepath.Join(dir, "journal"))
	if err != nil || len(files) < 3 {
		t.Fatalf("journal files %v, %v: want at least 3", files, err)
	}
	var offs []int64
	for e, err := range journal.ReadFile(files[0]) {
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, e.Offset)
	}
	cut := offs[len(offs)/2]
	if err := os.Truncate(files[0], cut); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := ebb(t, "verify", dir)
	wantCode(t, code, exitFailed, stdout, stderr)
	first := "journal/" + filepath.Base(files[0])
	var line string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, first) {
			line = l
		}
	}
	for _, w := range []string{first, fmt.Sprint(cut), "entry seq", "cut short"} {
		if !strings.Contains(line, w) {
			t.Errorf("problem line %q lacks %q; output:\n%s", line, w, stdout)
		}
	}
}

func TestVerifyTornTail(t *testing.T) {
	dir := buildDB(t, false)
	p := filepath.Join(dir, journalFile)
	fi, _ := os.Stat(p)
	os.Truncate(p, fi.Size()-3)
	stdout, stderr, code := ebb(t, "verify", dir)
	wantCode(t, code, exitOK, stdout, stderr)
	if !strings.Contains(stdout, "torn tail") || !strings.Contains(stdout, "would be repaired on open") {
		t.Errorf("output:\n%s", stdout)
	}
}

func TestVerifyNotADatabase(t *testing.T) {
	stdout, stderr, code := ebb(t, "verify", t.TempDir())
	wantCode(t, code, exitUsage, stdout, stderr)
	if !strings.Contains(stderr, "is empty") {
		t.Errorf("stderr %q", stderr)
	}
}
