package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const journalFile = "journal/00000000000000000052" // buildDB's journal: the entries after its last seal

func TestDumpSegment(t *testing.T) {
	dir := buildDB(t, true) // open: dump must not need the lock
	seg := filepath.Join(dir, "seg", "00000001.seg")
	stdout, stderr, code := ebb(t, "dump", seg)
	wantCode(t, code, exitOK, stdout, stderr)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != 2+30 {
		t.Fatalf("%d lines, want a title, a header and 30 records:\n%s", len(lines), stdout)
	}
	if lines[0] != "# segment file "+seg || !strings.HasPrefix(lines[1], "OFFSET") {
		t.Errorf("title and header:\n%s\n%s", lines[0], lines[1])
	}
	want := "16         0/0     1          put    1    1700000000 -     77     d00"
	if lines[2] != want {
		t.Errorf("first record\n got %q\nwant %q", lines[2], want)
	}

	stdout, stderr, code = ebb(t, "dump", "--limit", "2", "--values", seg)
	wantCode(t, code, exitOK, stdout, stderr)
	lines = strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != 4 || !strings.HasSuffix(lines[3], ` d01 {"_ts":1700000000,"_etag":"\"0000000000000002\"","id":"d01","pad":"0000000000000000000000000000000000000001"}`) {
		t.Errorf("--limit 2 --values:\n%s", stdout)
	}
}

func TestDumpJSON(t *testing.T) {
	dir := buildDB(t, false)
	for _, tc := range []struct{ name, file string }{
		{"dump-segment", filepath.Join(dir, "seg", "00000001.seg")},
		{"dump-journal", filepath.Join(dir, journalFile)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := ebb(t, "dump", "--json", "--values", "--limit", "4", tc.file)
			wantCode(t, code, exitOK, stdout, stderr)
			for _, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
				var v map[string]any
				if err := json.Unmarshal([]byte(line), &v); err != nil {
					t.Errorf("line %q: %v", line, err)
				}
			}
			golden(t, tc.name, normalize(stdout, dir))
		})
	}
}

func TestDumpJournalTornTail(t *testing.T) {
	dir := buildDB(t, false)
	path := filepath.Join(dir, journalFile)
	fi, _ := os.Stat(path)
	os.Truncate(path, fi.Size()-5)
	stdout, stderr, code := ebb(t, "dump", path)
	wantCode(t, code, exitOK, stdout, stderr)
	if n := strings.Count(stdout, "\n"); n != 2+14 { // the journal holds only the 15 entries after the last seal
		t.Errorf("%d lines, want the 14 records before the torn one:\n%s", n, stdout)
	}
	if !strings.HasPrefix(stderr, "note: ") || !strings.Contains(stderr, "torn") {
		t.Errorf("stderr %q", stderr)
	}
}

func TestDumpDamaged(t *testing.T) {
	dir := buildDB(t, false)
	seg := filepath.Join(dir, "seg", "00000001.seg")
	flip(t, seg, 500) // a data block in the middle of the file
	stdout, stderr, code := ebb(t, "dump", seg)
	wantCode(t, code, exitFailed, stdout, stderr)
	// Where byte 500 falls (a block's header or payload) depends on the
	// codec's output; either way the block is refused as corrupt.
	if !strings.Contains(stderr, "block ") || !strings.Contains(stderr, "corrupt") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("stderr %q", stderr)
	}
	if n := strings.Count(stdout, "\n"); n < 3 || n >= 32 {
		t.Errorf("want the records before the damaged block, got %d lines", n)
	}

	flip(t, seg, -1) // the footer: the file cannot be opened
	stdout, stderr, code = ebb(t, "dump", seg)
	wantCode(t, code, exitFailed, stdout, stderr)
}

func TestDumpNotAFile(t *testing.T) {
	dir := buildDB(t, false)
	for _, path := range []string{filepath.Join(dir, "nope"), dir, filepath.Join(dir, "MANIFEST"), "/dev/zero"} {
		stdout, stderr, code := ebb(t, "dump", path)
		wantCode(t, code, exitUsage, stdout, stderr)
		if !strings.HasPrefix(stderr, "ebb: not a segment or journal file: ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("dump %s: stderr %q", path, stderr)
		}
	}
	stdout, stderr, code := ebb(t, "dump", "--limit", "-1", filepath.Join(dir, journalFile))
	wantCode(t, code, exitUsage, stdout, stderr)
}
