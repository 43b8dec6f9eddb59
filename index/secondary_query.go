package index

import (
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
)

// The query side of the secondary indexes. Every method here only reads, so
// that many readers may run at once under the container's read lock. The
// bitmaps they return are the caller's own: they share nothing with the
// index and stay valid after the lock is released. They hold every slot
// whose terms match, including slots of items that have expired since, or
// were rewritten and not yet given their new terms: the caller re-checks
// what it reads.

// KeyBound is one end of a key range. Unbounded means the range is open on
// that side and Key is ignored; otherwise the range stops at Key, including
// it if Inclusive.
type KeyBound struct {
	Key       string
	Inclusive bool
	Unbounded bool
}

// TermEq returns the slots whose items have any of keys under path.
func (x *Index) TermEq(path string, keys ...string) *roaring.Bitmap {
	u := newUnion()
	if p := x.sec.path(path); p != nil {
		for _, k := range keys {
			if t := p.get(k); t != nil {
				u.add(t)
			}
		}
	}
	return u.result()
}

// TermRange returns the slots whose items have, under path, a key between
// lo and hi in string order. A range whose lo is above its hi is empty.
func (x *Index) TermRange(path string, lo, hi KeyBound) *roaring.Bitmap {
	u := newUnion()
	p := x.sec.path(path)
	if p == nil {
		return u.result()
	}
	pivot := &term{} // "" is the least key: Unbounded starts there
	if !lo.Unbounded {
		pivot.key = lo.Key
	}
	p.keys.Ascend(pivot, func(t *term) bool {
		if !lo.Unbounded && !lo.Inclusive && t.key == lo.Key {
			return true
		}
		if !hi.Unbounded && (t.key > hi.Key || (t.key == hi.Key && !hi.Inclusive)) {
			return false
		}
		u.add(t)
		return true
	})
	return u.result()
}

// TermPrefix returns the slots whose items have, under path, a key that
// starts with prefix. An empty prefix matches every key of the path.
func (x *Index) TermPrefix(path, prefix string) *roaring.Bitmap {
	u := newUnion()
	p := x.sec.path(path)
	if p == nil {
		return u.result()
	}
	p.keys.Ascend(&term{key: prefix}, func(t *term) bool {
		if !strings.HasPrefix(t.key, prefix) {
			return false
		}
		u.add(t)
		return true
	})
	return u.result()
}

// TermWalk calls fn for every key under path with the slots that have it,
// in ascending key order, or descending if desc, until fn returns false.
//
// The slots bitmap is read-only and valid only until fn returns: it is the
// index's own bitmap or a scratch one that the next key reuses. Combine it
// at once (roaring.And, Or, AndNot leave their inputs alone) or Clone it.
// fn must not change the index.
func (x *Index) TermWalk(path string, desc bool, fn func(key string, slots *roaring.Bitmap) bool) {
	p := x.sec.path(path)
	if p == nil {
		return
	}
	scratch := roaring.New()
	visit := func(t *term) bool {
		if t.big != nil {
			return fn(t.key, t.big)
		}
		scratch.Clear()
		scratch.AddMany(t.small)
		return fn(t.key, scratch)
	}
	if desc {
		p.keys.Reverse(visit)
	} else {
		p.keys.Scan(visit)
	}
}

// LiveBitmap returns the slots in use and not marked expired, as a new
// bitmap: the universe a query starts from. Items whose expiry has come but
// that Advance has not marked yet are still in it; SlotAt filters them.
func (x *Index) LiveBitmap() *roaring.Bitmap { return roaring.AndNot(x.used, x.expired) }

// SlotAt returns slot n if it is in use and its item is live at now, with
// the same inline expiry check as Lookup.
func (x *Index) SlotAt(n uint32, now int64) (Slot, bool) {
	if !x.used.Contains(n) || x.expired.Contains(n) {
		return Slot{}, false
	}
	s := x.slots.at(n)
	if x.ExpiresAt(s) <= now {
		return Slot{}, false
	}
	return *s, true
}
