package index

import (
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
)

// smallPostings is the most slots a term keeps in a sorted slice before it
// switches to a roaring bitmap. A roaring bitmap costs about 250 bytes
// before its first slot and 2 bytes a slot after; a slice costs 4 bytes a
// slot, 6 with the spare capacity append leaves. Most terms of a selective
// path (an email, a timestamp) hold one slot, so the slice saves over 200
// bytes each; past about 64 slots the bitmap is smaller. It is a variable so that
// tests can make both forms common with few items.
var smallPostings = 64

// term is one distinct (path, key) pair of a secondary index and its posting
// list: the slots whose items have it. The slots live in small, sorted, while
// there are at most smallPostings of them, and in big after that. A term
// with no slots is freed at once.
type term struct {
	key   string
	small []uint32        // sorted slots, while big is nil
	big   *roaring.Bitmap // the slots once there are more than smallPostings
	path  uint32          // the interned path the key belongs to
	id    uint32          // the term's own id: its place in termPages
}

// inUse reports whether t holds a slot; a free term id holds none.
func (t *term) inUse() bool { return t.big != nil || len(t.small) > 0 }

// card is the number of slots in t's posting list.
func (t *term) card() int {
	if t.big != nil {
		return int(t.big.GetCardinality())
	}
	return len(t.small)
}

// add puts slot n in t's posting list; it is not there yet.
func (t *term) add(n uint32) {
	if t.big != nil {
		t.big.Add(n)
		return
	}
	if k := len(t.small); k == 0 || t.small[k-1] < n {
		t.small = append(t.small, n) // mostly: slots are handed out in order
	} else {
		i, _ := slices.BinarySearch(t.small, n)
		t.small = slices.Insert(t.small, i, n)
	}
	if len(t.small) > smallPostings {
		t.big = roaring.New()
		t.big.AddMany(t.small)
		t.small = nil
	}
}

// remove takes slot n out of t's posting list. A bitmap that shrinks to half
// of smallPostings turns back into a slice (the gap between the two
// thresholds keeps a term near one of them from switching at every write),
// and a slice that is mostly empty capacity is reallocated, so that memory
// follows the live postings.
func (t *term) remove(n uint32) {
	if t.big != nil {
		t.big.Remove(n)
		if t.big.GetCardinality() <= uint64(smallPostings/2) {
			t.small = t.big.ToArray()
			t.big = nil
		}
		return
	}
	i, ok := slices.BinarySearch(t.small, n)
	if !ok {
		return
	}
	t.small = slices.Delete(t.small, i, i+1)
	if c := cap(t.small); c >= 16 && len(t.small) <= c/4 {
		t.small = slices.Clone(t.small)
	}
}

// bytes estimates the heap t's posting list holds.
func (t *term) bytes() int64 {
	if t.big != nil {
		return bitmapOverhead + int64(t.big.GetSizeInBytes())
	}
	return int64(cap(t.small)) * 4
}

// bitmapOverhead is the heap a roaring bitmap of one container holds
// besides what GetSizeInBytes counts: the Bitmap, its slices and the
// container's header. Measured for roaring/v2 v2.30 on 64-bit platforms
// (TestBitmapOverhead).
const bitmapOverhead = 256

// union accumulates the posting lists of many terms into one new bitmap.
// The slots of small posting lists are gathered in a slice and added to the
// bitmap at once, sorted: a range over many keys of a slot or two each (a
// range of timestamps) then costs a sort rather than a bitmap insertion per
// key.
type union struct {
	few  []uint32          // the slots of small posting lists
	bigs []*roaring.Bitmap // the big posting lists, ORed at the end
}

func newUnion() union { return union{} }

// add folds t's slots into the union.
func (u *union) add(t *term) {
	if t.big != nil {
		u.bigs = append(u.bigs, t.big)
	} else {
		u.few = append(u.few, t.small...)
	}
}

// result is the union as a new bitmap that shares nothing with the index.
func (u *union) result() *roaring.Bitmap {
	if len(u.bigs) == 1 && len(u.few) == 0 {
		return u.bigs[0].Clone()
	}
	out := roaring.New()
	if len(u.few) > 0 {
		slices.Sort(u.few)
		out.AddMany(u.few)
	}
	if len(u.bigs) == 0 {
		return out
	}
	return roaring.FastOr(append(u.bigs, out)...)
}
