package index

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
