package index

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// newTermIndex returns an index whose TTL field is the item's expiry
// instant (0: never), for secondary-index tests.
func newTermIndex() *Index {
	return New(func(ts int64, ttl int32) int64 {
		if ttl > 0 {
			return int64(ttl)
		}
		return Never
	})
}

func putItem(x *Index, id string, seq uint64, file uint32, expire int32) {
	x.Put(Slot{ID: id, Seq: seq, TS: 1, TTL: expire, Size: 10, Loc: Loc{File: file}})
}

// slotOf returns the slot number of id, failing the test if it is absent.
func slotOf(t *testing.T, x *Index, id string) uint32 {
	t.Helper()
	n, _, ok := x.ids.find(id, x.slots)
	if !ok {
		t.Fatalf("id %q not in the index", id)
	}
	return n
}

// idsOf maps a bitmap of slots back to the sorted ids that hold them.
func idsOf(t *testing.T, x *Index, b *roaring.Bitmap) []string {
	t.Helper()
	var out []string
	for _, n := range b.ToArray() {
		if !x.used.Contains(n) {
			t.Fatalf("slot %d in a result is not in use", n)
		}
		out = append(out, x.slots.at(n).ID)
	}
	slices.Sort(out)
	return out
}

func wantIDs(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

func terms(path string, keys ...string) []Term {
	out := make([]Term, len(keys))
	for i, k := range keys {
		out[i] = Term{Path: path, Key: k}
	}
	return out
}

func TestSetTermsAndTermEq(t *testing.T) {
	x := newTermIndex()
	putItem(x, "a", 1, 1, 0)
	putItem(x, "b", 2, 1, 0)
	putItem(x, "c", 3, 1, 0)
	if !x.SetTerms("a", 1, append(terms("/color", "red"), terms("/tags/[]", "x", "y", "x")...)) {
		t.Fatal("SetTerms a refused")
	}
	x.SetTerms("b", 2, append(terms("/color", "blue"), terms("/tags/[]", "y")...))
	x.SetTerms("c", 3, terms("/color", "red"))

	wantIDs(t, "red", idsOf(t, x, x.TermEq("/color", "red")), "a", "c")
	wantIDs(t, "red|blue", idsOf(t, x, x.TermEq("/color", "red", "blue", "green")), "a", "b", "c")
	wantIDs(t, "green", idsOf(t, x, x.TermEq("/color", "green")))
	wantIDs(t, "no keys", idsOf(t, x, x.TermEq("/color")))
	wantIDs(t, "unknown path", idsOf(t, x, x.TermEq("/size", "red")))
	wantIDs(t, "tag y", idsOf(t, x, x.TermEq("/tags/[]", "y")), "a", "b")

	// The duplicate "x" of a counts once.
	if u := x.TermUsage(); u.Paths != 2 || u.Keys != 4 || u.Postings != 6 {
		t.Errorf("TermUsage = %d paths %d keys %d postings, want 2 4 6", u.Paths, u.Keys, u.Postings)
	}

	// Replacing: a leaves red and tag x, keeps tag y.
	x.SetTerms("a", 1, append(terms("/color", "blue"), terms("/tags/[]", "y")...))
	wantIDs(t, "red after replace", idsOf(t, x, x.TermEq("/color", "red")), "c")
	wantIDs(t, "blue after replace", idsOf(t, x, x.TermEq("/color", "blue")), "a", "b")
	wantIDs(t, "tag x after replace", idsOf(t, x, x.TermEq("/tags/[]", "x")))
	if u := x.TermUsage(); u.Keys != 3 || u.Postings != 5 {
		t.Errorf("after replace: %d keys %d postings, want 3 5 (freed term x kept?)", u.Keys, u.Postings)
	}

	// An item indexed with no terms has none, and says it was indexed.
	x.SetTerms("c", 3, nil)
	wantIDs(t, "red after emptying c", idsOf(t, x, x.TermEq("/color", "red")))
	if seq, ok := x.TermsSeq("c"); !ok || seq != 3 {
		t.Errorf("TermsSeq(c) = %d %v, want 3 true", seq, ok)
	}
}

func TestTermResultsAreTheCallersOwn(t *testing.T) {
	x := newTermIndex()
	for i := range 200 { // enough for a roaring posting list
		id := string(rune('a'+i%26)) + string(rune('a'+i/26))
		putItem(x, id, uint64(i+1), 1, 0)
		x.SetTerms(id, uint64(i+1), terms("/k", "v"))
	}
	putItem(x, "z", 1000, 1, 0)
	x.SetTerms("z", 1000, terms("/k", "w"))
	for _, b := range []*roaring.Bitmap{
		x.TermEq("/k", "v"), x.TermEq("/k", "v", "w"),
		x.TermRange("/k", KeyBound{Unbounded: true}, KeyBound{Unbounded: true}),
		x.TermPrefix("/k", ""), x.LiveBitmap(),
	} {
		b.Clear()
	}
	if got := x.TermEq("/k", "v").GetCardinality(); got != 200 {
		t.Fatalf("clearing a result changed the index: v has %d slots", got)
	}
	if got := x.LiveBitmap().GetCardinality(); got != 201 {
		t.Fatalf("clearing LiveBitmap changed the index: %d live", got)
	}
}

func TestStaleSetTermsIgnored(t *testing.T) {
	x := newTermIndex()
	putItem(x, "a", 1, 1, 0)
	putItem(x, "a", 2, 1, 0)
	if x.SetTerms("a", 1, terms("/v", "old")) {
		t.Fatal("SetTerms for superseded version 1 accepted")
	}
	if x.SetTerms("missing", 1, terms("/v", "old")) {
		t.Fatal("SetTerms for an absent id accepted")
	}
	if _, ok := x.TermsSeq("a"); ok {
		t.Fatal("TermsSeq reports terms that were never set")
	}
	if u := x.TermUsage(); u.Keys != 0 || u.Paths != 0 {
		t.Fatalf("refused SetTerms left %d keys %d paths", u.Keys, u.Paths)
	}
	if !x.SetTerms("a", 2, terms("/v", "new")) {
		t.Fatal("SetTerms for the newest version refused")
	}
	// Put replaces in place and keeps the old terms until SetTerms.
	putItem(x, "a", 3, 1, 0)
	wantIDs(t, "new after Put", idsOf(t, x, x.TermEq("/v", "new")), "a")
	if seq, ok := x.TermsSeq("a"); !ok || seq != 2 {
		t.Fatalf("TermsSeq = %d %v, want 2 true", seq, ok)
	}
	if x.SetTerms("a", 2, terms("/v", "stale")) {
		t.Fatal("late SetTerms for version 2 accepted after version 3")
	}
	x.SetTerms("a", 3, terms("/v", "newer"))
	wantIDs(t, "new after SetTerms 3", idsOf(t, x, x.TermEq("/v", "new")))
	wantIDs(t, "newer", idsOf(t, x, x.TermEq("/v", "newer")), "a")

	// An expired item can still be given terms for its newest version.
	putItem(x, "e", 10, 1, 50)
	x.Advance(60)
	if !x.SetTerms("e", 10, terms("/v", "e")) {
		t.Fatal("SetTerms refused for an expired item's newest version")
	}
}

func TestReusedSlotStartsWithoutTerms(t *testing.T) {
	x := newTermIndex()
	putItem(x, "a", 1, 1, 0)
	putItem(x, "b", 2, 7, 100) // expires at 100, record in file 7
	x.SetTerms("a", 1, terms("/v", "a", "shared"))
	x.SetTerms("b", 2, terms("/v", "b", "shared"))
	slotA, slotB := slotOf(t, x, "a"), slotOf(t, x, "b")

	x.Delete("a")
	putItem(x, "c", 3, 1, 0)
	if slotOf(t, x, "c") != slotA {
		t.Fatal("test assumes c reuses a's slot")
	}
	wantIDs(t, "a's key after reuse", idsOf(t, x, x.TermEq("/v", "a")))
	wantIDs(t, "shared after reuse", idsOf(t, x, x.TermEq("/v", "shared")), "b")
	if _, ok := x.TermsSeq("c"); ok {
		t.Fatal("new item on a reused slot has terms")
	}

	x.Advance(100)
	if got := x.PurgeExpired(func(f uint32) bool { return f == 7 }); got != 1 {
		t.Fatalf("purged %d, want 1", got)
	}
	putItem(x, "d", 4, 1, 0)
	if slotOf(t, x, "d") != slotB {
		t.Fatal("test assumes d reuses b's slot")
	}
	wantIDs(t, "b's key after purge", idsOf(t, x, x.TermEq("/v", "b", "shared")))
	if u := x.TermUsage(); u.Keys != 0 || u.Paths != 0 || u.Postings != 0 {
		t.Fatalf("after freeing every indexed slot: %+v", u)
	}
}

func TestClearTerms(t *testing.T) {
	x := newTermIndex()
	putItem(x, "a", 1, 1, 0)
	x.SetTerms("a", 1, terms("/v", "1"))
	x.ClearTerms()
	wantIDs(t, "after ClearTerms", idsOf(t, x, x.TermEq("/v", "1")))
	if _, ok := x.TermsSeq("a"); ok {
		t.Fatal("TermsSeq after ClearTerms")
	}
	if u := x.TermUsage(); u.Keys != 0 || u.Bytes != 0 {
		t.Fatalf("TermUsage after ClearTerms = %+v", u)
	}
	// The index works on after a clear, and releasing a slot is safe.
	x.SetTerms("a", 1, terms("/v", "2"))
	wantIDs(t, "after re-set", idsOf(t, x, x.TermEq("/v", "2")), "a")
	x.Delete("a")
	wantIDs(t, "after delete", idsOf(t, x, x.TermEq("/v", "2")))
}

// rangeIndex holds items k0..k9 with key "k0".."k9" under /n, k5 twice.
func rangeIndex(t *testing.T) *Index {
	x := newTermIndex()
	for i := range 10 {
		id := "k" + string(rune('0'+i))
		putItem(x, id, uint64(i+1), 1, 0)
		x.SetTerms(id, uint64(i+1), terms("/n", id))
	}
	putItem(x, "k5bis", 100, 1, 0)
	x.SetTerms("k5bis", 100, terms("/n", "k5"))
	return x
}

func TestTermRangeBounds(t *testing.T) {
	x := rangeIndex(t)
	inc := func(k string) KeyBound { return KeyBound{Key: k, Inclusive: true} }
	exc := func(k string) KeyBound { return KeyBound{Key: k} }
	open := KeyBound{Unbounded: true}
	for _, c := range []struct {
		name   string
		lo, hi KeyBound
		want   []string
	}{
		{"[k2,k4]", inc("k2"), inc("k4"), []string{"k2", "k3", "k4"}},
		{"(k2,k4)", exc("k2"), exc("k4"), []string{"k3"}},
		{"[k2,k4)", inc("k2"), exc("k4"), []string{"k2", "k3"}},
		{"(k2,k4]", exc("k2"), inc("k4"), []string{"k3", "k4"}},
		{"(-,k1]", open, inc("k1"), []string{"k0", "k1"}},
		{"[k8,-)", inc("k8"), open, []string{"k8", "k9"}},
		{"(-,-)", open, open, []string{"k0", "k1", "k2", "k3", "k4", "k5", "k5bis", "k6", "k7", "k8", "k9"}},
		{"[k5,k5]", inc("k5"), inc("k5"), []string{"k5", "k5bis"}},
		{"(k5,k5]", exc("k5"), inc("k5"), nil},
		{"[k6,k3]", inc("k6"), inc("k3"), nil},
		{"between keys", inc("k33"), inc("k44"), []string{"k4"}},
		{"above all", exc("k9"), open, nil},
		{"below all", open, exc("k0"), nil},
		{"Key ignored when unbounded", KeyBound{Key: "k9", Unbounded: true}, KeyBound{Key: "k0", Unbounded: true}, []string{"k0", "k1", "k2", "k3", "k4", "k5", "k5bis", "k6", "k7", "k8", "k9"}},
	} {
		wantIDs(t, c.name, idsOf(t, x, x.TermRange("/n", c.lo, c.hi)), c.want...)
	}
	wantIDs(t, "unknown path", idsOf(t, x, x.TermRange("/m", open, open)))
}

func TestTermPrefix(t *testing.T) {
	x := newTermIndex()
	for i, k := range []string{"", "a", "ab", "abc", "abd", "ac", "b", "\xff"} {
		id := "i" + string(rune('0'+i))
		putItem(x, id, uint64(i+1), 1, 0)
		x.SetTerms(id, uint64(i+1), terms("/s", k))
	}
	wantIDs(t, "ab", idsOf(t, x, x.TermPrefix("/s", "ab")), "i2", "i3", "i4")
	wantIDs(t, "a", idsOf(t, x, x.TermPrefix("/s", "a")), "i1", "i2", "i3", "i4", "i5")
	wantIDs(t, "abc", idsOf(t, x, x.TermPrefix("/s", "abc")), "i3")
	wantIDs(t, "abz", idsOf(t, x, x.TermPrefix("/s", "abz")))
	wantIDs(t, "empty", idsOf(t, x, x.TermPrefix("/s", "")), "i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7")
	wantIDs(t, "\\xff", idsOf(t, x, x.TermPrefix("/s", "\xff")), "i7")
	wantIDs(t, "unknown path", idsOf(t, x, x.TermPrefix("/t", "")))
}

func TestTermWalk(t *testing.T) {
	x := rangeIndex(t)
	var keys []string
	x.TermWalk("/n", false, func(k string, slots Postings) bool {
		keys = append(keys, k)
		want := 1
		if k == "k5" {
			want = 2
		}
		if slots.Len() != want || int(slots.Bitmap().GetCardinality()) != want {
			t.Errorf("key %s has %d slots, want %d", k, slots.Len(), want)
		}
		return true
	})
	asc := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"}
	if !slices.Equal(keys, asc) {
		t.Errorf("ascending walk = %q", keys)
	}
	keys = keys[:0]
	x.TermWalk("/n", true, func(k string, _ Postings) bool {
		keys = append(keys, k)
		return k != "k7"
	})
	if !slices.Equal(keys, []string{"k9", "k8", "k7"}) {
		t.Errorf("descending walk stopped at k7 = %q", keys)
	}
	keys = keys[:0]
	x.TermWalk("/n", false, func(k string, _ Postings) bool {
		keys = append(keys, k)
		return false
	})
	if !slices.Equal(keys, []string{"k0"}) {
		t.Errorf("walk stopped at once = %q", keys)
	}
	x.TermWalk("/none", false, func(string, Postings) bool {
		t.Error("walk of an unknown path called fn")
		return false
	})
}

func TestPostingsSwitchRepresentation(t *testing.T) {
	x := newTermIndex()
	n := 3 * smallPostings
	for i := range n {
		id := string(rune(0x100 + i))
		putItem(x, id, uint64(i+1), 1, 0)
		x.SetTerms(id, uint64(i+1), terms("/k", "v"))
	}
	p := x.sec.path("/k")
	tm := p.get("v")
	if tm.big == nil || tm.small != nil {
		t.Fatalf("%d slots still in a slice", n)
	}
	for i := range n - 2 {
		x.Delete(string(rune(0x100 + i)))
	}
	if tm.big != nil || len(tm.small) != 2 {
		t.Fatalf("2 slots left: big %v small %v", tm.big != nil, tm.small)
	}
	wantIDs(t, "v", idsOf(t, x, x.TermEq("/k", "v")), string(rune(0x100+n-2)), string(rune(0x100+n-1)))
}

func TestLiveBitmapAndSlotAt(t *testing.T) {
	x := newTermIndex()
	putItem(x, "live", 1, 1, 0)
	putItem(x, "soon", 2, 1, 100)
	putItem(x, "gone", 3, 1, 50)
	x.Advance(50)
	live := idsOf(t, x, x.LiveBitmap())
	wantIDs(t, "LiveBitmap", live, "live", "soon")
	if s, ok := x.SlotAt(slotOf(t, x, "live"), 200); !ok || s.ID != "live" {
		t.Errorf("SlotAt(live) = %+v %v", s, ok)
	}
	if _, ok := x.SlotAt(slotOf(t, x, "gone"), 60); ok {
		t.Error("SlotAt returned a marked expired slot")
	}
	n := slotOf(t, x, "soon")
	if _, ok := x.SlotAt(n, 99); !ok {
		t.Error("SlotAt(soon, 99) not live")
	}
	if _, ok := x.SlotAt(n, 100); ok {
		t.Error("SlotAt returned a slot whose expiry has come (not yet marked)")
	}
	if _, ok := x.SlotAt(1<<30, 0); ok {
		t.Error("SlotAt returned a slot never allocated")
	}
	nl := slotOf(t, x, "live")
	x.Delete("live")
	if _, ok := x.SlotAt(nl, 0); ok {
		t.Error("SlotAt returned a released slot")
	}
}

func TestTermUsagePerPath(t *testing.T) {
	x := newTermIndex()
	for i := range 100 {
		id := string(rune(0x100 + i))
		putItem(x, id, uint64(i+1), 1, 0)
		x.SetTerms(id, uint64(i+1), []Term{{"/b", id}, {"/a", "same"}, {"/a", "same"}})
	}
	u := x.TermUsage()
	if u.Paths != 2 || u.Keys != 101 || u.Postings != 200 || len(u.PerPath) != 2 {
		t.Fatalf("TermUsage = %+v", u)
	}
	a, b := u.PerPath[0], u.PerPath[1]
	if a.Path != "/a" || a.Keys != 1 || a.Postings != 100 || b.Path != "/b" || b.Keys != 100 || b.Postings != 100 {
		t.Fatalf("PerPath = %+v", u.PerPath)
	}
	if b.Bytes <= a.Bytes || u.Bytes < a.Bytes+b.Bytes {
		t.Fatalf("Bytes: /a %d, /b %d (100 keys), total %d", a.Bytes, b.Bytes, u.Bytes)
	}
}

func TestTermPagesFreedAndReused(t *testing.T) {
	x := newTermIndex()
	const n = 3 << termPageBits
	id := func(i int) string { return fmt.Sprintf("i%05d", i) }
	for i := range n {
		putItem(x, id(i), uint64(i+1), 1, 0)
		x.SetTerms(id(i), uint64(i+1), terms("/u", id(i)))
	}
	for i := range 2 << termPageBits {
		x.Delete(id(i))
	}
	if x.sec.terms.pages[0] != nil || x.sec.terms.pages[1] != nil || x.sec.terms.pages[2] == nil {
		t.Fatal("pages of freed terms kept, or a page in use freed")
	}
	for i := range 10 {
		j := n + i
		putItem(x, id(j), uint64(j+1), 1, 0)
		x.SetTerms(id(j), uint64(j+1), terms("/u", id(j), "new"))
	}
	if x.sec.terms.pages[0] == nil || x.sec.terms.next != n {
		t.Fatalf("freed ids not reused lowest first (next id %d)", x.sec.terms.next)
	}
	wantIDs(t, "new", idsOf(t, x, x.TermEq("/u", "new")), id(n), id(n+1), id(n+2), id(n+3), id(n+4), id(n+5), id(n+6), id(n+7), id(n+8), id(n+9))
	wantIDs(t, "kept", idsOf(t, x, x.TermRange("/u", KeyBound{Key: id(n - 2), Inclusive: true}, KeyBound{Key: id(n + 1)})), id(n-2), id(n-1), id(n))
}

// TestConcurrentTermReaders runs the read-only methods from many goroutines
// at once, as readers holding the container's read lock do; with -race it
// catches a query that writes shared state.
func TestConcurrentTermReaders(t *testing.T) {
	x := newTermIndex()
	for i := range 2000 {
		id := fmt.Sprint(i)
		putItem(x, id, uint64(i+1), 1, int32(i%3*1000))
		x.SetTerms(id, uint64(i+1), []Term{{"/a", fmt.Sprint(i % 7)}, {"/b", id}})
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				x.TermEq("/a", "1", "2")
				x.TermEq("/b", "17")
				x.TermRange("/b", KeyBound{Key: "1", Inclusive: true}, KeyBound{Key: "5"})
				x.TermPrefix("/b", "12")
				x.TermWalk("/a", true, func(string, Postings) bool { return true })
				x.LiveBitmap()
				x.SlotAt(5, 500)
				x.TermsSeq("5")
				x.TermUsage()
			}
		})
	}
	wg.Wait()
}
