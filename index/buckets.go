package index

import (
	"container/heap"

	"github.com/RoaringBitmap/roaring/v2"
)

// coarseBits sets the width of a coarse bucket: 64 seconds.
const coarseBits = 6

// buckets files slots by the instant they expire. Far-future expiries sit in
// coarse buckets (one per 64 s window) so that items whose expiries are
// spread over months cost a few bits each, not a bitmap each; when a coarse
// window arrives it is split once into exact one-second buckets, which
// Advance then takes whole.
type buckets struct {
	coarse     map[int64]*roaring.Bitmap
	coarseKeys keyHeap
	fine       map[int64]*roaring.Bitmap
	fineKeys   keyHeap
	// The coarse bucket added to last, and its key: items written or
	// loaded together mostly expire in the same 64 s window.
	lastCoarse    *roaring.Bitmap
	lastCoarseKey int64
	// splitThrough is the highest coarse key already split into fine
	// buckets; expiries at or below its window go straight to fine buckets.
	splitThrough int64
}

func newBuckets() buckets {
	return buckets{
		coarse:       make(map[int64]*roaring.Bitmap),
		fine:         make(map[int64]*roaring.Bitmap),
		splitThrough: -1 << 62,
	}
}

func (b *buckets) add(slot uint32, expire int64) {
	if expire == Never {
		return
	}
	if k := expire >> coarseBits; k > b.splitThrough {
		if b.lastCoarse == nil || b.lastCoarseKey != k {
			b.lastCoarse, b.lastCoarseKey = addTo(b.coarse, &b.coarseKeys, k, slot), k
			return
		}
		b.lastCoarse.Add(slot)
		return
	}
	addTo(b.fine, &b.fineKeys, expire, slot)
}

func (b *buckets) remove(slot uint32, expire int64) {
	if expire == Never {
		return
	}
	if k := expire >> coarseBits; k > b.splitThrough {
		if bm := b.coarse[k]; bm != nil {
			bm.Remove(slot)
		}
		return
	}
	if bm := b.fine[expire]; bm != nil {
		bm.Remove(slot)
	}
}

// nextDue is the earliest instant at which some bucket comes due, or Never.
func (b *buckets) nextDue() int64 {
	due := Never
	if len(b.fineKeys) > 0 {
		due = b.fineKeys[0]
	}
	if len(b.coarseKeys) > 0 {
		if c := b.coarseKeys[0] << coarseBits; c < due {
			due = c
		}
	}
	return due
}

// takeDue removes the slots of the buckets due at now, at most limit of
// them (limit <= 0: all), and calls fn for each slot filed in a fine
// bucket. expireOf gives a slot's current expiry, to refile a split coarse
// bucket's slots; fn's caller checks that the slot still expires by now.
// It reports whether no due bucket is left.
func (b *buckets) takeDue(now int64, limit int, expireOf func(uint32) int64, fn func(slot uint32)) bool {
	budget := limit
	spend := func() bool { // reports whether the budget allows one more slot
		if limit <= 0 {
			return true
		}
		if budget == 0 {
			return false
		}
		budget--
		return true
	}
	for len(b.coarseKeys) > 0 && b.coarseKeys[0]<<coarseBits <= now {
		k := b.coarseKeys[0]
		bm := b.coarse[k]
		b.splitThrough = max(b.splitThrough, k)
		if !drain(bm, spend, func(s uint32) {
			if e := expireOf(s); e != Never && e>>coarseBits == k {
				addTo(b.fine, &b.fineKeys, e, s)
			}
		}) {
			return false
		}
		heap.Pop(&b.coarseKeys)
		delete(b.coarse, k)
		if b.lastCoarseKey == k {
			b.lastCoarse = nil
		}
	}
	for len(b.fineKeys) > 0 && b.fineKeys[0] <= now {
		e := b.fineKeys[0]
		if !drain(b.fine[e], spend, fn) {
			return false
		}
		heap.Pop(&b.fineKeys)
		delete(b.fine, e)
	}
	return true
}

// drain removes slots from bm and passes them to fn while spend allows; it
// reports whether bm is empty.
func drain(bm *roaring.Bitmap, spend func() bool, fn func(uint32)) bool {
	var batch []uint32
	it := bm.Iterator()
	for it.HasNext() && spend() {
		batch = append(batch, it.Next())
	}
	for _, s := range batch {
		bm.Remove(s)
		fn(s)
	}
	return bm.IsEmpty()
}

// reset empties every bucket, for a policy change that refiles them all.
func (b *buckets) reset() { *b = newBuckets() }

// addTo adds slot to the bucket k of m, creating it if need be, and
// returns the bucket.
func addTo(m map[int64]*roaring.Bitmap, keys *keyHeap, k int64, slot uint32) *roaring.Bitmap {
	bm := m[k]
	if bm == nil {
		bm = roaring.New()
		m[k] = bm
		heap.Push(keys, k)
	}
	bm.Add(slot)
	return bm
}

// keyHeap is a min-heap of bucket keys.
type keyHeap []int64

func (h keyHeap) Len() int           { return len(h) }
func (h keyHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h keyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *keyHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *keyHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
