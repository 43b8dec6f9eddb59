package index

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// testExpire makes a slot's TTL field its absolute expiry instant, so
// tests can file any expiry: ttl 0 never expires.
var testExpiry = map[int32]int64{}

func put(x *Index, id string, seq uint64, file uint32, expire int64) {
	ttl := int32(len(testExpiry) + 1)
	testExpiry[ttl] = expire
	x.Put(Slot{ID: id, Seq: seq, TS: 100, TTL: ttl, Size: 10, Loc: Loc{File: file}})
}

func newTestIndex() *Index {
	return New(func(ts int64, ttl int32) int64 {
		if e, ok := testExpiry[ttl]; ok {
			return e
		}
		return Never
	})
}

func TestPutGetDeleteReusesSlots(t *testing.T) {
	x := newTestIndex()
	put(x, "a", 1, 1, Never)
	put(x, "b", 2, 1, Never)
	if n, b := x.Count(); n != 2 || b != 20 {
		t.Fatalf("Count = %d, %d", n, b)
	}
	put(x, "a", 3, 2, Never) // supersede: same slot, moves file usage
	if u := x.Usage(1); u.Records != 1 {
		t.Fatalf("file 1 usage %+v after supersede", u)
	}
	if s, ok := x.Lookup("a", 0); !ok || s.Seq != 3 {
		t.Fatalf("Lookup a = %+v %v", s, ok)
	}
	slotA, _, _ := x.ids.find("a", x.slots)
	if !x.Delete("a") || x.Delete("a") {
		t.Fatal("Delete should report presence once")
	}
	put(x, "c", 4, 1, Never)
	if slotC, _, _ := x.ids.find("c", x.slots); slotC != slotA {
		t.Fatalf("freed slot %d not reused (c got %d)", slotA, slotC)
	}
	if n, _ := x.Count(); n != 2 || x.Len() != 2 {
		t.Fatalf("Count = %d Len = %d", n, x.Len())
	}
}

func TestAdvanceMarksExactlyTheDue(t *testing.T) {
	x := newTestIndex()
	for i := range 1000 {
		put(x, fmt.Sprint(i), uint64(i+1), 1, int64(1000+i))
	}
	put(x, "never", 5000, 1, Never)
	if got := x.Advance(999); got != 0 {
		t.Fatalf("Advance(999) marked %d", got)
	}
	if got := x.Advance(1499); got != 500 {
		t.Fatalf("Advance(1499) marked %d, want 500", got)
	}
	if n, _ := x.Count(); n != 501 || x.ExpiredPending() != 500 {
		t.Fatalf("Count %d pending %d", n, x.ExpiredPending())
	}
	if _, ok := x.Lookup("499", 1499); ok {
		t.Fatal("expired item visible")
	}
	// Inline check works without Advance.
	if _, ok := x.Lookup("600", 1600); ok {
		t.Fatal("item past its expiry visible before Advance")
	}
	if got := len(x.Live(1499)); got != 501 {
		t.Fatalf("Live = %d", got)
	}
	// Rewriting an expired id revives the id with a fresh version.
	put(x, "0", 9000, 2, Never)
	if x.ExpiredPending() != 499 {
		t.Fatalf("pending after rewrite = %d", x.ExpiredPending())
	}
	if x.NextDue() != 1500 {
		t.Fatalf("NextDue = %d", x.NextDue())
	}
}

func TestRecomputeKeepsExpiredExpired(t *testing.T) {
	x := newTestIndex()
	put(x, "a", 1, 1, 110)
	put(x, "b", 2, 1, 500)
	x.Advance(200)
	x.expireAt = func(int64, int32) int64 { return Never }
	x.Recompute()
	x.Advance(1000)
	if _, ok := x.Lookup("a", 1000); ok {
		t.Fatal("expired item revived by Recompute")
	}
	if _, ok := x.Lookup("b", 1000); !ok {
		t.Fatal("b should never expire after Recompute")
	}
	x.expireAt = func(ts int64, ttl int32) int64 { return ts + 1 }
	x.Recompute()
	x.Advance(1000)
	if n, _ := x.Count(); n != 0 {
		t.Fatalf("Count = %d after retroactive expiry", n)
	}
}

func TestRelocateAndPurge(t *testing.T) {
	x := newTestIndex()
	put(x, "a", 1, MemFile|1, 50)
	put(x, "b", 2, MemFile|1, Never)
	if !x.Relocate("a", 1, Loc{File: 7}) || x.Relocate("a", 99, Loc{File: 8}) {
		t.Fatal("Relocate must move exactly the current version")
	}
	x.Relocate("b", 2, Loc{File: 7})
	if u := x.Usage(7); u.Records != 2 {
		t.Fatalf("usage %+v", u)
	}
	x.Advance(60)
	if u := x.Usage(7); u.Records != 1 {
		t.Fatalf("usage after expiry %+v", u)
	}
	if n := x.PurgeExpired(func(f uint32) bool { return f == 7 }); n != 1 {
		t.Fatalf("purged %d", n)
	}
	if _, ok := x.Get("a"); ok || x.Len() != 1 {
		t.Fatal("purged id still present")
	}
}

// TestBucketsAgainstBruteForce files random expiries, far and near, moves
// time in random steps and compares what Advance marked with a scan.
func TestBucketsAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x := newTestIndex()
	now := int64(1_000_000)
	want := map[string]int64{}
	for step := range 3000 {
		id := fmt.Sprint(r.IntN(400))
		switch r.IntN(4) {
		case 0, 1:
			e := now + 1 + r.Int64N(300)
			if r.IntN(5) == 0 {
				e = now + 1 + r.Int64N(100_000)
			}
			if r.IntN(10) == 0 {
				e = Never
			}
			if _, live := x.Lookup(id, now); !live {
				x.Delete(id)
			}
			put(x, id, uint64(step+1), 1, e)
			want[id] = e
		case 2:
			x.Delete(id)
			delete(want, id)
		case 3:
			now += r.Int64N(120)
			x.Advance(now)
			var live int64
			for id, e := range want {
				if e > now {
					live++
				} else {
					delete(want, id)
					x.Delete(id)
				}
			}
			if n, _ := x.Count(); n != live {
				t.Fatalf("step %d now %d: Count %d, brute force %d", step, now, n, live)
			}
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	x := newTestIndex()
	ids := make([]string, 1_000_000)
	for i := range ids {
		ids[i] = fmt.Sprintf("item-%08d", i)
		put(x, ids[i], uint64(i+1), 1, Never)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		x.Lookup(ids[i%len(ids)], 0)
	}
}

// TestIDTableChurn drives the hash table through growth and heavy deletion
// (backward shifts) and checks it against a map.
func TestIDTableChurn(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x := newTestIndex()
	want := map[string]bool{}
	for step := range 200_000 {
		id := fmt.Sprintf("id-%d", r.IntN(5000))
		if r.IntN(3) == 0 {
			if x.Delete(id) != want[id] {
				t.Fatalf("step %d: Delete(%s) disagrees with the model", step, id)
			}
			delete(want, id)
			continue
		}
		put(x, id, uint64(step+1), 1, Never)
		want[id] = true
	}
	if x.Len() != len(want) {
		t.Fatalf("Len %d, want %d", x.Len(), len(want))
	}
	for i := range 5000 {
		id := fmt.Sprintf("id-%d", i)
		if _, ok := x.Get(id); ok != want[id] {
			t.Fatalf("Get(%s) = %v, want %v", id, ok, want[id])
		}
	}
}

// TestAdvanceAndPurgeInSteps checks that the stepped forms reach the same
// state as the whole ones, however small the steps.
func TestAdvanceAndPurgeInSteps(t *testing.T) {
	for _, limit := range []int{1, 7, 1000, 0} {
		x := newTestIndex()
		for i := range 5000 {
			e := int64(100 + i%50)
			if i%3 == 0 {
				e = int64(100 + 64*(i%40)) // coarse buckets too
			}
			put(x, fmt.Sprint(i), uint64(i+1), uint32(1+i%4), e)
		}
		want := newTestIndex()
		want.expireAt = x.expireAt
		for i := range 5000 {
			s, _ := x.Get(fmt.Sprint(i))
			want.Put(s)
		}
		wantMarked := want.Advance(1000)
		marked, steps := 0, 0
		for done := false; !done; steps++ {
			var m int
			m, done = x.AdvanceN(1000, limit)
			marked += m
			if steps > 100000 {
				t.Fatal("AdvanceN never finishes")
			}
		}
		if marked != wantMarked || x.ExpiredPending() != want.ExpiredPending() {
			t.Fatalf("limit %d: marked %d (pending %d), want %d (pending %d)", limit, marked, x.ExpiredPending(), wantMarked, want.ExpiredPending())
		}
		if limit == 1 && steps < wantMarked {
			t.Fatalf("limit 1 took %d steps for %d items", steps, wantMarked)
		}
		gone := func(f uint32) bool { return f%2 == 1 }
		wantPurged := want.PurgeExpired(gone)
		purged, from := 0, uint32(0)
		for done := false; !done; {
			var p int
			p, from, done = x.PurgeExpiredN(gone, limit, from)
			purged += p
		}
		if purged != wantPurged || x.Len() != want.Len() {
			t.Fatalf("limit %d: purged %d (len %d), want %d (len %d)", limit, purged, x.Len(), wantPurged, want.Len())
		}
	}
}
