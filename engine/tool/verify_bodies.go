package tool

import (
	"fmt"

	"github.com/ebbdb/ebb/engine/query"
	"github.com/ebbdb/ebb/segment"
)

// Every stored body, in the segment files and in the journal, must be one
// the query path decodes: a record that a read returns but a query cannot
// decode would make every scan and query of its container fail. Writes
// refuse such documents (the engine's document parser applies the decoder's
// rules), so one
// found here was written by an older version or damaged in a way no
// checksum caught.

// bodyCheck is the check of segment file rel's bodies, made as Verify
// reads each record of the file (segment.Reader.VerifyEach).
func (v *verifier) bodyCheck(rel string) func(*segment.RecordAt) error {
	return func(at *segment.RecordAt) error {
		rec := &at.Record
		if rec.Op == segment.OpPut {
			if _, err := query.Decode(rec.Body); err != nil {
				v.problem(rel, at.Offset, fmt.Sprintf("block %d record at %d (%s %q)", at.Handle.Block, at.Handle.Off, rec.Op, rec.ID),
					"stored body does not decode, so queries of the container would fail: %v", err)
			}
		}
		return nil
	}
}

// journalBodies checks the bodies of the journal's records.
func (v *verifier) journalBodies() {
	for _, f := range v.s.journal {
		for j := range f.recs {
			r := &f.recs[j]
			if r.rec.Op != segment.OpPut {
				continue
			}
			if _, err := query.Decode(r.rec.Body); err != nil {
				v.problem(f.rel, r.offset, fmt.Sprintf("entry seq %d record %d (%s %q)", r.seq, r.index, r.rec.Op, r.rec.ID),
					"stored body does not decode, so queries of the container would fail: %v", err)
			}
		}
	}
}
