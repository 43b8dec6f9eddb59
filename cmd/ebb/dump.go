package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/ebbdb/ebb/engine/journal"
	"github.com/ebbdb/ebb/engine/tool"
	"github.com/spf13/cobra"
)

func newDumpCmd() *cobra.Command {
	var (
		asJSON bool
		values bool
		limit  int
	)
	cmd := &cobra.Command{
		Use:   "dump SEGMENT-OR-JOURNAL-FILE",
		Short: "Print the records of one segment or journal file",
		Long: `Dump prints one line per record of a segment file (seg/NNNNNNNN.seg) or a
journal file (journal/NNNNNNNNNNNNNNNNNNNN, or a copy kept in broken/):
where it is, its seq, op, container number, _ts, own ttl ("-" when absent),
encoded size and id, and with --values the document as a read returns it.

The file is decoded on its own, without opening the database: nothing is
locked or changed. With --json each line is a JSON object.

Decoding stops at the first damage, which is reported after the records
before it (exit 1). A torn tail of a journal file (a write in progress, or
cut short by a crash) is reported as a note (exit 0).`,
		Example: `  ebb dump /var/lib/app/ebb/seg/00000007.seg --limit 20
  ebb dump --json --values /var/lib/app/ebb/journal/00000000000000000001 | jq .doc`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return usageError(fmt.Errorf("dump --limit %d: want 0 (no limit) or more", limit))
			}
			kind, recs, err := tool.DumpFile(args[0])
			if err != nil {
				return failed(err)
			}
			out := cmd.OutOrStdout()
			if !asJSON {
				if _, err := fmt.Fprintf(out, "# %s file %s\n%-10s %-7s %-10s %-6s %-4s %-10s %-5s %-6s %s\n", kind, args[0],
					"OFFSET", "REC", "SEQ", "OP", "CONT", "_TS", "TTL", "SIZE", "ID"); err != nil {
					return failed(err)
				}
			}
			n := 0
			for r, err := range recs {
				if err != nil {
					var ce *journal.CorruptError
					if errors.As(err, &ce) && ce.Torn {
						fmt.Fprintf(cmd.ErrOrStderr(), "note: %v (a write in progress, or cut short by a crash: repaired when the database opens)\n", err)
						break
					}
					return failed(fmt.Errorf("after %d record(s): %w", n, err))
				}
				if limit > 0 && n == limit {
					break
				}
				n++
				if asJSON {
					err = dumpJSON(out, kind, &r, values)
				} else {
					err = dumpLine(out, kind, &r, values)
				}
				if err != nil {
					return failed(err)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per record")
	cmd.Flags().BoolVar(&values, "values", false, "include each record's document")
	cmd.Flags().IntVar(&limit, "limit", 0, "stop after `N` records (0: all)")
	return cmd
}

// dumpLine writes r as one line of text.
func dumpLine(w io.Writer, kind tool.FileKind, r *tool.DumpRecord, values bool) error {
	at := r.Handle
	if kind == tool.FileJournal {
		at = fmt.Sprintf("#%d", r.Entry)
	}
	line := fmt.Sprintf("%-10d %-7s %-10d %-6s %-4d %-10d %-5s %-6d %s", r.Offset, at, r.Seq, r.Op, r.Container, r.TS, fmtItemTTL(r.TTL), r.Size, showID(r.ID, r.PartitionKey))
	if values {
		if doc := r.Document(); doc != nil {
			line += " " + string(doc)
		}
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// showID is an item's id (quoteID) followed, in a container with a
// partition key, by " pk=" and the key's header form: `x pk=["a"]`.
func showID(id, key string) string {
	if key == "" {
		return quoteID(id)
	}
	return quoteID(id) + " pk=" + key
}

// quoteID quotes an id when it holds spaces or characters that would make
// the line ambiguous.
func quoteID(id string) string {
	for _, c := range id {
		if c <= ' ' || c == '"' || c == 0x7f {
			b, _ := json.Marshal(id)
			return string(b)
		}
	}
	return id
}

// dumpRecordJSON is one line of dump --json.
type dumpRecordJSON struct {
	Kind string `json:"kind"`
	tool.DumpRecord
	Doc json.RawMessage `json:"doc,omitempty"`
	// DocText holds a document that is not valid JSON, as a string.
	DocText string `json:"doc_text,omitempty"`
}

func dumpJSON(w io.Writer, kind tool.FileKind, r *tool.DumpRecord, values bool) error {
	line := dumpRecordJSON{Kind: string(kind), DumpRecord: *r}
	if values {
		if doc := r.Document(); doc != nil {
			if json.Valid(doc) {
				line.Doc = doc
			} else {
				line.DocText = string(doc)
			}
		}
	}
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
