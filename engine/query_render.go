package engine

import (
	"strconv"
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
	id, pk := splitItemKey(rec.ID)
	return Item{ID: id, PartitionKey: pk, TS: rec.TS, ETag: w.etag(w.slab[hex : hex+16]), ExpiresAt: itemExpiry(expires),
		Body: w.slab[start:len(w.slab):len(w.slab)]}
}

// renderInto is render for a QueryInto: the body goes to the start of the
// caller's buffer, over the row before, which went out before this one was
// read. The buffer keeps what it grew to for the next row.
func (w *window) renderInto(rec *segment.Record, expires int64) Item {
	b, hex := w.appendBody(w.into.b[:0], rec)
	w.into.b = b
	id, pk := splitItemKey(rec.ID)
	return Item{ID: id, PartitionKey: pk, TS: rec.TS, ETag: w.etag(b[hex : hex+16]), ExpiresAt: itemExpiry(expires), Body: b}
}

// appendBody appends rec's rendered body to dst and says where in it the
// etag's 16 hex digits are.
func (w *window) appendBody(dst []byte, rec *segment.Record) (_ []byte, hex int) {
	if w.headLen == 0 || w.headTS != rec.TS {
		w.headTS = rec.TS
		w.headLen = len(appendHead(w.head[:0], rec.TS))
	}
	dst = append(dst, w.head[:w.headLen]...)
	hex = len(dst)
	dst = appendHex16(dst, rec.Seq)
	dst = append(dst, `\""`...)
	return appendMembers(dst, rec.Body), hex
}

// maxHeadLen bounds what appendHead writes.
const maxHeadLen = len(`{"_ts":-9223372036854775808,"_etag":"\"`)

// appendHead appends the start of a rendered body written at ts, up to the
// etag's digits.
func appendHead(dst []byte, ts int64) []byte {
	dst = append(dst, `{"_ts":`...)
	dst = strconv.AppendInt(dst, ts, 10)
	return append(dst, `,"_etag":"\"`...)
}

// hexPairs holds the two hex digits of every byte value.
const hexPairs = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f" +
	"202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f" +
	"404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f" +
	"606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f" +
	"808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f" +
	"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf" +
	"c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf" +
	"e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"

// appendHex16 appends seq in 16 lowercase hex digits, as an etag spells it.
func appendHex16(dst []byte, seq uint64) []byte {
	var b [16]byte
	for i := 14; i >= 0; i -= 2 {
		p := 2 * (seq & 0xff)
		b[i], b[i+1] = hexPairs[p], hexPairs[p+1]
		seq >>= 8
	}
	return append(dst, b[:]...)
}

// appendMembers appends the rest of a rendered body: the stored object's
// members after a comma, or, for an object without any, the closing brace.
// Whitespace around the stored object's braces is passed over.
func appendMembers(dst, stored []byte) []byte {
	rest := stored[docfmt.SkipWS(stored, 0):]
	if len(rest) > 0 && rest[0] == '{' {
		rest = rest[docfmt.SkipWS(rest, 1):]
	}
	if len(rest) == 0 || rest[0] == '}' {
		return append(dst, '}')
	}
	return append(append(dst, ','), rest...)
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
