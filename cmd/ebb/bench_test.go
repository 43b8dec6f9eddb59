package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchFindsTheHarness(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := findBenchDir(wd)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.Abs(filepath.Join("..", "..", "bench"))
	if dir != want {
		t.Fatalf("findBenchDir = %s, want %s", dir, want)
	}
	if _, err := findBenchDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "--bench-dir") {
		t.Fatalf("outside a checkout: %v", err)
	}
}

func TestBenchArgs(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		dir, out string
		bad      bool
	}{
		{args: nil, out: "[]"},
		{args: []string{"churn", "--stores", "ebb"}, out: "[churn --stores ebb]"},
		{args: []string{"--bench-dir", "/x", "fill"}, dir: "/x", out: "[fill]"},
		{args: []string{"--bench-dir=/y"}, dir: "/y", out: "[]"},
		{args: []string{"--bench-dir"}, bad: true},
	} {
		dir, rest, err := benchDirArg(tc.args)
		if (err != nil) != tc.bad {
			t.Errorf("%v: err %v", tc.args, err)
			continue
		}
		if !tc.bad && (dir != tc.dir || strings.Join(rest, " ") != strings.Trim(tc.out, "[]")) {
			t.Errorf("%v: dir %q rest %v", tc.args, dir, rest)
		}
	}
}

func TestBenchBadDirIsUsageError(t *testing.T) {
	stdout, stderr, code := ebb(t, "bench", "--bench-dir", t.TempDir())
	wantCode(t, code, exitUsage, stdout, stderr)
	if !strings.Contains(stderr, "not the harness module") {
		t.Errorf("stderr %q", stderr)
	}
}
