package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/tool"
)

// TestBenchFill runs the fill workload in a kept folder: it prints its
// rate and latencies, and leaves every item it counted in a sound
// database.
func TestBenchFill(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	stdout, stderr, code := ebb(t, "bench", "fill", "--dir", dir, "--count", "300", "--size", "200", "--batch", "7", "--writers", "3", "--sync=false")
	wantCode(t, code, exitOK, stdout, stderr)
	for _, want := range []string{"fill: 300 items of 200 B, 7 per commit, 3 writers, fsync off", "items/s", "latency per commit: p50", "p99", "bench/ module"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	rep, err := tool.Verify(dir)
	if err != nil || !rep.Clean() {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	db, err := engine.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.Container(benchContainer)
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Items != 300 {
		t.Fatalf("%d items, want 300", st.Items)
	}
}

// TestBenchRead fills with single fsynced upserts, then reads.
func TestBenchRead(t *testing.T) {
	stdout, stderr, code := ebb(t, "bench", "read", "--count", "200", "--size", "100", "--writers", "4", "--readers", "2")
	wantCode(t, code, exitOK, stdout, stderr)
	for _, want := range []string{"fill: 200 items of 100 B, 1 per commit, 4 writers, fsync on", "read: 200 random reads, 2 readers", "latency per read: p50"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

// TestBenchChurn writes items that expire within the run, so that the
// space figures are there.
func TestBenchChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 3 s")
	}
	stdout, stderr, code := ebb(t, "bench", "churn", "--duration", "3s", "--ttl", "1", "--size", "256", "--batch", "10", "--sync=false", "--writers", "2")
	wantCode(t, code, exitOK, stdout, stderr)
	for _, want := range []string{"churn: ", "with ttl 1 s", "space after the first expiry: disk / live bytes mean", "compaction: write amplification"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

// TestBenchUsage: a missing or unknown workload and flags out of range
// are usage errors that say what is wrong, and nothing is written.
func TestBenchUsage(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "name one workload"},
		{[]string{"scan"}, `unknown workload "scan"`},
		{[]string{"fill", "--count", "0"}, "--count 0"},
		{[]string{"fill", "--size", "10"}, "--size 10"},
		{[]string{"fill", "--batch", "101"}, "--batch 101"},
		{[]string{"fill", "--batch", "100", "--size", "100000"}, "at most"},
		{[]string{"churn", "--ttl", "0"}, "--ttl 0"},
		{[]string{"fill", "--count", "x"}, "invalid argument"},
		{[]string{"fill", "--dir", full}, "is not empty"},
	} {
		stdout, stderr, code := ebb(t, append([]string{"bench"}, tc.args...)...)
		wantCode(t, code, exitUsage, stdout, stderr)
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("bench %v: stderr %q, want %q", tc.args, stderr, tc.want)
		}
	}
}
