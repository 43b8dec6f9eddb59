package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/ebbdb/ebb/engine"
	"github.com/spf13/cobra"
)

// newClockCmd is "ebb clock": the database's clock.
func newClockCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "clock",
		Short: "The database's clock (see: ebb clock reset)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SetOut(cmd.ErrOrStderr())
			cmd.Help()
			return &exitError{code: exitUsage}
		},
	}
	cmd.AddCommand(newClockResetCmd())
	return cmd
}

func newClockResetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "reset DIR",
		Short: "Bring a database's clock back to the wall clock, keeping every expiry final",
		Long: `Reset brings the clock of the database in DIR back to the wall clock, when
the wall clock is behind it. A database's clock never runs backwards: once a
clock far ahead (a fake clock, one bad NTP step) stamped writes, the
database's now goes on from there at the real rate, ahead of the wall clock,
and items written with a ttl expire that much late by the wall clock.

Every expiry stays final: every version expired by the database's clock is
removed from disk first, so none comes back under the earlier wall clock.
Items still live keep their _ts and expiry instants. The database's
DefaultTTL histories start over at the wall clock. The reset is logged.

The database must not be open in another process. Running reset when the
wall clock is not behind changes nothing.`,
		Example: `  ebb clock reset /var/lib/app/ebb`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			res, err := engine.ResetClock(args[0], &engine.Options{Logger: log})
			if err != nil {
				return failed(err)
			}
			w := cmd.OutOrStdout()
			if res.From == res.To {
				fmt.Fprintf(w, "clock of %s: %s, not ahead of the wall clock; nothing to reset\n", args[0], fmtClock(res.From))
				return nil
			}
			fmt.Fprintf(w, "clock of %s reset from %s to %s (the wall clock); every version expired by %s was removed\n",
				args[0], fmtClock(res.From), fmtClock(res.To), fmtClock(res.From))
			return nil
		},
	}
}

// fmtClock is a clock reading in unix seconds, as UTC.
func fmtClock(sec int64) string { return time.Unix(sec, 0).UTC().Format(time.RFC3339) }
