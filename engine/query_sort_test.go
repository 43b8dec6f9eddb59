package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ebbdb/ebb/index"
)

// TestSortByID checks sortByID against a comparison sort over id sets
// shaped to reach each of its paths: few and many ids, sorted input, long
// shared prefixes, ids that tie on the 8 bytes after the prefix, ids that
// are prefixes of others, and bytes (0x00, 0xff) at the ends of the range.
func TestSortByID(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gens := map[string]func(i int) string{
		"counter":   func(i int) string { return fmt.Sprintf("order-%012d", r.IntN(1_000_000)) },
		"random":    func(int) string { return fmt.Sprintf("%x", r.Uint64()) },
		"tie8":      func(int) string { return fmt.Sprintf("p-abcdefgh%d", r.IntN(50)) },
		"prefixes":  func(int) string { return "x" + "yyyyyyyyyyyy"[:r.IntN(12)] },
		"bytes":     func(int) string { return string([]byte{'k', byte(r.IntN(3) * 0x7f), byte(r.IntN(256)), 0xff}) },
		"unicode":   func(int) string { return fmt.Sprintf("ü-%d-é", r.IntN(1000)) },
		"sameAll":   func(int) string { return "same" },
		"shortLong": func(int) string { return "s" + fmt.Sprint(r.IntN(10)) + string(make([]byte, r.IntN(3))) },
	}
	for name, gen := range gens {
		for _, n := range []int{0, 1, 2, 10, keySortMin - 1, keySortMin, 100, radixSortMin - 1, radixSortMin, 1000, 5000} {
			cands := make([]cand, n)
			for i := range cands {
				cands[i] = cand{Slot: index.Slot{ID: gen(i)}, n: uint32(i)}
			}
			for _, sorted := range []bool{false, true} {
				in := slices.Clone(cands)
				if sorted {
					slices.SortStableFunc(in, byID)
				}
				want := slices.Clone(in)
				slices.SortStableFunc(want, byID)
				got := slices.Clone(in)
				sortByID(got)
				for i := range got {
					if got[i].ID != want[i].ID {
						t.Fatalf("%s n=%d sorted=%v: at %d got %q, want %q", name, n, sorted, i, got[i].ID, want[i].ID)
					}
				}
				// The same candidates, each once.
				seen := make(map[uint32]bool, n)
				for _, c := range got {
					if seen[c.n] {
						t.Fatalf("%s n=%d: slot %d twice", name, n, c.n)
					}
					seen[c.n] = true
				}
			}
		}
	}
}

// BenchmarkSortByID compares sortByID with the comparison sort it replaced
// on 20000 shuffled ids of the bench workload's shape.
func BenchmarkSortByID(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	cands := make([]cand, 20_000)
	for i := range cands {
		cands[i] = cand{Slot: index.Slot{ID: fmt.Sprintf("q-%016d", i*10+4)}, n: uint32(i)}
	}
	r.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	work := make([]cand, len(cands))
	b.Run("radix", func(b *testing.B) {
		for b.Loop() {
			copy(work, cands)
			sortByID(work)
		}
	})
	b.Run("compare", func(b *testing.B) {
		for b.Loop() {
			copy(work, cands)
			slices.SortFunc(work, byID)
		}
	})
}
