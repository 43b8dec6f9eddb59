package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ebbdb/ebb/engine/internal/docfmt"
	"github.com/ebbdb/ebb/engine/query"
)

// A query's window: what TOP or OFFSET/LIMIT lets out of the rows read,
// in order, and where the rows it takes are rendered.

// window applies TOP or OFFSET/LIMIT to projected results.
type window struct {
	skip, limit int64 // what is left to skip and to take; limit < 0: no limit
	taken       int64 // results skipped or yielded so far
	// For an ordered walk (offerOrdered): the place of the last result
	// taken, so that nothing is taken out of order, and, when a walk may
	// run again (remember), the ids taken, so that nothing is taken twice.
	hasLast bool
	lastKey query.Value
	lastID  string
	desc    bool
	seen    *seenIDs
	// pend, for an ordered walk, holds the documents that may be offered
	// between the reading of a walked one and its offer, using up what is
	// left to skip (see wants).
	pend *pendingDocs
	// slab is where the bodies of whole documents taken are rendered, many
	// to one allocation (see render), and etags where their etags are
	// (nil until the first). What a query leaves of them unused goes to
	// the next query with the window (release).
	slab  []byte
	etags *strings.Builder
	// into, for a QueryInto, is where every whole document taken is
	// rendered instead, over the one before: each is yielded before the
	// next is read (see renderInto).
	into *rowBuf
	// head is the start of a rendered body up to its etag's digits for
	// rows written at headTS (headLen bytes; none while 0), which the rows
	// of one query often share.
	head    [docfmt.MaxHeadLen]byte
	headLen int
	headTS  int64

	// What seen and pend point to for the query's first walk, and the doc
	// its rows are read into one by one (see matches), kept here so that
	// they come with the window from windows rather than being allocated
	// for each query.
	seenSet  seenIDs
	pendDocs pendingDocs
	one      doc
}

// windows holds windows of queries done, for the next ones (newWindow).
var windows = sync.Pool{New: func() any { return new(window) }}

// bodySlab is the largest allocation a query renders its documents' bodies
// into; a body over a quarter of it gets an allocation of its own. It is a
// small size class of Go's allocator (a larger one takes fresh pages from
// the heap each time, and a page fault for each page) whose span holds
// four: 16 KiB, the next class up, has a span of its own for each
// allocation, which cost a trip to the heap per slab.
const bodySlab = 14336

// wants reports whether a raw doc read now must be rendered as it is read:
// unless the window is still skipping rows (and nothing can be offered
// before the doc, to use up the rest of the skip) or is full.
func (w *window) wants() bool {
	return w.limit != 0 && (w.skip == 0 || (w.pend != nil && w.pend.Len() > 0))
}

// newWindow returns the window of q, from windows; release gives it back.
func newWindow(q *query.Bound) *window {
	w := windows.Get().(*window)
	w.skip, w.limit = q.Window()
	return w
}

// maxPooledPending bounds the pending documents' storage a window keeps
// for its next query.
const maxPooledPending = 256

// release gives w back to windows once its query is done (see reset).
func (w *window) release() {
	w.reset()
	windows.Put(w)
}

// reset readies w for another query. What w yielded stays valid: the next
// query renders its rows into what is left of the slab and of the etags'
// storage after them, never over them.
func (w *window) reset() {
	w.seenSet.reset()
	w.pendDocs.reset()
	few, docs := w.seenSet.few, w.pendDocs.docs
	if cap(docs) > maxPooledPending {
		docs = nil
	}
	head, headLen, headTS := w.head, w.headLen, w.headTS
	slab, etags := w.slab[len(w.slab):], w.etags
	*w = window{}
	w.seenSet.few, w.pendDocs.docs = few, docs
	w.head, w.headLen, w.headTS = head, headLen, headTS // the next query's rows may share their _ts
	w.slab, w.etags = slab, etags
}

// rest is the window for walking the same query again from the start: it
// keeps what is left to skip and take, and passes over every result at or
// before the last place taken and every item already taken.
func (w *window) rest() *window {
	if w.seen != nil {
		w.seen.noting = false
	}
	return &window{skip: w.skip, limit: w.limit, taken: w.taken, hasLast: w.hasLast, lastKey: w.lastKey, lastID: w.lastID,
		desc: w.desc, seen: w.seen, into: w.into} // w's bodies, etags and pending docs stay w's
}

// offerOrdered is offer for results of an ordered walk, given d's ORDER BY
// value: a result that sorts at or before the last one taken (an item that
// moved behind the walk while it ran), or an item already taken, is passed
// over, so what is yielded stays in order and holds no item twice.
func (w *window) offerOrdered(q *query.Bound, key query.Value, d *doc, yield func(Item, error) bool) bool {
	if w.limit == 0 {
		return false
	}
	if w.hasLast && query.CompareOrder(key, d.rec.ID, w.lastKey, w.lastID, w.desc) <= 0 {
		return true
	}
	if w.seen != nil && w.seen.add(d.rec.ID) {
		return true
	}
	w.hasLast, w.lastKey, w.lastID = true, key, d.rec.ID
	return w.offer(q, d, yield)
}

// full reports whether the window has all it will take.
func (w *window) full() bool { return w.limit == 0 }

// offer projects d and yields it if the window takes it; it reports
// whether to go on.
func (w *window) offer(q *query.Bound, d *doc, yield func(Item, error) bool) bool {
	if w.limit == 0 {
		return false
	}
	if d.raw {
		if !w.take() {
			return true
		}
		if !d.rendered {
			// Cannot happen: a raw doc goes unrendered only while the
			// window skips, and nothing is offered before it meanwhile.
			yield(Item{}, fmt.Errorf("ebb: query: item %s was read without its body: %w", showItem(d.rec.ID), errInternal))
			return false
		}
		return yield(d.item, nil) && w.limit != 0
	}
	v, ok := q.Project(d.val)
	if !ok {
		return true // SELECT VALUE of an undefined value: nothing to emit
	}
	if !w.take() {
		return true
	}
	id, pk := splitItemKey(d.rec.ID)
	return yield(Item{ID: id, PartitionKey: pk, TS: d.rec.TS, ETag: docfmt.CachedETag(d.rec.Seq), ExpiresAt: itemExpiry(d.expires), Body: v.AppendJSON(nil)}, nil) && w.limit != 0
}

// take counts a row offered to the window and reports whether it is to be
// emitted: not while the window skips (OFFSET); LIMIT counts it when it is.
func (w *window) take() bool {
	w.taken++
	if w.skip > 0 {
		w.skip--
		return false
	}
	if w.limit > 0 {
		w.limit--
	}
	return true
}

// errInternal marks a broken invariant of the engine's own.
var errInternal = errors.New("internal error")

// seenIDs is the set of ids an ordered walk took, for a walk that may run
// again: a short list while it is short (a TOP n takes a few), a map after.
type seenIDs struct {
	few  []string
	many map[string]bool
	// noting: add only notes ids, without looking them up first. Only the
	// walk that runs again (see rest) can meet an id taken before; within
	// one walk each item is offered once, so the first one only notes
	// what it takes.
	noting bool
}

// seenFew is how many ids seenIDs keeps in its list.
const seenFew = 32

// reset empties s, keeping its list's storage.
func (s *seenIDs) reset() {
	clear(s.few)
	s.few, s.many, s.noting = s.few[:0], nil, false
}

// add puts id in the set and reports whether it was there already (never
// while noting).
func (s *seenIDs) add(id string) (had bool) {
	if s.many != nil {
		if !s.noting && s.many[id] {
			return true
		}
		s.many[id] = true
		return false
	}
	if !s.noting && slices.Contains(s.few, id) {
		return true
	}
	if len(s.few) < seenFew {
		if s.few == nil {
			s.few = make([]string, 0, seenFew)
		}
		s.few = append(s.few, id)
		return false
	}
	s.many = make(map[string]bool, 2*seenFew)
	for _, x := range s.few {
		s.many[x] = true
	}
	s.many[id] = true
	s.few = nil
	return false
}
