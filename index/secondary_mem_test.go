package index

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// Keys as the engine encodes them: a type tag byte, then an order-preserving
// encoding of the value.
func numKey(v uint64) string {
	var b [9]byte
	b[0] = 0x03
	binary.BigEndian.PutUint64(b[1:], v)
	return string(b[:])
}

func strKey(s string) string { return "\x04" + s }

// docTerms are the terms of a typical document i: five scalar paths of
// falling selectivity and a three-element array.
func docTerms(i int) []Term {
	return []Term{
		{"/status", strKey([]string{"active", "idle", "banned", "new", "gone"}[i%5])},
		{"/country", strKey(fmt.Sprintf("c%02d", i%50))},
		{"/age", numKey(uint64(18 + i%100))},
		{"/ts", numKey(uint64(1_700_000_000 + i/3))},
		{"/email", strKey(fmt.Sprintf("user%07d@example.com", i))},
		{"/tags/[]", strKey(fmt.Sprintf("tag%d", i%1000))},
		{"/tags/[]", strKey(fmt.Sprintf("tag%d", (i*7+1)%1000))},
		{"/tags/[]", strKey(fmt.Sprintf("tag%d", (i*13+2)%1000))},
	}
}

// heapDelta runs fn and returns how much the live heap grew, after GC.
func heapDelta(fn func()) int64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

// indexedItems returns an index of n items and, for each, its terms, which
// the caller keeps alive so that they are not counted as freed memory.
func indexedItems(n int, termsOf func(i int) []Term) (*Index, [][]Term) {
	x := newTermIndex()
	all := make([][]Term, n)
	for i := range n {
		putItem(x, fmt.Sprintf("item-%011d", i), uint64(i+1), 1, 0)
		all[i] = termsOf(i)
	}
	return x, all
}

func setAll(t *testing.T, x *Index, all [][]Term) {
	for i, tms := range all {
		if !x.SetTerms(fmt.Sprintf("item-%011d", i), uint64(i+1), tms) {
			t.Fatalf("SetTerms %d refused", i)
		}
	}
}

// TestSecondaryMemoryPerItem measures the heap the secondary indexes cost
// per item with eight terms, per item and path for a unique and a
// low-cardinality path, and per path, and checks TermUsage's estimate
// against the measure.
func TestSecondaryMemoryPerItem(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 1e5 indexed items")
	}
	const n = 100_000
	x, all := indexedItems(n, docTerms)
	delta := heapDelta(func() { setAll(t, x, all) })
	per := float64(delta) / n
	u := x.TermUsage()
	t.Logf("%d items x 8 terms: %.1f B/item of secondary index (%d paths, %d keys, %d postings); TermUsage estimates %.1f B/item",
		n, per, u.Paths, u.Keys, u.Postings, float64(u.Bytes)/n)
	for _, p := range u.PerPath {
		t.Logf("  %-9s %6d keys %7d postings  ~%.1f B/item", p.Path, p.Keys, p.Postings, float64(p.Bytes)/n)
	}
	if per > 600 {
		t.Errorf("secondary index costs %.1f B/item for 8 terms, over the 600 B sanity bound", per)
	}
	if r := float64(u.Bytes) / float64(delta); r < 0.6 || r > 1.6 {
		t.Errorf("TermUsage.Bytes %d is %.2fx the measured %d", u.Bytes, r, delta)
	}

	// Dropping every item gives the memory back.
	freed := -heapDelta(func() {
		for i := range n {
			x.Delete(fmt.Sprintf("item-%011d", i))
		}
	})
	if u := x.TermUsage(); u.Keys != 0 || u.Postings != 0 || u.Paths != 0 {
		t.Fatalf("after deleting every item: %+v", u)
	}
	t.Logf("deleting every item freed %.1f B/item", float64(freed)/n)
	if freed < delta*2/3 {
		t.Errorf("deleting every item freed %d of the %d bytes the terms took", freed, delta)
	}
	runtime.KeepAlive(all)
}

// TestSecondaryMemoryPerPath measures the cost one indexed path adds per
// item, for a path whose every key is unique and for one with 5 keys, and
// the fixed cost of a path.
func TestSecondaryMemoryPerPath(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 1e5 indexed items")
	}
	const n = 100_000
	for _, c := range []struct {
		name  string
		terms func(i int) []Term
		bound float64
	}{
		{"unique keys", func(i int) []Term { return []Term{{"/email", strKey(fmt.Sprintf("user%07d@example.com", i))}} }, 250},
		{"5 keys", func(i int) []Term { return []Term{{"/status", strKey(fmt.Sprint(i % 5))}} }, 80},
	} {
		x, all := indexedItems(n, c.terms)
		per := float64(heapDelta(func() { setAll(t, x, all) })) / n
		t.Logf("one path, %s: %.1f B/item (TermUsage %.1f)", c.name, per, float64(x.TermUsage().Bytes)/n)
		if per > c.bound {
			t.Errorf("one path with %s costs %.1f B/item, over the %.0f B sanity bound", c.name, per, c.bound)
		}
		runtime.KeepAlive(all)
	}

	// Fixed cost: m paths, each with one key on one item.
	const m = 10_000
	x, all := indexedItems(m, func(i int) []Term { return []Term{{fmt.Sprintf("/p%05d", i), "k"}} })
	per := float64(heapDelta(func() { setAll(t, x, all) })) / m
	t.Logf("a path with one key on one item: %.0f B (TermUsage %.0f)", per, float64(x.TermUsage().Bytes)/m)
	if per > 2000 {
		t.Errorf("a path costs %.0f B, over the 2000 B sanity bound", per)
	}
	runtime.KeepAlive(all)
}

// TestBitmapOverhead checks bitmapOverhead, TermUsage's estimate of a
// roaring bitmap's heap besides its contents, against the measure.
func TestBitmapOverhead(t *testing.T) {
	const n = 10_000
	bms := make([]*roaring.Bitmap, n)
	var contents int64
	delta := heapDelta(func() {
		for i := range bms {
			bms[i] = roaring.New()
			for j := range smallPostings + 1 {
				bms[i].Add(uint32(i*1000 + j))
			}
			contents += int64(bms[i].GetSizeInBytes())
		}
	})
	over := float64(delta-contents) / n
	t.Logf("roaring bitmap: %.0f B besides GetSizeInBytes (estimate %d)", over, bitmapOverhead)
	if over < bitmapOverhead/2 || over > bitmapOverhead*2 {
		t.Errorf("bitmap overhead measured %.0f B, estimated %d", over, bitmapOverhead)
	}
	runtime.KeepAlive(bms)
}
