package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/ebbdb/ebb/engine/query"
	"github.com/ebbdb/ebb/index"
	"github.com/ebbdb/ebb/segment"
)

// Query execution: the candidates from collect are read one by one, each
// checked against the clock and the WHERE as it is read, then sorted,
// windowed and projected.

// runQuery executes q and yields its results.
func (c *Container) runQuery(ctx context.Context, q *query.Bound, yield func(Item, error) bool) {
	if err := c.db.usable(); err != nil {
		yield(Item{}, err)
		return
	}
	cands, err := c.collect(q, c.db.clock.now(), true)
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
			// The stopped walk ran dry (items vanished before they were
			// read): walk again in full, past what was already taken.
			if cands, err = c.collect(q, c.db.clock.now(), false); err != nil {
				yield(Item{}, err)
				return
			}
			c.runWalk(ctx, q, cands, w.rest(), yield)
		}
	case cands.plan.Order != nil && cands.plan.Order.Path == idPath:
		// Candidates come in id order: ORDER BY c.id reads only the window.
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
	rec segment.Record
	val query.Value
	raw bool // not decoded: a SELECT * the index alone decided (val unset)
	// expires is the item's expiry instant when it was read (policy.Never: none).
	expires int64
}

// fetchMatch reads slot s's item as of now and evaluates the WHERE on it.
// An item that is gone, expired or changed so that it no longer matches
// reports false: the query runs against what is live as each item is read.
//
// With trusted, the candidates are known to match as they were collected
// and only the whole document is wanted: an item still at the version
// collected is not decoded at all (doc.raw).
func (c *Container) fetchMatch(q *query.Bound, s *index.Slot, d *doc, trusted bool) (bool, error) {
	var err error
	if d.expires, err = c.fetchAt(s.ID, c.db.clock.now(), &d.rec); err != nil {
		if isNotFound(err) && !c.isDeleted() {
			return false, nil
		}
		return false, err
	}
	if d.raw = trusted && d.rec.Seq == s.Seq; d.raw {
		return true, nil
	}
	etag := etagOf(d.rec.Seq)
	v, err := query.Decode(renderBody(nil, d.rec.Body, d.rec.TS, etag))
	if err != nil {
		return false, fmt.Errorf("ebb: item %q: stored body does not decode: %w: %w", s.ID, err, ErrCorrupt)
	}
	d.val = v
	return q.Match(v), nil
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
}

func newWindow(q *query.Bound) *window {
	skip, limit := q.Window()
	return &window{skip: skip, limit: limit}
}

// rest is the window for running the same query again from the start:
// it passes over the results already taken, then goes on where w stopped.
func (w *window) rest() *window {
	return &window{skip: w.taken + w.skip, limit: w.limit}
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
		return yield(makeItem(&d.rec, d.expires), nil) && w.limit != 0
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
	return yield(Item{ID: d.rec.ID, TS: d.rec.TS, ETag: etagOf(d.rec.Seq), ExpiresAt: itemExpiry(d.expires), Body: v.AppendJSON(nil)}, nil) && w.limit != 0
}

// matches reads slots one by one and calls fn with each item that is live
// and matches as it is read, until fn returns false. It returns the error
// that ended the reading (the context's, or a failed read), or nil.
func (c *Container) matches(ctx context.Context, q *query.Bound, slots []index.Slot, trusted bool, fn func(d *doc) bool) error {
	for i := range slots {
		if err := ctx.Err(); err != nil {
			return err
		}
		var d doc
		ok, err := c.fetchMatch(q, &slots[i], &d, trusted)
		if err != nil {
			return err
		}
		if ok && !fn(&d) {
			return nil
		}
	}
	return nil
}

// runScan yields the matching items in id order, reading them one by one.
func (c *Container) runScan(ctx context.Context, q *query.Bound, cands candidates, yield func(Item, error) bool) {
	w := newWindow(q)
	if err := c.matches(ctx, q, cands.slots, cands.trusted(q), func(d *doc) bool { return w.offer(q, d, yield) }); err != nil {
		yield(Item{}, err)
	}
}

// runCount yields the count. When the index answered the WHERE exactly and
// the count needs no property of the items, no document is read.
func (c *Container) runCount(ctx context.Context, q *query.Bound, cands candidates, yield func(Item, error) bool) {
	n := cands.count
	if !cands.counted {
		err := c.matches(ctx, q, cands.slots, false, func(d *doc) bool {
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
	var all []keyedDoc
	err := c.matches(ctx, q, cands.slots, false, func(d *doc) bool {
		all = append(all, keyedDoc{q.OrderKey(d.val), d})
		return true
	})
	if err != nil {
		yield(Item{}, err)
		return
	}
	_, desc, _ := q.OrderBy()
	sortKeyed(all, desc)
	w := newWindow(q)
	for i := range all {
		if !w.offer(q, all[i].d, yield) {
			return
		}
	}
}

// runWalk yields matching items in the order an index walk gave, reading
// documents only as far as the window needs. The candidates with no scalar
// at the ORDER BY path are read first: undefined ones sort before every
// value, arrays and objects after. It reports whether a stopped walk ran
// dry before the window was full: then the caller walks again in full.
func (c *Container) runWalk(ctx context.Context, q *query.Bound, cands candidates, w *window, yield func(Item, error) bool) (again bool) {
	_, desc, _ := q.OrderBy()
	var undef, complexVals []keyedDoc
	err := c.matches(ctx, q, cands.rest, false, func(d *doc) bool {
		if k := q.OrderKey(d.val); k.Kind() == query.Undefined {
			undef = append(undef, keyedDoc{k, d})
		} else {
			complexVals = append(complexVals, keyedDoc{k, d})
		}
		return true
	})
	if err != nil {
		yield(Item{}, err)
		return false
	}
	sortKeyed(complexVals, desc)
	first, last := undef, complexVals
	if desc {
		first, last = complexVals, undef
	}
	for i := range first {
		if !w.offer(q, first[i].d, yield) {
			return false
		}
	}
	stopped := false
	err = c.matches(ctx, q, cands.slots, cands.trusted(q), func(d *doc) bool {
		stopped = !w.offer(q, d, yield)
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
	for i := range last {
		if !w.offer(q, last[i].d, yield) {
			return false
		}
	}
	return false
}
