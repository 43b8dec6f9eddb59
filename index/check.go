package index

import (
	"errors"
	"fmt"
	"maps"

	"github.com/RoaringBitmap/roaring/v2"
)

// ErrInconsistent is wrapped by Check's errors.
var ErrInconsistent = errors.New("index: inconsistent")

// Check verifies the index's bookkeeping against its slots and returns an
// error wrapping ErrInconsistent that names the first disagreement:
//   - the expired set holds only slots in use;
//   - the live count and bytes, and each file's Usage, are those of the
//     slots in use and not marked expired;
//   - every such slot whose item will expire is filed in the bucket of its
//     expiry, coarse or fine, so that Advance marks it when it comes due.
//
// It visits every slot, so it is for tests and offline checks, not for a
// hot path. The index must not change meanwhile.
func (x *Index) Check() error {
	if stray := roaring.AndNot(x.expired, x.used); !stray.IsEmpty() {
		return fmt.Errorf("%w: %d expired slots are not in use", ErrInconsistent, stray.GetCardinality())
	}
	var live, liveBytes int64
	files := make(map[uint32]Usage)
	it := x.used.Iterator()
	for it.HasNext() {
		n := it.Next()
		if x.expired.Contains(n) {
			continue
		}
		s := x.slots.at(n)
		live++
		liveBytes += int64(s.Size)
		u := files[s.Loc.File]
		u.Records++
		u.Bytes += int64(s.Size)
		files[s.Loc.File] = u
		if e := x.ExpiresAt(s); e != Never && !x.buckets.holds(n, e) {
			return fmt.Errorf("%w: item %q (slot %d) expires at %d but is filed in no bucket of that instant", ErrInconsistent, s.ID, n, e)
		}
	}
	if live != x.live || liveBytes != x.liveBytes {
		return fmt.Errorf("%w: %d live items of %d bytes counted, %d of %d in the slots", ErrInconsistent, x.live, x.liveBytes, live, liveBytes)
	}
	counted := make(map[uint32]Usage, len(x.files))
	for f, u := range x.files {
		counted[f] = *u
	}
	if !maps.Equal(counted, files) {
		return fmt.Errorf("%w: file usage counted %v, in the slots %v", ErrInconsistent, counted, files)
	}
	return nil
}

// holds reports whether slot is filed for an expiry at expire: in the
// coarse bucket of its window, or in the fine bucket of the instant.
func (b *buckets) holds(slot uint32, expire int64) bool {
	if bm := b.coarse[expire>>coarseBits]; bm != nil && bm.Contains(slot) {
		return true
	}
	bm := b.fine[expire]
	return bm != nil && bm.Contains(slot)
}
