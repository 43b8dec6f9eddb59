package index

import "github.com/RoaringBitmap/roaring/v2"

// SlotsWithoutTerm returns the slots of bm that hold no term at path: items
// whose value there is undefined, an array or an object, or that are not
// indexed yet. ORDER BY over an index walk places them itself (undefined
// first, arrays and objects after strings), so it needs them without
// walking every key of the path: one AndNot with the path's slot set.
func (x *Index) SlotsWithoutTerm(bm *roaring.Bitmap, path string) *roaring.Bitmap {
	p := x.sec.path(path)
	if p == nil {
		return bm.Clone()
	}
	return roaring.AndNot(bm, &p.slots)
}
