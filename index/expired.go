package index

import "github.com/RoaringBitmap/roaring/v2"

// DropExpired removes from bm, in place, every slot marked expired: the
// one AndNot by which queries and counts leave expired items out.
func (x *Index) DropExpired(bm *roaring.Bitmap) { bm.AndNot(x.expired) }
