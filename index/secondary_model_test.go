package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// termModel is what the secondary indexes should hold: for every id in the
// index, its version, where its record is, when it expires, and the terms
// last set on it while it kept its slot.
type termModel struct {
	items map[string]*modelItem
	now   int64 // the last Advance
}

type modelItem struct {
	seq      uint64
	file     uint32
	expire   int32         // 0: never
	terms    map[Term]bool // nil: never set
	termsSeq uint64
}

var (
	modelPaths = []string{"/a", "/b", "/t/[]"}
	modelKeys  = []string{"", "\x00", "a", "ab", "abc", "b", "ba", "c", "\xff"}
)

// answer is the sorted ids with a term under path whose key satisfies ok.
func (m *termModel) answer(path string, ok func(key string) bool) []string {
	var out []string
	for id, it := range m.items {
		for tm := range it.terms {
			if tm.Path == path && ok(tm.Key) {
				out = append(out, id)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestSecondaryModel(t *testing.T) {
	steps := 1000
	if testing.Short() {
		steps = 200
	}
	defer func(n int) { smallPostings = n }(smallPostings)
	for seed := range uint64(6) {
		// Odd seeds switch posting lists between slices and bitmaps often.
		smallPostings = []int{64, 2}[seed%2]
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { runTermModel(t, seed, steps) })
	}
}

func runTermModel(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 42))
	x := newTermIndex()
	m := &termModel{items: map[string]*modelItem{}}
	var seq uint64
	sawBig, sawDemote, wasBig := false, false, map[uint32]string{} // term id → key
	randID := func() string { return fmt.Sprint("id", rng.IntN(40)) }
	randTerms := func() []Term {
		out := make([]Term, rng.IntN(6))
		for i := range out {
			// Skewed towards the first keys, so some terms have many slots.
			out[i] = Term{modelPaths[rng.IntN(len(modelPaths))], modelKeys[rng.IntN(1+rng.IntN(len(modelKeys)))]}
		}
		return out
	}
	for step := range steps {
		var op string
		switch r := rng.IntN(100); {
		case r < 30:
			id := randID()
			seq++
			op = fmt.Sprintf("put %s seq %d", id, seq)
			var expire int32
			if rng.IntN(3) == 0 {
				expire = int32(m.now) + 1 + rng.Int32N(20)
			}
			file := 1 + uint32(rng.IntN(3))
			putItem(x, id, seq, file, expire)
			it := m.items[id]
			if it == nil {
				it = &modelItem{}
				m.items[id] = it
			}
			it.seq, it.file, it.expire = seq, file, expire
		case r < 40:
			id := randID()
			op = "delete " + id
			_, had := m.items[id]
			if x.Delete(id) != had {
				t.Fatalf("step %d %s: Delete disagrees with the model", step, op)
			}
			delete(m.items, id)
		case r < 80:
			id := randID()
			it := m.items[id]
			s := uint64(rng.IntN(int(seq) + 1))
			if it != nil && rng.IntN(4) > 0 {
				s = it.seq // mostly the current version
			}
			tms := randTerms()
			op = fmt.Sprintf("set %s seq %d %q", id, s, tms)
			want := it != nil && it.seq == s
			if x.SetTerms(id, s, tms) != want {
				t.Fatalf("step %d %s: SetTerms returned %v", step, op, !want)
			}
			if want {
				it.terms, it.termsSeq = map[Term]bool{}, s
				for _, tm := range tms {
					it.terms[tm] = true
				}
			}
		case r < 88:
			m.now += int64(rng.IntN(6))
			op = fmt.Sprint("advance ", m.now)
			x.Advance(m.now)
		case r < 98:
			gone := 1 + uint32(rng.IntN(3))
			limit := 1 + rng.IntN(3)
			op = fmt.Sprintf("purge file %d by %d", gone, limit)
			var next uint32
			for done := false; !done; {
				_, next, done = x.PurgeExpiredN(func(f uint32) bool { return f == gone }, limit, next)
			}
			for id, it := range m.items {
				if it.file == gone && it.expire > 0 && int64(it.expire) <= m.now {
					delete(m.items, id)
				}
			}
		default:
			op = "clear"
			x.ClearTerms()
			for _, it := range m.items {
				it.terms, it.termsSeq = nil, 0
			}
		}
		checkTermModel(t, fmt.Sprintf("step %d (%s)", step, op), x, m, rng)
		// A bitmap that loses slots one by one becomes a slice again before
		// it is empty, so one that is gone, unless by a clear, was demoted.
		for id, key := range wasBig {
			if op != "clear" && !x.sec.terms.isBig(id, key) {
				sawDemote = true
			}
			delete(wasBig, id)
		}
		x.sec.terms.each(func(tm *term) {
			if tm.big != nil {
				sawBig = true
				wasBig[tm.id] = tm.key
			}
		})
	}
	if smallPostings < 10 && steps >= 1000 && (!sawBig || !sawDemote) {
		t.Errorf("posting lists became bitmaps: %v, and bitmaps became slices again: %v; the run missed a change", sawBig, sawDemote)
	}
}

// checkTermModel compares every query answer of x with the model's.
func checkTermModel(t *testing.T, where string, x *Index, m *termModel, rng *rand.Rand) {
	t.Helper()
	check := func(what string, got *roaring.Bitmap, want []string) {
		t.Helper()
		ids := idsOf(t, x, got)
		if !slices.Equal(ids, want) && len(ids)+len(want) > 0 {
			t.Fatalf("%s: %s = %q, want %q", where, what, ids, want)
		}
	}
	bound := func() (KeyBound, string) {
		switch rng.IntN(4) {
		case 0:
			return KeyBound{Unbounded: true}, "-"
		case 1:
			k := modelKeys[rng.IntN(len(modelKeys))]
			return KeyBound{Key: k, Inclusive: true}, fmt.Sprintf("[%q]", k)
		default:
			k := modelKeys[rng.IntN(len(modelKeys))] + "a"[:rng.IntN(2)]
			return KeyBound{Key: k}, fmt.Sprintf("(%q)", k)
		}
	}
	keys, postings, paths := map[Term]bool{}, 0, map[string]bool{}
	for _, it := range m.items {
		postings += len(it.terms)
		for tm := range it.terms {
			keys[tm] = true
			paths[tm.Path] = true
		}
	}
	if u := x.TermUsage(); u.Keys != len(keys) || u.Postings != int64(postings) || u.Paths != len(paths) {
		t.Fatalf("%s: TermUsage %d keys %d postings %d paths, want %d %d %d",
			where, u.Keys, u.Postings, u.Paths, len(keys), postings, len(paths))
	}
	for _, path := range append(modelPaths, "/none") {
		for _, k := range modelKeys {
			check(fmt.Sprintf("TermEq(%s, %q)", path, k), x.TermEq(path, k), m.answer(path, func(key string) bool { return key == k }))
		}
		k1, k2 := modelKeys[rng.IntN(len(modelKeys))], modelKeys[rng.IntN(len(modelKeys))]
		check(fmt.Sprintf("TermEq(%s, %q, %q)", path, k1, k2), x.TermEq(path, k1, k2, "zz"),
			m.answer(path, func(key string) bool { return key == k1 || key == k2 }))
		for range 3 {
			lo, los := bound()
			hi, his := bound()
			in := func(key string) bool {
				return (lo.Unbounded || key > lo.Key || (lo.Inclusive && key == lo.Key)) &&
					(hi.Unbounded || key < hi.Key || (hi.Inclusive && key == hi.Key))
			}
			check(fmt.Sprintf("TermRange(%s, %s, %s)", path, los, his), x.TermRange(path, lo, hi), m.answer(path, in))
		}
		for _, pre := range []string{"", "a", "ab", "b", "\xff", "x"} {
			check(fmt.Sprintf("TermPrefix(%s, %q)", path, pre), x.TermPrefix(path, pre),
				m.answer(path, func(key string) bool { return strings.HasPrefix(key, pre) }))
		}
		var walked []string
		desc := rng.IntN(2) == 0
		x.TermWalk(path, desc, func(key string, slots Postings) bool {
			walked = append(walked, key)
			check(fmt.Sprintf("TermWalk(%s) at %q", path, key), slots.Bitmap(), m.answer(path, func(k string) bool { return k == key }))
			return true
		})
		var want []string
		for tm := range keys {
			if tm.Path == path {
				want = append(want, tm.Key)
			}
		}
		slices.Sort(want)
		if desc {
			slices.Reverse(want)
		}
		if !slices.Equal(walked, want) {
			t.Fatalf("%s: TermWalk(%s) keys %q, want %q", where, path, walked, want)
		}
	}
	var live []string
	for id, it := range m.items {
		if seq, ok := x.TermsSeq(id); ok != (it.terms != nil) || seq != it.termsSeq {
			t.Fatalf("%s: TermsSeq(%s) = %d %v, want %d %v", where, id, seq, ok, it.termsSeq, it.terms != nil)
		}
		if it.expire == 0 || int64(it.expire) > m.now {
			live = append(live, id)
		}
	}
	slices.Sort(live)
	check("LiveBitmap", x.LiveBitmap(), live)
	for _, path := range append(modelPaths, "/none") {
		with := m.answer(path, func(string) bool { return true })
		without := slices.DeleteFunc(slices.Clone(live), func(id string) bool { _, ok := slices.BinarySearch(with, id); return ok })
		check(fmt.Sprintf("SlotsWithoutTerm(live, %s)", path), x.SlotsWithoutTerm(x.LiveBitmap(), path), without)
		var all []string // every id in the index, expired ones too
		for id := range m.items {
			if _, ok := slices.BinarySearch(with, id); !ok {
				all = append(all, id)
			}
		}
		slices.Sort(all)
		check(fmt.Sprintf("SlotsWithoutTerm(nil, %s)", path), x.SlotsWithoutTerm(nil, path), all)
	}
}

// isBig reports whether term id is in use, has key and a bitmap.
func (s *termStore) isBig(id uint32, key string) bool {
	if s.pages[id>>termPageBits] == nil {
		return false
	}
	t := s.at(id)
	return t.big != nil && t.key == key
}
