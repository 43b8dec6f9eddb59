package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine/tool"
)

// TestDemo runs the demo for real (about ten seconds) on a kept directory,
// then inspects and verifies what it left.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes about ten seconds")
	}
	dir := filepath.Join(t.TempDir(), "demo")
	start := time.Now()
	stdout, stderr, code := ebb(t, "demo", "--dir", dir, "--items", "120")
	wantCode(t, code, exitOK, stdout, stderr)
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the demo took %v", d)
	}
	if strings.Contains(stdout, "\r") || strings.Contains(stdout, "\033[") {
		t.Errorf("progress drawn on a non-terminal:\n%q", stdout)
	}

	// Rows: TIME ITEMS LIVE DISK EXPIRED EVENT.
	row := regexp.MustCompile(`(?m)^\+(\d+)s +(\d+) +(\S+ \S+) +(\S+ \S+) +(\d+)   (.*)$`)
	rows := row.FindAllStringSubmatch(stdout, -1)
	if len(rows) < 9 {
		t.Fatalf("%d rows:\n%s", len(rows), stdout)
	}
	items := func(r []string) int { n, _ := strconv.Atoi(r[2]); return n }
	if items(rows[0]) != 120 || items(rows[len(rows)-1]) != 20 {
		t.Errorf("items go from %d to %d, want 120 to 20:\n%s", items(rows[0]), items(rows[len(rows)-1]), stdout)
	}
	compactions := 0
	for i, r := range rows[1:] {
		if items(r) > items(rows[i]) {
			t.Errorf("items grew:\n%s", stdout)
		}
		if strings.HasPrefix(r[6], "compacted") {
			compactions++
			if r[5] != "0" {
				t.Errorf("expired items left after compaction: %q", r[0])
			}
		}
		if strings.Contains(r[6], "expired") && !strings.Contains(r[6], "all on time; read ") {
			t.Errorf("items expired late or early: %q", r[0])
		}
	}
	if compactions < 3 {
		t.Errorf("%d compactions, want one per wave:\n%s", compactions, stdout)
	}
	if !strings.Contains(stdout, "done in ") || !strings.Contains(stdout, "ebb inspect "+dir) {
		t.Errorf("no closing lines:\n%s", stdout)
	}

	// The database is kept and sound.
	stdout, stderr, code = ebb(t, "inspect", "--json", dir)
	wantCode(t, code, exitOK, stdout, stderr)
	var rep tool.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if c := rep.Containers[0]; c.ID != "sessions" || *c.DefaultTTL != 5 || c.Items.Live != 20 || c.Items.NeverExpire != 20 || c.Items.Expired != 0 {
		t.Errorf("inspect after the demo: %+v", c)
	}
	stdout, stderr, code = ebb(t, "verify", dir)
	wantCode(t, code, exitOK, stdout, stderr)
}

func TestDemoUsage(t *testing.T) {
	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "x"), nil, 0o644)
	stdout, stderr, code := ebb(t, "demo", "--dir", full)
	wantCode(t, code, exitUsage, stdout, stderr)
	if !strings.Contains(stderr, "not empty") {
		t.Errorf("stderr %q", stderr)
	}
	stdout, stderr, code = ebb(t, "demo", "--items", "3")
	wantCode(t, code, exitUsage, stdout, stderr)
}
