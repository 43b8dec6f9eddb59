package engine

import (
	"fmt"

	"github.com/ebbdb/ebb/engine/query"
	"github.com/ebbdb/ebb/segment"
)

// bodies checks that every stored body, in the segment files that passed
// their own checks and in the journal, is one the query path decodes: a
// record that a read returns but a query cannot decode would make every
// scan and query of its container fail. Writes refuse such documents
// (parseDocument applies the decoder's rules), so one found here was
// written by an older version or damaged in a way no checksum caught.
func (v *verifier) bodies() {
	for _, sv := range v.s.segs {
		if sv.r == nil || sv.err != nil || sv.index == nil {
			continue // reported already
		}
		for at, err := range sv.r.Records() {
			if err != nil {
				break // Verify reported it
			}
			rec := &at.Record
			if rec.Op != segment.OpPut {
				continue
			}
			if _, err := query.Decode(rec.Body); err != nil {
				v.problem(sv.rel, at.Offset, fmt.Sprintf("block %d record at %d (%s %q)", at.Handle.Block, at.Handle.Off, rec.Op, rec.ID),
					"stored body does not decode, so queries of the container would fail: %v", err)
			}
		}
	}
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
