package main

import (
	"fmt"
	"io"
	"time"

	"github.com/ebbdb/ebb/engine/tool"
	"github.com/spf13/cobra"
)

func newInspectCmd() *cobra.Command {
	var (
		asJSON bool
		at     string
	)
	cmd := &cobra.Command{
		Use:   "inspect DIR",
		Short: "Show a database's containers, item counts and files",
		Long: `Inspect shows what a database directory holds: its containers with their
properties (DefaultTTL, indexing, policy history) and item counts, live and
expired; its segment and journal files with their sizes, record counts,
compression ratio, the time ranges of _ts and of expiry, and how much of
each is dead (expired, deleted or superseded records that compaction will
drop).

It reads the MANIFEST, the segment files' footers and indexes and the
journal, without opening the database: it takes no lock and changes
nothing, so it works while another process has the database open.

With --json it prints one JSON document whose shape is stable: fields are
added, never renamed or removed. Times are unix seconds, sizes bytes.`,
		Example: `  ebb inspect /var/lib/app/ebb
  ebb inspect --json /var/lib/app/ebb | jq '.containers[].items'
  ebb inspect --at 2030-01-01T00:00:00Z /var/lib/app/ebb   # what will still be live then`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := &tool.InspectOptions{}
			if at != "" {
				t, err := parseTime(at)
				if err != nil {
					return usageError(fmt.Errorf("inspect --at: %w", err))
				}
				opts.Clock = func() time.Time { return t }
			}
			rep, err := tool.InspectWithOptions(args[0], opts)
			if err != nil {
				return failed(err)
			}
			if err := writeOutput(cmd.OutOrStdout(), asJSON, rep, printReport); err != nil {
				return failed(err)
			}
			if len(rep.Errors) > 0 {
				return &exitError{code: exitFailed, err: fmt.Errorf("inspect: %d file(s) could not be read; run 'ebb verify %s'", len(rep.Errors), args[0])}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON document instead of tables")
	cmd.Flags().StringVar(&at, "at", "", "judge expiry at this instant (unix seconds or RFC 3339) instead of now; never before the database's own clock")
	return cmd
}

// printReport writes rep as human tables.
func printReport(w io.Writer, rep *tool.Report) error {
	p := &printer{w: w}
	p.printf("database %s\n", rep.Dir)
	p.printf("  now %s   clock %s   disk %s\n", fmtTime(rep.Now), fmtTime(rep.Clock), fmtBytes(rep.DiskBytes))
	p.printf("  journal replay from seq %d   next file %d   next container %d\n", rep.JournalFrom, rep.NextFile, rep.NextContainer)

	p.printf("\n")
	if len(rep.Containers) == 0 {
		p.printf("no containers\n")
	} else {
		t := newTable(w)
		fmt.Fprintln(t, "CONTAINER\tDEFAULT TTL\tINDEXING\tLIVE\tEXPIRED\tNEVER EXPIRE\tLIVE BYTES\tDISK BYTES\tDEAD\t_TS\tEXPIRY")
		for _, c := range rep.Containers {
			fmt.Fprintf(t, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n",
				c.ID, fmtTTL(c.DefaultTTL), c.Indexing, c.Items.Live, c.Items.Expired, c.Items.NeverExpire,
				fmtBytes(c.Items.LiveBytes), fmtBytes(c.DiskBytes), fmtShare(c.DeadShare), fmtRange(c.TS), expiryRange(c.Expiry, rep.Now))
		}
		p.flush(t)
		for _, c := range rep.Containers {
			if c.PartitionKeyPath != "" {
				p.printf("%s partition key path: %s\n", c.ID, c.PartitionKeyPath)
			}
		}
		for _, c := range rep.Containers {
			if len(c.History) > 1 {
				p.printf("%s policy history:", c.ID)
				for _, h := range c.History {
					p.printf("  %s from %s;", fmtTTL(h.DefaultTTL), fmtTime(h.At))
				}
				p.printf("\n")
			}
		}
	}

	p.printf("\n")
	t := newTable(w)
	fmt.Fprintln(t, "SEGMENT\tCONTAINER\tBYTES\tBLOCKS\tRECORDS\tPUTS\tDELETES\tRAW\tRATIO\t_TS\tEXPIRY\tDEAD\tHIDES")
	n := 0
	for _, c := range rep.Containers {
		for _, s := range c.Segments {
			n++
			if s.Error != "" {
				fmt.Fprintf(t, "%s\t%s\t%s\t\t\t\t\t\t\t\t\t\n", s.File, c.ID, "error: "+s.Error)
				continue
			}
			fmt.Fprintf(t, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%.1fx\t%s\t%s\t%s\t%s\n",
				s.File, c.ID, fmtBytes(s.Bytes), s.Blocks, s.Records, s.Puts, s.Deletes, fmtBytes(s.RawBytes),
				s.CompressionRatio, fmtRange(s.TS), fmtRange(s.Expiry), fmtShare(s.DeadShare), fmtFiles(s.Hides))
		}
	}
	if n == 0 {
		p.printf("no segment files\n")
	} else {
		p.flush(t)
	}

	p.printf("\n")
	if len(rep.Journal.Files) == 0 {
		p.printf("no journal files\n")
	} else {
		t = newTable(w)
		fmt.Fprintln(t, "JOURNAL FILE\tBYTES\tENTRIES\tSEQ\tSEALED\tRECORDS\t_TS\tNOTE")
		for _, f := range rep.Journal.Files {
			note := f.Note
			if f.Error != "" {
				note = "error: " + f.Error
			}
			fmt.Fprintf(t, "%s\t%s\t%d\t%s\t%d\t%d\t%s\t%s\n",
				f.File, fmtBytes(f.Bytes), f.Entries, fmtSeq(f.Seq), f.Sealed, f.Records, fmtRange(f.TS), note)
		}
		p.flush(t)
		j := rep.Journal
		p.printf("journal: %d record(s) not yet sealed, %s, %s dead\n", j.Records, fmtBytes(j.RawBytes), fmtShare(j.DeadShare))
	}

	if len(rep.Notes)+len(rep.Errors) > 0 {
		p.printf("\n")
	}
	for _, o := range rep.Orphans {
		p.printf("orphan: %s\n", o)
	}
	for _, n := range rep.Notes {
		p.printf("note: %s\n", n)
	}
	for _, e := range rep.Errors {
		p.printf("error: %s\n", e)
	}
	return p.err
}

// expiryRange formats an expiry range with how far its ends are from now.
func expiryRange(r *tool.TimeRange, now int64) string {
	if r == nil {
		return "-"
	}
	if r.Min == r.Max {
		return fmt.Sprintf("%s (%s)", fmtRange(r), fmtRel(r.Min, now))
	}
	return fmt.Sprintf("%s (%s..%s)", fmtRange(r), fmtRel(r.Min, now), fmtRel(r.Max, now))
}

// printer writes formatted output and remembers the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *printer) flush(t interface{ Flush() error }) {
	if err := t.Flush(); p.err == nil {
		p.err = err
	}
}
