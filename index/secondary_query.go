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
// The slots are the index's own and valid only until fn returns: read them
// at once, or copy them (Postings.Bitmap of few slots is a copy). fn must
// not change the index.
func (x *Index) TermWalk(path string, desc bool, fn func(key string, slots Postings) bool) {
	p := x.sec.path(path)
	if p == nil {
		return
	}
	visit := func(t *term) bool { return fn(t.key, Postings{few: t.small, many: t.big}) }
	if desc {
		p.keys.Reverse(visit)
	} else {
		p.keys.Scan(visit)
	}
}

// Postings are the slots of one key that TermWalk yields: a sorted slice
// while they are few, a bitmap once they are many, so that a walk over keys
// held by a slot or two each (an ORDER BY over unique values) builds no
// bitmap per key.
type Postings struct {
	few  []uint32
	many *roaring.Bitmap
}

// Len returns the number of slots.
func (p Postings) Len() int {
	if p.many != nil {
		return int(p.many.GetCardinality())
	}
	return len(p.few)
}

// Few returns the slots in ascending order when they are held as a slice,
// or nil when they are held as a bitmap (Bitmap).
func (p Postings) Few() []uint32 {
	if p.many != nil {
		return nil
	}
	return p.few
}

// Bitmap returns the slots as a bitmap: the index's own (read-only) when
// they are many, a new one otherwise.
func (p Postings) Bitmap() *roaring.Bitmap {
	if p.many != nil {
		return p.many
	}
	return roaring.BitmapOf(p.few...)
}

// LiveBitmap returns the slots in use and not marked expired, as a new
// bitmap: the universe a query starts from. Items whose expiry has come but
// that Advance has not marked yet are still in it; SlotAt filters them.
func (x *Index) LiveBitmap() *roaring.Bitmap { return roaring.AndNot(x.used, x.expired) }

// SlotAt returns slot n if it is in use and its item is live at now, with
// the same inline expiry check as Lookup.
//
// It is the check of every candidate of a query. A slot marked expired is
// passed over without reading the slot (the expired bitmap is small and
// often in the CPU's cache, the slots are scattered over memory), and the
// slot read tells whether it is in use without a lookup in the used
// bitmap: a slot in use holds its item's id, a free one is zeroed
// (release) and no item has the empty id.
func (x *Index) SlotAt(n uint32, now int64) (Slot, bool) {
	if n >= x.nslots || x.expired.Contains(n) {
		return Slot{}, false
	}
	s := x.slots.at(n)
	if s.ID == "" || x.ExpiresAt(s) <= now {
		return Slot{}, false
	}
	return *s, true
}
