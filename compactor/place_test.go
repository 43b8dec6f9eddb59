package compactor

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestPlace(t *testing.T) {
	never := int64(math.MaxInt64)
	recs := []Placed{
		{Expire: 30, Size: 10},                    // 0
		{Expire: never, Size: 10},                 // 1
		{Tombstone: true, Expire: never, Size: 5}, // 2
		{Expire: 10, Size: 10},                    // 3
		{Expire: 20, Size: 10},                    // 4
		{Expire: never, Size: 10},                 // 5
		{Expire: 10, Size: 10},                    // 6
	}
	got := fmt.Sprint(Place(recs, 20))
	// tombstones; never (20 bytes fit one file); finite by expiry in 20-byte files
	if want := "[[2] [1 5] [3 6] [4 0]]"; got != want {
		t.Fatalf("Place = %s, want %s", got, want)
	}
	if got := Place(nil, 20); len(got) != 0 {
		t.Fatalf("Place(nil) = %v", got)
	}
}

func TestIDFilter(t *testing.T) {
	f := NewIDFilter(1000)
	for i := range 1000 {
		f.Add(fmt.Sprint("in-", i))
	}
	for i := range 1000 {
		if !f.MayContain(fmt.Sprint("in-", i)) {
			t.Fatalf("false negative for in-%d", i)
		}
	}
	fp := 0
	for i := range 10000 {
		if f.MayContain(fmt.Sprint("out-", i)) {
			fp++
		}
	}
	if fp > 300 {
		t.Fatalf("%d false positives in 10000, want about 100", fp)
	}
}

// TestIDFilterSizes: whatever the number of ids and their form, no false
// negatives, and false positives near the 1% target.
func TestIDFilterSizes(t *testing.T) {
	for _, n := range []int{0, 1, 7, 100, 5000, 100_000} {
		for _, form := range []string{"%d", "doc-%012d", "%x-7b1e-4c1f-9a3b-%08x"} {
			id := func(set, i int) string {
				if strings.Count(form, "%") == 2 {
					return fmt.Sprintf(form, set, i)
				}
				return fmt.Sprintf(form, set*10_000_000+i)
			}
			f := NewIDFilter(n)
			for i := range n {
				f.Add(id(1, i))
			}
			for i := range n {
				if !f.MayContain(id(1, i)) {
					t.Fatalf("n=%d %q: false negative for %s", n, form, id(1, i))
				}
			}
			fp := 0
			const probes = 20000
			for i := range probes {
				if f.MayContain(id(2, i)) {
					fp++
				}
			}
			if n >= 7 && fp > probes*3/100 { // (a filter of a few bits is a coarse one)
				t.Errorf("n=%d %q: %d false positives in %d, want about 1%%", n, form, fp, probes)
			}
			t.Logf("n=%d %q: %d bits, %d probes, %.2f%% false positives", n, form, f.m, f.k, 100*float64(fp)/probes)
		}
	}
}
