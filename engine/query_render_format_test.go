package engine

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/ebbdb/ebb/engine/internal/docfmt"
	"github.com/ebbdb/ebb/segment"
)

// TestWindowRenderIsRenderSeq checks that a window renders bodies and etags
// exactly as docfmt does (RenderSeq, ETag), row after row, whether or not
// the rows share their _ts, and that no row's body or etag changes as
// later rows are rendered.
func TestWindowRenderIsRenderSeq(t *testing.T) {
	bodies := []string{`{"id":"a","n":1}`, `{}`, ` { } `, "\t{ \"x\" : [1, 2] }\n", `{"id":"b"}`, ""}
	tss := []int64{0, 1, 1, 1700000000, 1700000000, -5, math.MinInt64, math.MaxInt64, 1700000001}
	seqs := []uint64{0, 1, 0xff, 0x0123456789abcdef, math.MaxUint64, 1 << 63}
	for _, limit := range []int64{-1, 3} {
		w := &window{limit: limit}
		type row struct {
			it         Item
			body, etag string
		}
		var rows []row
		for i := range 60 {
			rec := segment.Record{ID: "i", Body: []byte(bodies[i%len(bodies)]), TS: tss[i%len(tss)], Seq: seqs[i%len(seqs)]}
			it := w.render(&rec, 0)
			want := docfmt.RenderSeq(nil, rec.Body, rec.TS, rec.Seq)
			if !bytes.Equal(it.Body, want) {
				t.Fatalf("row %d: body %s, want %s", i, it.Body, want)
			}
			if e := docfmt.ETag(rec.Seq); it.ETag != e {
				t.Fatalf("row %d: etag %s, want %s", i, it.ETag, e)
			}
			rows = append(rows, row{it, string(want), strings.Clone(it.ETag)})
		}
		for i, r := range rows {
			if string(r.it.Body) != r.body || r.it.ETag != r.etag {
				t.Fatalf("limit %d: row %d changed once later rows were rendered: %s etag %s", limit, i, r.it.Body, r.it.ETag)
			}
		}
	}
}
