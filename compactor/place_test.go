package compactor

import (
	"fmt"
	"math"
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
