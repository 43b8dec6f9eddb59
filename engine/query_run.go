package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ebbdb/ebb/engine/internal/docfmt"
	"github.com/ebbdb/ebb/engine/query"
	"github.com/ebbdb/ebb/index"
	"github.com/ebbdb/ebb/policy"
	"github.com/ebbdb/ebb/segment"
)

// Query execution: the candidates from collect are read one by one, each
// checked against the clock and the WHERE as it is read, then sorted,
// windowed and projected.

// runQuery executes q and yields its results.
func (c *Container) runQuery(ctx context.Context, q *query.Bound, sc scope, yield func(Item, error) bool) {
	if err := c.db.usable(); err != nil {
		yield(Item{}, err)
		return
	}
	cands, err := c.collect(ctx, q, sc, c.db.clock.now(), true)
	if err != nil {
		yield(Item{}, err)
		return
	}
	switch {
	case q.IsCount():
		c.runCount(ctx, q, cands, yield)
	case cands.walked:
		w := newWindow(q)
		if c.runWalk(ctx, q, cands, w, yield) {
			// The stopped walk ran dry (items vanished or moved before
			// they were read): walk again in full, past what was taken.
			if cands, err = c.collect(ctx, q, sc, c.db.clock.now(), false); err != nil {
				yield(Item{}, err)
				return
			}
			if cands.walked {
				c.runWalk(ctx, q, cands, w.rest(), yield)
			} else {
				// The index cannot order any more (its policy changed
				// meanwhile, and it is being rebuilt): sort the rest.
				c.runSorted(ctx, q, cands, w.rest(), true, yield)
			}
		}
	case cands.plan.Order != nil && cands.plan.Order.Path == idPath && c.kp == nil:
		// Candidates come in id order: ORDER BY c.id reads only the window.
		// (With a partition key they come in (key value, id) order.)
		if cands.plan.Order.Desc {
			slices.Reverse(cands.slots)
		}
		c.runScan(ctx, q, cands, yield)
	case cands.plan.Order != nil:
		c.runOrdered(ctx, q, cands, yield)
	default:
		c.runScan(ctx, q, cands, yield)
	}
}

// doc is one fetched, matching item of a query.
type doc struct {
	// rec is the item's record; its Body is not kept (nil): a raw doc is
	// rendered as it is read, any other decoded into val.
	rec segment.Record
	val query.Value
	raw bool // not decoded: a SELECT * the index alone decided (val unset)
	// rendered: item is the raw doc's result, rendered as it was read (a
	// raw doc is not rendered while its window is skipping rows).
	rendered bool
	item     Item
	// expires is the item's expiry instant when it was read (policy.Never: none).
	expires int64
	// changed: the item was written after the candidates were collected,
	// so index order no longer tells where it sorts (val is its current
	// value).
	changed bool
}

// fetchMatch reads slot s's item as of now and evaluates the WHERE on it.
// An item that is gone, expired or changed so that it no longer matches
// reports false: the query runs against what is live as each item is read.
//
// With trusted, the candidates are known to match as they were collected
// and only the whole document is wanted: an item still at the version
// collected is not decoded at all (doc.raw), and, when out (not nil) will
// take it, is rendered into out's slab straight from the block it is read
// from. Any other item is rendered into *scratch (nil: a buffer of its
// own), reused from row to row, and decoded from there. It also reports
// whether it read the item's block from its file (see fetchView).
func (c *Container) fetchMatch(q *query.Bound, s *cand, d *doc, trusted bool, scratch *[]byte, out *window) (ok, missed bool, err error) {
	if scratch == nil {
		scratch = new([]byte)
	}
	d.expires, missed, err = c.fetchView(s.ID, s.n, c.db.clock.now(), &d.rec, func(rec *segment.Record, expires int64) {
		if trusted && rec.Seq == s.Seq {
			if out != nil && out.wants() {
				d.item, d.rendered = out.render(rec, expires), true
			}
			return
		}
		*scratch = docfmt.Render((*scratch)[:0], rec.Body, rec.TS, docfmt.ETag(rec.Seq))
	})
	d.rec.Body = nil // gone with the block (or the memtable's): never read again
	if err != nil {
		if isNotFound(err) && !c.isDeleted() {
			return false, missed, nil
		}
		return false, missed, err
	}
	d.changed = d.rec.Seq != s.Seq
	if d.raw = trusted && !d.changed; d.raw {
		return true, missed, nil
	}
	v, err := query.Decode(*scratch)
	if err != nil {
		return false, missed, fmt.Errorf("ebb: item %s: stored body does not decode: %w: %w", showItem(s.ID), err, ErrCorrupt)
	}
	d.val = v
	return q.Match(v), missed, nil
}

// trusted reports whether the candidates need neither the WHERE re-checked
// (none, or the index decided it) nor any value of theirs (SELECT *), so
// that an item still at its collected version goes out undecoded.
func (cands *candidates) trusted(q *query.Bound) bool {
	return q.SelectsAll() && (cands.exact || !q.HasWhere())
}

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
	// to one allocation (see render), and etags where their etags are.
	slab  []byte
	etags *strings.Builder
}

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

// render is makeItem for a result of w: the body is carved from w's slab
// (appendItem), which spares an allocation per row (the slab lives while
// any of its bodies does).
func (w *window) render(rec *segment.Record, expires int64) Item {
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
	w.slab = docfmt.RenderSeq(w.slab, rec.Body, rec.TS, rec.Seq)
	id, pk := splitItemKey(rec.ID)
	return Item{ID: id, PartitionKey: pk, TS: rec.TS, ETag: w.etag(rec.Seq), ExpiresAt: itemExpiry(expires),
		Body: w.slab[start:len(w.slab):len(w.slab)]}
}

// etagBatch is how many rows' etags share one allocation.
const etagBatch = 32

// etag is docfmt.ETag(seq) for a row of w: a slice of a string that the
// etags of many rows share, which spares an allocation per row.
func (w *window) etag(seq uint64) string {
	const n = len(`"0123456789abcdef"`)
	if w.etags == nil || w.etags.Cap()-w.etags.Len() < n {
		w.etags = new(strings.Builder)
		w.etags.Grow(n * etagBatch)
	}
	var buf [n]byte
	start := w.etags.Len()
	w.etags.Write(docfmt.AppendETag(buf[:0], seq))
	return w.etags.String()[start:]
}

func newWindow(q *query.Bound) *window {
	skip, limit := q.Window()
	return &window{skip: skip, limit: limit}
}

// rest is the window for walking the same query again from the start: it
// keeps what is left to skip and take, and passes over every result at or
// before the last place taken and every item already taken.
func (w *window) rest() *window {
	r := *w
	r.slab, r.etags = nil, nil // w's bodies stay w's
	r.pend = nil
	return &r
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
		w.taken++
		if w.skip > 0 {
			w.skip--
			return true
		}
		if w.limit > 0 {
			w.limit--
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
	w.taken++
	if w.skip > 0 {
		w.skip--
		return true
	}
	if w.limit > 0 {
		w.limit--
	}
	id, pk := splitItemKey(d.rec.ID)
	return yield(Item{ID: id, PartitionKey: pk, TS: d.rec.TS, ETag: docfmt.ETag(d.rec.Seq), ExpiresAt: itemExpiry(d.expires), Body: v.AppendJSON(nil)}, nil) && w.limit != 0
}

// errInternal marks a broken invariant of the engine's own.
var errInternal = errors.New("internal error")

// matches reads slots one by one and calls fn with each item that is live
// and matches as it is read, until fn returns false. It returns the error
// that ended the reading (the context's, or a failed read), or nil. With
// keep, fn may keep the docs it is given; without, each is reused for the
// next slot once fn returns. Raw docs are rendered into out's slab as they
// are read (see fetchMatch); out may be nil when the docs are not raw.
func (c *Container) matches(ctx context.Context, q *query.Bound, slots []cand, trusted, keep bool, out *window, fn func(i int, d *doc) bool) error {
	var (
		d       *doc
		slab    []doc  // kept docs are carved from slabs of docSlab
		scratch []byte // what a doc is rendered into to be decoded; reused
		tried   bool   // a prefetcher was asked for
	)
	var pf *prefetcher // started at the first block not cached
	defer func() { pf.done() }()
	for i := range slots {
		if err := ctx.Err(); err != nil {
			return err
		}
		pf.at(i)
		if d == nil || keep {
			if len(slab) == 0 {
				slab = make([]doc, 1)
				if keep {
					slab = make([]doc, min(len(slots)-i, docSlab))
				}
			}
			d, slab = &slab[0], slab[1:]
		}
		*d = doc{}
		ok, missed, err := c.fetchMatch(q, &slots[i], d, trusted, &scratch, out)
		if err != nil {
			return err
		}
		if missed && !tried {
			tried = true // one try: if too few slots are left now, fewer are later
			pf = c.startPrefetch(slots, i)
		}
		if ok && !fn(i, d) {
			return nil
		}
	}
	return nil
}

// docSlab is how many docs a query that keeps them allocates at once.
const docSlab = 32

// runScan yields the matching items in id order, reading them one by one.
func (c *Container) runScan(ctx context.Context, q *query.Bound, cands candidates, yield func(Item, error) bool) {
	w := newWindow(q)
	if err := c.matches(ctx, q, cands.slots, cands.trusted(q), false, w, func(_ int, d *doc) bool { return w.offer(q, d, yield) }); err != nil {
		yield(Item{}, err)
	}
}

// runCount yields the count. When the index answered the WHERE exactly and
// the count needs no property of the items, no document is read.
func (c *Container) runCount(ctx context.Context, q *query.Bound, cands candidates, yield func(Item, error) bool) {
	n := cands.count
	if !cands.counted {
		err := c.matches(ctx, q, cands.slots, false, false, nil, func(_ int, d *doc) bool {
			if q.CountItem(d.val) {
				n++
			}
			return true
		})
		if err != nil {
			yield(Item{}, err)
			return
		}
	}
	yield(Item{Body: q.CountResult(n).AppendJSON(nil)}, nil)
}

// keyedDoc is a fetched document with its ORDER BY value.
type keyedDoc struct {
	key query.Value
	d   *doc
}

// sortKeyed sorts by ORDER BY value, ties by id ascending either way.
func sortKeyed(ds []keyedDoc, desc bool) {
	slices.SortFunc(ds, func(a, b keyedDoc) int {
		return query.CompareOrder(a.key, a.d.rec.ID, b.key, b.d.rec.ID, desc)
	})
}

// runOrdered yields matching items by the ORDER BY value: it reads every
// candidate and sorts them. (runWalk avoids that when an index can.)
func (c *Container) runOrdered(ctx context.Context, q *query.Bound, cands candidates, yield func(Item, error) bool) {
	c.runSorted(ctx, q, cands, newWindow(q), false, yield)
}

// runSorted reads every candidate, sorts the matching ones by the ORDER BY
// value and offers them to w in that order; with walked, w comes from an
// ordered walk that yielded results already, and what sorts at or before
// the last of them, or was yielded, is passed over. An item that expired
// after it was read (the clock moved on, or the DefaultTTL changed, while
// earlier results were consumed) is left out when its turn comes.
func (c *Container) runSorted(ctx context.Context, q *query.Bound, cands candidates, w *window, walked bool, yield func(Item, error) bool) {
	var all []keyedDoc
	err := c.matches(ctx, q, cands.slots, false, true, nil, func(_ int, d *doc) bool {
		all = append(all, keyedDoc{q.OrderKey(d.val), d})
		return true
	})
	if err != nil {
		yield(Item{}, err)
		return
	}
	_, desc, _ := q.OrderBy()
	sortKeyed(all, desc)
	for i := range all {
		if err := ctx.Err(); err != nil {
			yield(Item{}, err)
			return
		}
		if c.expiredSinceRead(&all[i].d.rec) {
			continue
		}
		goOn := false
		if walked {
			goOn = w.offerOrdered(q, all[i].key, all[i].d, yield)
		} else {
			goOn = w.offer(q, all[i].d, yield)
		}
		if !goOn {
			return
		}
	}
}

// expiredSinceRead reports whether the version rec, live when it was read,
// has expired by now under the container's current policy.
func (c *Container) expiredSinceRead(rec *segment.Record) bool {
	c.mu.RLock()
	exp := c.history.ExpiresAt(rec.TS, rec.TTL)
	c.mu.RUnlock()
	if !policy.Expired(exp, c.db.clock.now()) {
		return false
	}
	c.db.observeExpiry(exp)
	return true
}

// runWalk yields matching items in the order an index walk gave, reading
// documents only as far as the window needs. It merges, by ORDER BY value,
// the walked slots in index order with the pending documents (see
// pendingDocs): the candidates with no scalar at the ORDER BY path
// (undefined ones sort before every value, arrays and objects after), and
// walked items written after the walk, whose index place is stale. A
// pending document is read again just before it goes out, so what is
// yielded is the item as it is then. It reports whether a stopped walk ran
// dry before the window was full: then the caller walks again in full.
func (c *Container) runWalk(ctx context.Context, q *query.Bound, cands candidates, w *window, yield func(Item, error) bool) (again bool) {
	_, desc, _ := q.OrderBy()
	w.desc = desc
	if cands.partial && w.seen == nil {
		w.seen = &seenIDs{}
	}
	pend := &pendingDocs{desc: desc}
	err := c.matches(ctx, q, cands.rest, false, true, nil, func(_ int, d *doc) bool {
		pend.push(keyedDoc{q.OrderKey(d.val), d})
		return true
	})
	if err != nil {
		yield(Item{}, err)
		return false
	}
	w.pend = pend
	// drain offers the pending documents that sort before (key, id), or
	// all of them; it reports whether to go on and whether it offered any.
	drain := func(key query.Value, id string, all bool) (goOn, offered bool, err error) {
		for pend.Len() > 0 && (all || pend.before(key, id)) {
			if err := ctx.Err(); err != nil {
				return false, offered, err
			}
			p := pend.pop()
			var d doc
			ok, _, err := c.fetchMatch(q, &cand{index.Slot{ID: p.d.rec.ID, Seq: p.d.rec.Seq}, noSlotHint}, &d, true, nil, nil)
			switch {
			case err != nil:
				return false, offered, err
			case !ok:
				continue // gone, expired or no longer matching
			case d.changed: // written again: place it anew
				pend.push(keyedDoc{q.OrderKey(d.val), &d})
				continue
			}
			offered = true
			if !w.offerOrdered(q, p.key, p.d, yield) {
				return false, offered, nil
			}
		}
		return true, offered, nil
	}
	stopped := false
	err = c.matches(ctx, q, cands.slots, cands.trusted(q), false, w, func(i int, d *doc) bool {
		if d.changed {
			kept := *d // d is reused for the next slot
			pend.push(keyedDoc{q.OrderKey(d.val), &kept})
			return true
		}
		key, _ := query.KeyValue(cands.keys[i])
		goOn, offered, err := drain(key, d.rec.ID, false)
		if err != nil {
			yield(Item{}, err)
		}
		if goOn && offered && c.expiredSinceRead(&d.rec) {
			return true // it expired while the pending results before it went out
		}
		stopped = !goOn || !w.offerOrdered(q, key, d, yield)
		return !stopped
	})
	if err != nil {
		yield(Item{}, err)
		return false
	}
	if stopped {
		return false
	}
	if cands.partial && !w.full() {
		return true
	}
	if _, _, err := drain(query.Value{}, "", true); err != nil {
		yield(Item{}, err)
	}
	return false
}

// seenIDs is the set of ids an ordered walk took, for a walk that may run
// again: a short list while it is short (a TOP n takes a few), a map after.
type seenIDs struct {
	few  []string
	many map[string]bool
}

// seenFew is how many ids seenIDs keeps in its list.
const seenFew = 32

// add puts id in the set and reports whether it was there already.
func (s *seenIDs) add(id string) (had bool) {
	if s.many != nil {
		if s.many[id] {
			return true
		}
		s.many[id] = true
		return false
	}
	if slices.Contains(s.few, id) {
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
