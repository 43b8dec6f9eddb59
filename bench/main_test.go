package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLI runs one small workload through the command line, with a report.
func TestCLI(t *testing.T) {
	tmp := t.TempDir()
	out, report := filepath.Join(tmp, "results"), filepath.Join(tmp, "RESULTS.md")
	root := newRoot()
	var stdout bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stdout)
	root.SetArgs([]string{"fill", "--fill-n", "200", "--stores", "ebb,bbolt", "--dir", filepath.Join(tmp, "scratch"),
		"--out", out, "--report", report, "--progress", "on"})
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	for _, want := range []string{"### fill", "| ebb | batch | 1 | 200 |", "| bbolt |", "report written to"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	if _, err := os.Stat(filepath.Join(out, "fill.json")); err != nil {
		t.Error(err)
	}
	b, err := os.ReadFile(report)
	if err != nil || !strings.Contains(string(b), "## fill") || !strings.Contains(string(b), "(with overrides)") {
		t.Errorf("report: %v\n%s", err, b)
	}
}

func TestCLIRejects(t *testing.T) {
	for _, args := range [][]string{
		{"fill", "--stores", "nosuchstore", "--out", ""},
		{"fill", "--progress", "sometimes", "--out", ""},
		{"nosuchworkload"},
	} {
		root := newRoot()
		var sink bytes.Buffer
		root.SetOut(&sink)
		root.SetErr(&sink)
		root.SetArgs(args)
		if err := root.ExecuteContext(context.Background()); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
