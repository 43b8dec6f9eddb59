package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
			damage: func(dir string) { os.Remove(filepath.Join(dir, "seg", "00000004.seg")) },
			want:   []string{"seg/00000004.seg", "missing", `container "plain"`},
		},
		{
			name:   "flipped bit in the journal",
			damage: func(dir string) { flip(t, filepath.Join(dir, journalFile), 30) },
			want:   []string{journalFile, "entry seq 1", "checksum mismatch; a valid entry follows"},
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
	os.Remove(filepath.Join(dir, "seg", "00000004.seg"))
	stdout, stderr, code := ebb(t, "verify", "--json", dir)
	wantCode(t, code, exitFailed, stdout, stderr)
	golden(t, "verify-damaged", normalize(stdout, dir))
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
