package main

import (
	"fmt"
	"io"

	"github.com/ebbdb/ebb/engine/tool"
	"github.com/spf13/cobra"
)

func newVerifyCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify DIR",
		Short: "Check every checksum, record and file of a database",
		Long: `Verify checks a database directory without opening it: the MANIFEST and the
CLOCK file; every segment file's header, footer, block table, the checksum
of every block, every record, and the index against the records; every
journal entry's checksum and record, and that the journal files follow each
other; and that recovery's index rebuild would succeed (the MANIFEST, the
segment files and the journal agree).

It prints each problem with where it is: the file, the byte offset and the
record. Exit status 0 means no damage, 1 damage found, 2 a usage error or a
directory that is not an ebb database.

It takes no lock and changes nothing, so it may run while another process
has the database open. A torn tail of the journal's last file (a write in
progress, or cut short by a crash) is not damage: the next open repairs it,
and verify reports it as a note.`,
		Example: `  ebb verify /var/lib/app/ebb && echo sound`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := tool.Verify(args[0])
			if err != nil {
				return failed(err)
			}
			if err := writeOutput(cmd.OutOrStdout(), asJSON, rep, printVerify); err != nil {
				return failed(err)
			}
			if !rep.Clean() {
				return &exitError{code: exitFailed}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON document")
	return cmd
}

// printVerify writes rep for a person.
func printVerify(w io.Writer, rep *tool.VerifyReport) error {
	p := &printer{w: w}
	c := rep.Checked
	p.printf("verify %s\n", rep.Dir)
	p.printf("  checked: %d container(s), %d segment file(s) with %d record(s), %d journal file(s) with %d entries and %d record(s); index rebuild found %d item(s)\n",
		c.Containers, c.Segments, c.SegmentRecords, c.JournalFiles, c.JournalEntries, c.JournalRecords, c.Items)
	for _, n := range rep.Notes {
		p.printf("note: %s\n", n)
	}
	if rep.Clean() {
		p.printf("OK: no damage found\n")
		return p.err
	}
	t := newTable(w)
	fmt.Fprintln(t, "FILE\tOFFSET\tRECORD\tPROBLEM")
	for _, pr := range rep.Problems {
		off := "-"
		if pr.Offset >= 0 {
			off = fmt.Sprint(pr.Offset)
		}
		rec := pr.Record
		if rec == "" {
			rec = "-"
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\n", pr.File, off, rec, pr.What)
	}
	p.flush(t)
	p.printf("DAMAGED: %d problem(s) found\n", len(rep.Problems))
	return p.err
}
