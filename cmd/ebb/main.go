// Command ebb is the command line of ebb, an embedded document store whose
// items expire exactly as Azure Cosmos DB's do.
//
//	ebb demo [--dir DIR]                 watch items expire on time and disk space come back
//	ebb inspect DIR [--json] [--at T]    containers, item counts and files of a database
//	ebb dump FILE [--json] [--limit N] [--values]
//	                                     the records of one segment or journal file
//	ebb verify DIR [--json]              check every checksum, record and file of a database
//	ebb bench [WORKLOAD] [FLAGS]         the benchmark harness (bench/), ebb beside its peers
//	ebb crashloop [--soak 10m]           kill a writer again and again; check what survives
//	ebb clock reset DIR                  bring a database's clock back to the wall clock
//	ebb feed DIR --container C           print a container's change feed
//	ebb serve [--addr A] [--dir DIR]     serve the Azure Cosmos DB REST API over ebb (HTTPS)
//
// The inspector verbs (inspect, dump, verify) open files read-only, never
// change them and take no lock, so they work while another process has the
// database open.
//
// # Exit codes
//
//	0  success; for verify, no damage found
//	1  the command failed; for verify, damage found
//	2  usage error: unknown verb or flag, wrong arguments, or a directory
//	   that does not exist, is empty, or is not an ebb database
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/tool"
	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run runs the command line args, writing to stdout and stderr, and returns
// the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	if args == nil {
		args = []string{} // cobra reads os.Args for nil
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if !errors.As(err, &ee) {
		// Cobra's own errors come before a verb runs: an unknown verb or
		// flag, or the wrong number of arguments.
		ee = &exitError{code: exitUsage, err: err}
	}
	if ee.err != nil {
		fmt.Fprintln(stderr, errorLine(ee.err))
	}
	if ee.code == exitUsage && ee.err != nil && !errors.Is(ee.err, engine.ErrNoDatabase) && !errors.Is(ee.err, tool.ErrUnknownFile) {
		fmt.Fprintln(stderr, "Run 'ebb --help' for usage.")
	}
	return ee.code
}

// exitError carries the exit code of a failed command; a nil err means the
// command has already said what went wrong.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func usageError(err error) error { return &exitError{code: exitUsage, err: err} }

// failed is the error of a command that failed: exit 1, or exit 2 when the
// path given is not an ebb database or file.
func failed(err error) error {
	if errors.Is(err, engine.ErrNoDatabase) || errors.Is(err, tool.ErrUnknownFile) {
		return &exitError{code: exitUsage, err: err}
	}
	return &exitError{code: exitFailed, err: err}
}

// errorLine is err as one line prefixed "ebb: ".
func errorLine(err error) string {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	if !strings.HasPrefix(msg, "ebb: ") {
		msg = "ebb: " + msg
	}
	return msg
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "ebb",
		Short: "ebb is an embedded document store with Cosmos-DB-exact TTL",
		Long: `ebb is an embedded document store whose items expire exactly as Azure
Cosmos DB's do: invisible the instant they expire, their disk space back
soon after.

Start with 'ebb demo'. The inspector verbs (inspect, dump, verify) open
files read-only and take no lock, so they work while another process has
the database open.

Exit codes: 0 success (verify: no damage); 1 failure (verify: damage
found); 2 usage error, or a directory that is not an ebb database.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SetOut(cmd.ErrOrStderr())
			cmd.Help()
			return &exitError{code: exitUsage}
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	root.AddCommand(newDemoCmd(), newInspectCmd(), newDumpCmd(), newVerifyCmd(), newBenchCmd(), newCrashloopCmd())
	root.AddCommand(newClockCmd(), newFeedCmd(), newServeCmd())
	return root
}

// exactArgs is cobra.ExactArgs with a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageError(fmt.Errorf("%s: %w", cmd.Name(), err))
		}
		return nil
	}
}
