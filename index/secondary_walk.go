package index

import "github.com/RoaringBitmap/roaring/v2"

// SlotsWithoutTerm returns the slots of bm that hold no term at path: items
// whose value there is undefined, an array or an object, or that are not
// indexed yet. ORDER BY over an index walk places them itself (undefined
// first, arrays and objects after strings), so it needs them without
// walking every key of the path. It reads each slot's term list: O(|bm|)
// times the terms per item.
func (x *Index) SlotsWithoutTerm(bm *roaring.Bitmap, path string) *roaring.Bitmap {
	out := roaring.New()
	pid, ok := x.sec.paths[path]
	if !ok {
		out.Or(bm)
		return out
	}
	it := bm.Iterator()
	for it.HasNext() {
		n := it.Next()
		if !x.sec.slotHasPath(n, pid) {
			out.Add(n)
		}
	}
	return out
}

// slotHasPath reports whether slot n holds a term at path pid.
func (s *secondary) slotHasPath(n uint32, pid uint32) bool {
	l := s.lists.at(n)
	if l == nil {
		return false
	}
	for _, id := range l.ids {
		if s.terms.at(id).path == pid {
			return true
		}
	}
	return false
}
