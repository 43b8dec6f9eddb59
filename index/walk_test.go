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
