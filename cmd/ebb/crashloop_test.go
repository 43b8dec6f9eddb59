package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ebbdb/ebb/engine/crashloop"
)

func TestCrashloopUsage(t *testing.T) {
	cases := []struct {
		args   []string
		stderr string
	}{
		{[]string{"crashloop", "--soak", "1m", "--rounds", "3"}, "not both"},
		{[]string{"crashloop", "--rounds", "0"}, "must be positive"},
		{[]string{"crashloop", "--soak", "soon"}, "invalid argument"},
		{[]string{"crashloop", "somewhere"}, "unknown command"},
		{[]string{"crashloop", "--child"}, "--child is for the process"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			stdout, stderr, code := ebb(t, tc.args...)
			wantCode(t, code, exitUsage, stdout, stderr)
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr, tc.stderr)
			}
		})
	}
}

// TestCrashloopRuns runs two rounds as a shell would: the ebb process
// starts itself again as the child.
func TestCrashloopRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs subprocesses")
	}
	dir := filepath.Join(t.TempDir(), "loop")
	stdout, stderr, code := ebbProcess(t, "crashloop", "--rounds", "2", "--workers", "3", "--seed", "7", "--dir", dir, "--json")
	wantCode(t, code, exitOK, stdout, stderr)
	var rep crashloop.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("output is not a report: %v\n%s", err, stdout)
	}
	if rep.Rounds != 2 || rep.Seed != 7 || rep.Kills != 2 || rep.OpsAcknowledged == 0 || rep.Violation != nil {
		t.Errorf("report %+v", rep)
	}
	if !strings.Contains(stderr, "done: 2") {
		t.Errorf("no progress on stderr with --json: %q", stderr)
	}
}

func TestPrintCrashloop(t *testing.T) {
	rep := crashloop.Report{Seed: 9, Rounds: 3, OpsAcknowledged: 120, Kills: 3, ClockJumpsBack: 2}
	var b bytes.Buffer
	if err := printCrashloop(&b, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3 rounds", "seed 9", "120 acknowledged", "2 jumps back", "OK: every check passed"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
	rep.Violation = &crashloop.Violation{Seed: 9, Round: 2, What: "an expired item came back", Lines: []string{"clock 1 5 5"}}
	b.Reset()
	printCrashloop(&b, rep)
	for _, want := range []string{"VIOLATION", "round 2", "an expired item came back", "clock 1 5 5", "--seed 9"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}
