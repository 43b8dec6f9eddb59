package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ebbdb/ebb/engine/tool"
	"github.com/spf13/cobra"
)

// feedPoll is how often ebb feed --follow reads the directory again.
const feedPoll = 100 * time.Millisecond

func newFeedCmd() *cobra.Command {
	var (
		container, from   string
		all, follow, json bool
	)
	cmd := &cobra.Command{
		Use:   "feed DIR --container C",
		Short: "Print a container's change feed, one line per change",
		Long: `Feed prints a container's change feed, as Container.ChangeFeed reads it:
by default the latest version of every live item, ordered by LSN; with --all
every create, replace and delete, and every expiry (a delete marked
expired, at the instant the item expired), which needs the container's
ChangeFeedRetention.

Each line ends with the change's continuation token: --from TOKEN prints
the changes strictly after it. --follow keeps reading, printing new
changes as they reach the disk, until interrupted.

Like inspect, it reads the files without opening the database: it takes
no lock and changes nothing, so it works while another process has the
database open (and may then print journal entries that process has not
yet fsynced). With --json each line is a JSON object: op, id, lsn,
previousLsn, ts, timeToLiveExpired, body, continuation.`,
		Example: `  ebb feed /var/lib/app/ebb --container sessions
  ebb feed /var/lib/app/ebb --container sessions --all --follow --json
  ebb feed /var/lib/app/ebb --container sessions --all --from ebbfeed1.1.1700000000.42.1.42.YQ`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if container == "" {
				return usageError(fmt.Errorf("feed: --container is required"))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			opts := tool.FeedOptions{Container: container, All: all, From: from}
			w := cmd.OutOrStdout()
			for {
				page, err := tool.Feed(args[0], opts)
				if err != nil {
					return failed(err)
				}
				for _, ch := range page.Changes {
					if err := printChange(w, &ch, json); err != nil {
						return failed(err)
					}
					opts.From = ch.Continuation
				}
				if !follow {
					return nil
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(feedPoll):
				}
			}
		},
	}
	cmd.Flags().StringVar(&container, "container", "", "the container's id (required)")
	cmd.Flags().BoolVar(&all, "all", false, "all versions and deletes, expiries included (needs the container's change feed retention)")
	cmd.Flags().StringVar(&from, "from", "", "print the changes after this continuation token")
	cmd.Flags().BoolVar(&follow, "follow", false, "keep printing new changes until interrupted")
	cmd.Flags().BoolVar(&json, "json", false, "print one JSON object per change")
	return cmd
}

// printChange writes one change as a line of text or JSON.
func printChange(w io.Writer, ch *tool.FeedChange, asJSON bool) error {
	if asJSON {
		line := struct {
			*tool.FeedChange
			Body json.RawMessage `json:"body,omitempty"`
		}{ch, ch.Body}
		b, err := json.Marshal(line)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	op := ch.Op
	if ch.TTLExpired {
		op = "expire"
	}
	body := "-"
	if ch.Body != nil {
		body = string(ch.Body)
	}
	_, err := fmt.Fprintf(w, "%-20d %-7s %-20s %s prev=%d %s %s\n", ch.LSN, op, showID(ch.ID, ch.PartitionKey), fmtTime(ch.TS), ch.PreviousLSN, body, ch.Continuation)
	return err
}
