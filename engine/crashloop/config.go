package crashloop

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// Config says what Run does.
type Config struct {
	// Dir is a working folder: the database lives in Dir/db, and the log of
	// a round that failed a check is kept beside it. Required.
	Dir string
	// Seed drives the parent's choices (kill moments, clocks) and seeds the
	// child's workload. Threads make a round's interleaving differ from run
	// to run, so a seed replays the choices, not the exact operations.
	// 0: a seed from the time, reported in Report.Seed.
	Seed uint64
	// Rounds is how many kill-and-check rounds to run when Duration is 0.
	// Default 20.
	Rounds int
	// Duration, when set, runs rounds until it has passed (a soak), at
	// least one.
	Duration time.Duration
	// Workers is how many goroutines of the child write. Default 8.
	Workers int
	// Command returns an unstarted command that runs this program again as
	// the child: a program whose main calls ChildMain when IsChild reports
	// true (the ebb binary re-executes itself; a test re-executes its test
	// binary). Run appends env, which selects the child and its round, to
	// the command's environment (to os.Environ() when Env is nil) and
	// takes its stdout and stderr. Required.
	Command func(env []string) *exec.Cmd
	// ClockFaults makes the wall clock jump hours back and forward during
	// rounds and between them.
	ClockFaults bool
	// Progress, when set, receives a line per round (per five seconds in a
	// soak).
	Progress io.Writer
}

// Report is what Run did and found.
type Report struct {
	Seed   uint64 `json:"seed"`
	Rounds int    `json:"rounds"`
	// Kills counts children killed with SIGKILL; EarlyKills those killed
	// while still opening the database (during recovery).
	Kills      int `json:"kills"`
	EarlyKills int `json:"early_kills"`
	// Restarts counts opens of the database: the children's and the
	// checker's.
	Restarts int `json:"restarts"`
	// OpsAcknowledged counts acknowledged writes (each operation of a
	// batch) and DefaultTTL changes; OpsInFlight those the kill cut short.
	OpsAcknowledged int64 `json:"ops_acknowledged"`
	OpsInFlight     int64 `json:"ops_in_flight"`
	// OpsChecked counts operations a check examined: acknowledged writes
	// (their _ts and preconditions), refusals of a worker's own ids,
	// in-flight writes (whole or absent), DefaultTTL changes and the
	// children's point reads (each against the expiry model).
	OpsChecked int64 `json:"ops_checked"`
	// ItemsChecked counts items read back and compared with the model
	// after a restart (and again after a compaction).
	ItemsChecked int64 `json:"items_checked"`
	// BatchesChecked counts in-flight batches checked to be whole or absent.
	BatchesChecked int `json:"batches_checked"`
	// Compactions counts Compact calls the children finished.
	Compactions int `json:"compactions"`
	// PolicyChanges counts acknowledged DefaultTTL changes.
	PolicyChanges int `json:"policy_changes"`
	// ClockJumpsBack and ClockJumpsForward count jumps of the wall clock by
	// ten minutes or more, during rounds and between them.
	ClockJumpsBack    int `json:"clock_jumps_back"`
	ClockJumpsForward int `json:"clock_jumps_forward"`
	// ClockLags counts restarts whose clock was behind the engine's now
	// that the killed child had reached: observed time that the CLOCK file
	// had not persisted yet, in which nothing was seen to expire, which the
	// engine is allowed to lose.
	ClockLags int `json:"clock_lags"`
	// ExpiriesRelied counts the children's acknowledged answers (reads and
	// refusals of their own ids) that relied on an item having expired:
	// each makes its expiry instant a floor of the now after the restart.
	ExpiriesRelied int64 `json:"expiries_relied"`
	// HoldKills counts children killed right after a hold: a clock jump
	// observed by reads alone, which found items expired, with nothing
	// written after it (see the package doc).
	HoldKills int           `json:"hold_kills"`
	Duration  time.Duration `json:"duration_ns"`
	// Violation is the first broken guarantee, or nil.
	Violation *Violation `json:"violation,omitempty"`
}

// ErrViolation is what a Violation matches with errors.Is.
var ErrViolation = errors.New("crashloop: violation")

// Violation is a broken guarantee, with what it takes to look into it.
type Violation struct {
	Seed  uint64 `json:"seed"`
	Round int    `json:"round"`
	// What says what is wrong.
	What string `json:"what"`
	// Lines are the round's log lines about the item (or step) concerned.
	Lines []string `json:"lines,omitempty"`
	// Log is the file that holds the round's whole log; DBDir the database.
	Log   string `json:"log,omitempty"`
	DBDir string `json:"db_dir,omitempty"`
}

func (v *Violation) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "crashloop: round %d (seed %d): %s", v.Round, v.Seed, v.What)
	if len(v.Lines) > 0 {
		b.WriteString("\n\tlog:\n\t  " + strings.Join(v.Lines, "\n\t  "))
	}
	if v.Log != "" {
		fmt.Fprintf(&b, "\n\tround log: %s", v.Log)
	}
	if v.DBDir != "" {
		fmt.Fprintf(&b, "\n\tdatabase: %s", v.DBDir)
	}
	return b.String()
}

func (v *Violation) Is(target error) bool { return target == ErrViolation }
