package engine

import (
	"strings"

	"github.com/ebbdb/ebb/engine/internal/docfmt"
	"github.com/ebbdb/ebb/segment"
)

// How a query renders the whole documents it returns: many rows' bodies to
// one allocation and many rows' etags to another, each body written in one
// pass from the block it is read from. What comes out is what
// docfmt.RenderSeq writes, byte for byte:
//
//	{"_ts":<ts>,"_etag":"\"<seq in 16 hex digits>\"",<the stored members>}

// render is makeItem for a result of w: the body is carved from w's slab,
// which spares an allocation per row (the slab lives while any of its
// bodies does, and what this query leaves of it goes to the next one with
// the window), and the etag from w's etags.
func (w *window) render(rec *segment.Record, expires int64) Item {
	if w.into != nil {
		return w.renderInto(rec, expires)
	}
	n := docfmt.RenderedSize(rec.Body)
	if n > bodySlab/4 {
		return makeItem(rec, expires)
	}
	if cap(w.slab)-len(w.slab) < n {
		// Slabs start at what the rows left to take need (at this row's
		// size), or small for the queries without a limit, and double up
		// to bodySlab.
		size := max(4*n, 2*cap(w.slab))
		if w.limit > 0 && w.limit <= bodySlab {
			size = max(size, n*int(w.limit))
		}
		w.slab = make([]byte, 0, min(size, bodySlab))
	}
	start := len(w.slab)
	var hex int
	w.slab, hex = w.appendBody(w.slab, rec)
	return w.item(rec, expires, w.slab[start:len(w.slab):len(w.slab)], w.slab[hex:hex+16])
}

// renderInto is render for a QueryInto: the body goes to the start of the
// caller's buffer, over the row before, which went out before this one was
// read. The buffer keeps what it grew to for the next row.
func (w *window) renderInto(rec *segment.Record, expires int64) Item {
	b, hex := w.appendBody(w.into.b[:0], rec)
	w.into.b = b
	return w.item(rec, expires, b, b[hex:hex+16])
}

// item is the Item of rec whose rendered body is body, with the etag's 16
// hex digits at digits.
func (w *window) item(rec *segment.Record, expires int64, body, digits []byte) Item {
	id, pk := splitItemKey(rec.ID)
	return Item{ID: id, PartitionKey: pk, TS: rec.TS, ETag: w.etag(digits), ExpiresAt: itemExpiry(expires), Body: body}
}

// appendBody appends rec's rendered body to dst and says where in it the
// etag's 16 hex digits are.
func (w *window) appendBody(dst []byte, rec *segment.Record) (_ []byte, hex int) {
	if w.headLen == 0 || w.headTS != rec.TS {
		w.headTS = rec.TS
		w.headLen = len(docfmt.AppendHead(w.head[:0], rec.TS))
	}
	dst = append(dst, w.head[:w.headLen]...)
	hex = len(dst)
	dst = docfmt.AppendHex16(dst, rec.Seq)
	dst = append(dst, `\""`...)
	return docfmt.AppendMembers(dst, rec.Body), hex
}

// etagBatch is how many rows' etags share one allocation.
const etagBatch = 32

// etag is the etag whose 16 hex digits are hex, for a row of w: a slice of
// a string that the etags of many rows, of this query and the next ones,
// share, which spares an allocation per row. The builder only ever
// appends, so no etag's bytes are written twice.
func (w *window) etag(hex []byte) string {
	const n = len(`"0123456789abcdef"`)
	if w.etags == nil {
		w.etags = new(strings.Builder)
	}
	if w.etags.Cap()-w.etags.Len() < n {
		// A full builder's etags keep its storage: start another (what
		// one query leaves of it serves the next, see release).
		*w.etags = strings.Builder{}
		w.etags.Grow(n * etagBatch)
	}
	var buf [n]byte
	buf[0], buf[n-1] = '"', '"'
	copy(buf[1:n-1], hex)
	start := w.etags.Len()
	w.etags.Write(buf[:])
	return w.etags.String()[start:]
}
