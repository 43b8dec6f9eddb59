package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"time"

	"github.com/ebbdb/ebb/engine/crashloop"
	"github.com/spf13/cobra"
)

func newCrashloopCmd() *cobra.Command {
	var (
		dir      string
		soak     time.Duration
		rounds   int
		seed     uint64
		workers  int
		noFaults bool
		asJSON   bool
		child    bool
	)
	cmd := &cobra.Command{
		Use:   "crashloop [--dir DIR] [--soak 10m | --rounds N] [--seed S] [--workers W] [--no-clock-faults] [--json]",
		Short: "Kill a writing process again and again and check that nothing acknowledged is lost",
		Long: `Crashloop runs ebb's crash loop (package engine/crashloop): a child process
(this program again) runs a mixed workload on a database (writes with item
ttls, deletes, batches, DefaultTTL changes, compactions, concurrent writers)
and is killed with SIGKILL at a random moment; the database is reopened and
checked against the child's log: no acknowledged write lost, no
unacknowledged write half visible, nothing expired or deleted back, the
clock never running backwards. Unless --no-clock-faults, the wall clock
jumps hours back and forward during rounds and between them.

It runs --rounds rounds (default 20), or rounds for the --soak duration, in
--dir (default: a temporary folder, removed unless a check fails). Exit
status 0 means every check passed, 1 a violation (printed with the seed,
the round and its log lines), 2 a usage error.`,
		Example: `  ebb crashloop --soak 10m
  ebb crashloop --rounds 50 --seed 42 --dir /tmp/loop`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if child {
				if !crashloop.IsChild() {
					return usageError(errors.New("crashloop: --child is for the process the crash loop starts"))
				}
				return &exitError{code: crashloop.ChildMain()}
			}
			if soak > 0 && cmd.Flags().Changed("rounds") {
				return usageError(errors.New("crashloop: give --soak or --rounds, not both"))
			}
			if soak < 0 || rounds < 1 || workers < 1 {
				return usageError(errors.New("crashloop: --soak, --rounds and --workers must be positive"))
			}
			exe, err := os.Executable()
			if err != nil {
				return failed(err)
			}
			keep := dir != ""
			if !keep {
				if dir, err = os.MkdirTemp("", "ebb-crashloop-"); err != nil {
					return failed(err)
				}
			}
			progress := cmd.OutOrStdout()
			if asJSON {
				progress = cmd.ErrOrStderr()
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			rep, err := crashloop.Run(ctx, crashloop.Config{
				Dir:         dir,
				Seed:        seed,
				Rounds:      rounds,
				Duration:    soak,
				Workers:     workers,
				ClockFaults: !noFaults,
				Progress:    progress,
				Command:     func([]string) *exec.Cmd { return exec.Command(exe, "crashloop", "--child") },
			})
			if err != nil && !errors.Is(err, crashloop.ErrViolation) {
				return failed(err)
			}
			if werr := writeOutput(cmd.OutOrStdout(), asJSON, rep, printCrashloop); werr != nil {
				return failed(werr)
			}
			if rep.Violation != nil {
				return &exitError{code: exitFailed}
			}
			if !keep {
				os.RemoveAll(dir)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "working folder (kept); default a temporary one")
	f.DurationVar(&soak, "soak", 0, "run rounds for this long, e.g. 10m")
	f.IntVar(&rounds, "rounds", 20, "rounds to run")
	f.Uint64Var(&seed, "seed", 0, "seed of the loop's choices (0: from the time)")
	f.IntVar(&workers, "workers", 8, "writing goroutines of the child")
	f.BoolVar(&noFaults, "no-clock-faults", false, "keep the wall clock steady")
	f.BoolVar(&asJSON, "json", false, "print a JSON document")
	f.BoolVar(&child, "child", false, "run as the crash loop's child")
	f.MarkHidden("child")
	return cmd
}

// printCrashloop writes rep for a person.
func printCrashloop(w io.Writer, rep crashloop.Report) error {
	p := &printer{w: w}
	p.printf("crashloop: %d rounds in %s, seed %d\n", rep.Rounds, shortDuration(rep.Duration), rep.Seed)
	p.printf("  operations: %d acknowledged, %d in flight at a kill, %d checked; %d DefaultTTL changes, %d compactions\n",
		rep.OpsAcknowledged, rep.OpsInFlight, rep.OpsChecked, rep.PolicyChanges, rep.Compactions)
	p.printf("  items: %d checked after restarts; %d in-flight batches checked whole or absent\n", rep.ItemsChecked, rep.BatchesChecked)
	p.printf("  process: %d kills (%d during Open), %d restarts\n", rep.Kills, rep.EarlyKills, rep.Restarts)
	p.printf("  clock: %d jumps back, %d forward; %d restarts behind the killed child's clock (observed time a crash lost)\n",
		rep.ClockJumpsBack, rep.ClockJumpsForward, rep.ClockLags)
	p.printf("  expiry: %d answers relied on an item having expired (none may come back); %d kills right after a clock jump seen by reads alone\n",
		rep.ExpiriesRelied, rep.HoldKills)
	if rep.Violation == nil {
		p.printf("OK: every check passed\n")
		return p.err
	}
	p.printf("VIOLATION: %s\n", rep.Violation.Error())
	p.printf("replay the loop's choices with --seed %d\n", rep.Violation.Seed)
	return p.err
}
