package crashloop

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for the child: Run re-executes it
// with the child's environment.
func TestMain(m *testing.M) {
	if IsChild() {
		os.Exit(ChildMain())
	}
	os.Exit(m.Run())
}

// testCommand re-executes the test binary as the child.
func testCommand(env []string) *exec.Cmd {
	return exec.Command(os.Args[0], "-test.run=^$")
}

// logWriter sends progress lines to t.Log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestCrashLoop is the loop CI runs: about ten seconds of rounds with clock
// faults. EBB_CRASHLOOP_SOAK=10m runs it for longer; EBB_CRASHLOOP_SEED
// replays a seed's choices.
func TestCrashLoop(t *testing.T) {
	cfg := Config{
		Dir:         t.TempDir(),
		Duration:    10 * time.Second,
		ClockFaults: true,
		Command:     testCommand,
		Progress:    logWriter{t},
	}
	if testing.Short() {
		cfg.Duration = 3 * time.Second
	}
	if s := os.Getenv("EBB_CRASHLOOP_SOAK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("EBB_CRASHLOOP_SOAK=%q: %v", s, err)
		}
		cfg.Duration = d
	}
	if s := os.Getenv("EBB_CRASHLOOP_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("EBB_CRASHLOOP_SEED=%q: %v", s, err)
		}
		cfg.Seed = seed
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seed %d: %d rounds in %s: %d ops acknowledged, %d in flight at a kill, %d checked, %d items checked, %d batches checked, %d kills (%d during Open), %d restarts, %d policy changes, %d compactions, clock jumps %d back %d forward, %d clock lags, %d expiries relied on, %d kills at a hold",
		rep.Seed, rep.Rounds, rep.Duration.Round(time.Millisecond), rep.OpsAcknowledged, rep.OpsInFlight, rep.OpsChecked, rep.ItemsChecked,
		rep.BatchesChecked, rep.Kills, rep.EarlyKills, rep.Restarts, rep.PolicyChanges, rep.Compactions, rep.ClockJumpsBack, rep.ClockJumpsForward, rep.ClockLags,
		rep.ExpiriesRelied, rep.HoldKills)
	if rep.Rounds < 2 || rep.Kills != rep.Rounds || rep.OpsAcknowledged == 0 || rep.ItemsChecked == 0 {
		t.Errorf("the loop exercised too little: %+v", rep)
	}
	if rep.Rounds >= 8 && rep.ExpiriesRelied == 0 {
		t.Errorf("%d rounds and no answer found an item expired: the restart's clock floor was never tested", rep.Rounds)
	}
	if rep.Rounds >= 8 && rep.ClockJumpsBack+rep.ClockJumpsForward == 0 {
		t.Errorf("%d rounds with clock faults and no jump", rep.Rounds)
	}
}

// TestCrashLoopSteadyClock runs two rounds without clock faults.
func TestCrashLoopSteadyClock(t *testing.T) {
	// A round may be killed before any write is acknowledged (during Open,
	// one round in six, or at once after a target of 0 acknowledgements), so
	// both rounds of a run can end without one: then the run is repeated,
	// up to three times, rather than the check dropped.
	for attempt := 1; ; attempt++ {
		rep, err := Run(context.Background(), Config{Dir: t.TempDir(), Rounds: 2, Workers: 4, Command: testCommand})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Rounds != 2 || rep.ClockJumpsBack+rep.ClockJumpsForward != 0 {
			t.Fatalf("report %+v", rep)
		}
		if rep.OpsAcknowledged > 0 {
			return
		}
		if attempt == 3 {
			t.Fatalf("three runs acknowledged no operation; last report %+v", rep)
		}
		t.Logf("run %d acknowledged no operation (early kills %d of %d rounds); again", attempt, rep.EarlyKills, rep.Rounds)
	}
}

// TestRunConfig: a Config without its required fields is refused.
func TestRunConfig(t *testing.T) {
	if _, err := Run(context.Background(), Config{Command: testCommand}); err == nil {
		t.Error("Run without Dir succeeded")
	}
	if _, err := Run(context.Background(), Config{Dir: t.TempDir()}); err == nil {
		t.Error("Run without Command succeeded")
	}
	var v *Violation = &Violation{}
	if !errors.Is(v, ErrViolation) {
		t.Error("a Violation does not match ErrViolation")
	}
}
