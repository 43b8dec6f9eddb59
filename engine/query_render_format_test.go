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
// later rows are rendered, by the same query or, once the window is reset
// for reuse, by the next ones.
func TestWindowRenderIsRenderSeq(t *testing.T) {
	bodies := []string{`{"id":"a","n":1}`, `{}`, ` { } `, "\t{ \"x\" : [1, 2] }\n", `{"id":"b"}`, ""}
	tss := []int64{0, 1, 1, 1700000000, 1700000000, -5, math.MinInt64, math.MaxInt64, 1700000001}
	seqs := []uint64{0, 1, 0xff, 0x0123456789abcdef, math.MaxUint64, 1 << 63}
	for _, limit := range []int64{-1, 3} {
		w := &window{limit: limit}
		// Rows of the queries before, whose bodies and etags must outlive
		// the window's reuse.
		var before []Item
		for i := range 5 {
			for range 3 + i {
				rec := segment.Record{ID: "b", Body: []byte(`{"q":"before"}`), TS: int64(i), Seq: uint64(i)}
				before = append(before, w.render(&rec, 0))
			}
			w.reset()
			w.limit = limit
		}
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
		for _, it := range before {
			if want := docfmt.RenderSeq(nil, []byte(`{"q":"before"}`), it.TS, uint64(it.TS)); !bytes.Equal(it.Body, want) || it.ETag != docfmt.ETag(uint64(it.TS)) {
				t.Fatalf("limit %d: a row of an earlier query changed once the window was reused: %s etag %s", limit, it.Body, it.ETag)
			}
		}
	}
}
