package index

import "github.com/RoaringBitmap/roaring/v2"

// SlotsWithoutTerm returns the slots of bm (nil: every slot in use) that
// hold no term at path: items whose value there is undefined, an array or
// an object, or that are not indexed yet. ORDER BY over an index walk
// places them itself (undefined first, arrays and objects after strings),
// so it needs them without walking every key of the path: one AndNot with
// the path's slot set, or none at all when every slot in use holds a term
// there (the usual case, told by two counts).
func (x *Index) SlotsWithoutTerm(bm *roaring.Bitmap, path string) *roaring.Bitmap {
	if bm == nil {
		bm = x.used
	}
	p := x.sec.path(path)
	switch {
	case p == nil:
		return bm.Clone()
	case x.EveryUsedSlotHasTerm(path):
		return roaring.New()
	}
	return roaring.AndNot(bm, &p.slots)
}

// EveryUsedSlotHasTerm reports whether every slot in use holds a term at
// path, so that SlotsWithoutTerm would return an empty bitmap: an ORDER BY
// walk then has nothing to place itself and need not ask for it.
func (x *Index) EveryUsedSlotHasTerm(path string) bool {
	p := x.sec.path(path)
	// A path's slots are slots in use: the same count means all of them.
	return p != nil && p.slots.GetCardinality() == x.used.GetCardinality()
}
