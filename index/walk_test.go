package index

import (
	"fmt"
	"slices"
	"testing"
)

// TestLiveFrom: walking the slots in steps visits exactly the items Live
// lists, whatever the step, skipping deleted, marked and unmarked expired
// ones.
func TestLiveFrom(t *testing.T) {
	x := newTestIndex()
	for i := range 50 {
		var expire int64 = Never
		if i%4 == 1 {
			expire = 150 // expired at 200: marked below for some, not others
		}
		put(x, fmt.Sprintf("k%02d", i), uint64(i+1), 1, expire)
	}
	for i := 0; i < 50; i += 7 {
		x.Delete(fmt.Sprintf("k%02d", i))
	}
	x.AdvanceN(200, 3) // mark only a few of the expired
	var want []string
	for _, s := range x.Live(200) {
		want = append(want, s.ID)
	}
	for _, step := range []int{1, 3, 50, 1000} {
		var got []string
		for from, done := uint32(0), false; !done; {
			var slots []Slot
			slots, from, done = x.LiveFrom(from, step, 200)
			if len(slots) > step {
				t.Fatalf("step %d: %d slots", step, len(slots))
			}
			for _, s := range slots {
				got = append(got, s.ID)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: walked %v, want %v", step, got, want)
		}
	}
}

// TestLookupHintedAgreesWithLookup checks the hinted read against Lookup
// for every hint a query can hold: the right slot, a slot freed and reused
// by another id, a slot whose item expired, and numbers past every slot.
func TestLookupHintedAgreesWithLookup(t *testing.T) {
	x := newTestIndex()
	put(x, "a", 1, 1, Never)
	put(x, "b", 2, 1, 50)
	put(x, "c", 3, 1, Never)
	slot := func(id string) uint32 {
		n, ok := x.SlotOf(id)
		if !ok {
			t.Fatalf("SlotOf(%q) not found", id)
		}
		return n
	}
	na, nb, nc := slot("a"), slot("b"), slot("c")
	x.Delete("a")
	put(x, "d", 4, 1, Never) // takes a's freed slot
	put(x, "a", 5, 2, Never) // a again, in a new slot
	if slot("d") != na {
		t.Fatalf("d did not reuse a's slot %d", na)
	}
	for _, tc := range []struct {
		id   string
		hint uint32
		now  int64
	}{
		{"c", nc, 10},         // the right slot
		{"a", na, 10},         // a's old slot, now d's
		{"d", nb, 10},         // a slot of another live item
		{"b", nb, 10},         // live at 10
		{"b", nb, 50},         // expired at 50
		{"a", 1 << 20, 10},    // past every slot
		{"a", noHint, 10},     // no hint
		{"zz", nc, 10},        // no such item
		{"", nc + 100, 10},    // the empty id, never an item
		{"b", slot("a"), 100}, // expired, hint elsewhere
	} {
		want, wok := x.Lookup(tc.id, tc.now)
		got, gok := x.LookupHinted(tc.id, tc.hint, tc.now)
		if got != want || gok != wok {
			t.Errorf("LookupHinted(%q, %d, %d) = %+v %v, Lookup = %+v %v", tc.id, tc.hint, tc.now, got, gok, want, wok)
		}
	}
}

// noHint is a hint no slot number reaches.
const noHint = 1<<32 - 1

// TestCountLive checks the count told from bitmaps alone against a count
// of SlotAt, and that it is refused while an item expired by now is not
// marked yet (or may not be: coarse buckets say a window, not an instant).
func TestCountLive(t *testing.T) {
	x := newTestIndex()
	for i := range 60 {
		var expire int64 = Never
		switch i % 3 {
		case 1:
			expire = 150
		case 2:
			expire = 1000
		}
		put(x, fmt.Sprintf("k%02d", i), uint64(i+1), 1, expire)
	}
	for i := 0; i < 60; i += 11 {
		x.Delete(fmt.Sprintf("k%02d", i))
	}
	bm := x.LiveBitmap()
	for i := range uint32(70) {
		bm.Add(i) // and slots not in use
	}
	want := func(now int64) uint64 {
		var n uint64
		it := bm.Iterator()
		for it.HasNext() {
			if _, ok := x.SlotAt(it.Next(), now); ok {
				n++
			}
		}
		return n
	}
	if _, ok := x.CountLive(bm, 200); ok {
		t.Fatal("counted at 200 with items expired at 150 unmarked")
	}
	x.Advance(200)
	for _, now := range []int64{200, 900} {
		if got, ok := x.CountLive(bm, now); !ok || got != want(now) {
			t.Fatalf("CountLive at %d = %d, %v; want %d, true", now, got, ok, want(now))
		}
	}
	if _, ok := x.CountLive(bm, 1000); ok {
		t.Fatal("counted at 1000 with items expired at 1000 unmarked")
	}
}
