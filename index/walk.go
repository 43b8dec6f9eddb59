package index

// Helpers for queries and index rebuilds: the expired set as a filter,
// an id's slot, and a stepwise walk over the live slots.

import "github.com/RoaringBitmap/roaring/v2"

// DropExpired removes from bm, in place, every slot marked expired: the
// one AndNot by which queries and counts leave expired items out.
func (x *Index) DropExpired(bm *roaring.Bitmap) { bm.AndNot(x.expired) }

// SlotOf returns the slot of item id, live or expired, and whether the id
// is in use: the primary index answering c.id = 'x' for a query, so that
// ids need no secondary-index entries of their own.
func (x *Index) SlotOf(id string) (uint32, bool) {
	n, _, ok := x.ids.find(id, x.slots)
	return n, ok
}

// LiveFrom returns up to limit slots that are in use, not marked expired
// and live at now, in slot order from slot number from on, with where the
// next call starts and whether none are left: a walk over every live item
// in bounded steps (an index rebuild), with no copy of the ids up front.
// Slots are never moved, so a walk started before writes still visits
// every item that was live when it started and is live still.
func (x *Index) LiveFrom(from uint32, limit int, now int64) (out []Slot, next uint32, done bool) {
	it := x.used.Iterator()
	it.AdvanceIfNeeded(from)
	for it.HasNext() {
		n := it.Next()
		if len(out) == limit {
			return out, n, false
		}
		if x.expired.Contains(n) {
			continue
		}
		if s := x.slots.at(n); x.ExpiresAt(s) > now {
			out = append(out, *s)
		}
	}
	return out, 0, true
}

// PrefixBitmap returns the slots in use, not marked expired, whose ids
// start with prefix: the items of one partition of a container with a
// partition key, whose item keys share a prefix. It visits every slot in
// use.
func (x *Index) PrefixBitmap(prefix string) *roaring.Bitmap {
	bm := roaring.New()
	it := x.used.Iterator()
	for it.HasNext() {
		n := it.Next()
		if s := x.slots.at(n); len(s.ID) >= len(prefix) && s.ID[:len(prefix)] == prefix {
			bm.Add(n)
		}
	}
	bm.AndNot(x.expired)
	return bm
}

// KeepPrefix removes from bm, in place, every slot whose id does not start
// with prefix (or that is not in use).
func (x *Index) KeepPrefix(bm *roaring.Bitmap, prefix string) {
	var drop []uint32
	it := bm.Iterator()
	for it.HasNext() {
		n := it.Next()
		if !x.used.Contains(n) {
			drop = append(drop, n)
			continue
		}
		if s := x.slots.at(n); len(s.ID) < len(prefix) || s.ID[:len(prefix)] != prefix {
			drop = append(drop, n)
		}
	}
	for _, n := range drop {
		bm.Remove(n)
	}
}

// CountLive returns how many slots of bm hold an item live at now, without
// looking at each slot, and true; or false when that cannot be told so.
// It can when every item expired by now is marked expired (NextDue is
// after now): the count is then the slots of bm in use and not marked.
func (x *Index) CountLive(bm *roaring.Bitmap, now int64) (uint64, bool) {
	if x.buckets.nextDue() <= now {
		return 0, false
	}
	return bm.AndCardinality(x.used) - bm.AndCardinality(x.expired), true // expired ⊆ used
}
