package engine

import (
	"context"
	"fmt"
	"slices"

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
func (c *Container) runQuery(ctx context.Context, q *query.Bound, sc scope, into *rowBuf, yield func(Item, error) bool) {
	if err := c.db.usable(); err != nil {
		yield(Item{}, err)
		return
	}
	cands, err := c.collect(ctx, q, sc, c.db.clock.now(), true)
	if err != nil {
		yield(Item{}, err)
		return
	}
	defer cands.buf.put()
	w := newWindow(q)
	defer w.release()
	w.into = into
	switch {
	case q.IsCount():
		c.runCount(ctx, q, cands, yield)
	case cands.walked:
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
		c.runScan(ctx, q, cands, w, yield)
	case cands.plan.Order != nil:
		c.runSorted(ctx, q, cands, w, false, yield)
	default:
		c.runScan(ctx, q, cands, w, yield)
	}
}

// doc is one fetched, matching item of a query.
type doc struct {
	// rec is the item's record; its Body is not kept (nil): a raw doc is
	// rendered as it is read, any other decoded into val.
	rec segment.Record
	val query.Value
	raw bool // not decoded: a SELECT * the index alone decided (val is not this item's)
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

// fetchMatch reads slot s's item as of now (the clock is read as the item
// is found, if it has an expiry instant) and evaluates the WHERE on it.
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
	d.expires, missed, err = c.fetchView(s.ID, s.n, nowWhenNeeded, &d.rec, func(rec *segment.Record, expires int64) {
		if trusted && rec.Seq == s.Seq {
			if out != nil && out.wants() {
				d.item, d.rendered = out.render(rec, expires), true
			}
			return
		}
		*scratch = docfmt.RenderSeq((*scratch)[:0], rec.Body, rec.TS, rec.Seq)
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

// desc reports whether the candidates' ORDER BY is descending (as
// query.Bound.OrderBy says, without the path it allocates).
func (cands *candidates) desc() bool {
	return cands.plan.Order != nil && cands.plan.Order.Desc
}

// trusted reports whether the candidates need neither the WHERE re-checked
// (none, or the index decided it) nor any value of theirs (SELECT *), so
// that an item still at its collected version goes out undecoded.
func (cands *candidates) trusted(q *query.Bound) bool {
	return q.SelectsAll() && (cands.exact || !q.HasWhere())
}

// matches reads slots one by one and calls fn with each item that is live
// and matches as it is read, until fn returns false. It returns the error
// that ended the reading (the context's, or a failed read), or nil. With
// keep, fn may keep the docs it is given; without, one doc (out's, when
// out is given) is reused for the next slot once fn returns. Raw docs are
// rendered into out's slab as they are read (see fetchMatch); out may be
// nil when the docs are not raw.
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
		switch {
		case keep:
			if len(slab) == 0 {
				slab = make([]doc, min(len(slots)-i, docSlab))
			}
			d, slab = &slab[0], slab[1:]
		case d != nil:
		case out != nil:
			d = &out.one
		default:
			d = new(doc)
		}
		// Every row sets what it is read with (rec, expires, changed, raw,
		// and val unless raw); only an item rendered as it was read says
		// so, and item is read only then. Clearing the whole doc instead
		// costs a TOP n more than the comparisons of its walk.
		d.rendered = false
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

// runScan yields the matching items in id order through w, reading them
// one by one.
func (c *Container) runScan(ctx context.Context, q *query.Bound, cands candidates, w *window, yield func(Item, error) bool) {
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

// runSorted reads every candidate, sorts the matching ones by the ORDER BY
// value and offers them to w in that order (runWalk avoids the sort when
// an index can); with walked, w comes from an ordered walk that yielded
// results already, and what sorts at or before the last of them, or was
// yielded, is passed over. An item that expired
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
	sortKeyed(all, cands.desc())
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
	if exp == policy.Never || !policy.Expired(exp, c.db.clock.now()) {
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
	desc := cands.desc()
	w.desc = desc
	if cands.partial && w.seen == nil {
		w.seen = &w.seenSet
		w.seen.noting = true // until rest
	}
	pend := &w.pendDocs
	pend.desc = desc
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
