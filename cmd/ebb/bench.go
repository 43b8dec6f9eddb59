package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// benchModule is the module path of the benchmark harness.
const benchModule = "github.com/ebbdb/ebb/bench"

func newBenchCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "bench [--bench-dir DIR] [WORKLOAD] [FLAGS]",
		Short: "Run the benchmark harness: ebb side by side with Badger, Pebble, bbolt and BuntDB",
		Long: `Bench runs ebb's benchmark harness, which compares ebb with Badger, Pebble,
bbolt and BuntDB on the same workloads (fill, read, churn, storm, scale) and
writes tables, JSON and charts.

The harness is its own Go module (bench/ in the repository), so that the
peers it measures never enter the engine's dependencies. This verb runs
'go run . WORKLOAD FLAGS' there: in the bench/ folder of the checkout that
holds the current directory, or in --bench-dir. With no workload it runs
the quick suite (a few minutes); 'ebb bench --help' lists the harness's
own workloads and flags after this text.`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, args, err := benchDirArg(args)
			if err != nil {
				return usageError(err)
			}
			if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
				cmd.Help()
			}
			if dir == "" {
				wd, err := os.Getwd()
				if err != nil {
					return failed(err)
				}
				if dir, err = findBenchDir(wd); err != nil {
					return usageError(err)
				}
			} else if err := checkBenchDir(dir); err != nil {
				return usageError(err)
			}
			run := exec.CommandContext(cmd.Context(), "go", append([]string{"run", "."}, args...)...)
			run.Dir = dir
			run.Stdin = os.Stdin
			run.Stdout = cmd.OutOrStdout()
			run.Stderr = cmd.ErrOrStderr()
			if err := run.Run(); err != nil {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					return &exitError{code: exitFailed} // the harness said why
				}
				return failed(fmt.Errorf("bench: run the harness in %s: %w", dir, err))
			}
			return nil
		},
	}
}

// benchDirArg takes a leading --bench-dir DIR (or --bench-dir=DIR) off args.
func benchDirArg(args []string) (dir string, rest []string, err error) {
	if len(args) == 0 {
		return "", args, nil
	}
	if v, ok := strings.CutPrefix(args[0], "--bench-dir="); ok {
		return v, args[1:], nil
	}
	if args[0] == "--bench-dir" {
		if len(args) < 2 {
			return "", nil, errors.New("bench: --bench-dir needs a folder")
		}
		return args[1], args[2:], nil
	}
	return "", args, nil
}

// findBenchDir looks for the harness module in the bench/ folder of start
// or of any folder above it.
func findBenchDir(start string) (string, error) {
	for d := start; ; d = filepath.Dir(d) {
		if cand := filepath.Join(d, "bench"); checkBenchDir(cand) == nil {
			return cand, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("bench: no bench/ module (%s) in %s or above it; run from a checkout of ebb or give --bench-dir", benchModule, start)
		}
	}
}

// checkBenchDir reports whether dir holds the harness module.
func checkBenchDir(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return fmt.Errorf("bench: %s is not the harness module: %w", dir, err)
	}
	if !bytes.Contains(b, []byte("module "+benchModule+"\n")) {
		return fmt.Errorf("bench: %s/go.mod is not module %s", dir, benchModule)
	}
	return nil
}
