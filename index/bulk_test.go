package index

import (
	"fmt"
	"testing"
)

// TestSeekThenUpdate: Seek reports the current version, and PutAt and
// DeleteAt at its Probe do what Put and Delete do.
func TestSeekThenUpdate(t *testing.T) {
	x := newTestIndex()
	if _, _, ok := x.Seek("a"); ok {
		t.Fatal("Seek found an id never put")
	}
	p, _, _ := x.Seek("a")
	if _, replaced := x.PutAt(p, Slot{ID: "a", Seq: 5, Size: 10}); replaced {
		t.Fatal("PutAt of a new id reports a replacement")
	}
	p, seq, ok := x.Seek("a")
	if !ok || seq != 5 {
		t.Fatalf("Seek(a) = %d, %v; want 5, true", seq, ok)
	}
	if _, replaced := x.PutAt(p, Slot{ID: "a", Seq: 7, Size: 20}); !replaced {
		t.Fatal("PutAt over a version does not report it replaced")
	}
	if s, ok := x.Get("a"); !ok || s.Seq != 7 || s.Size != 20 {
		t.Fatalf("Get(a) = %+v, %v", s, ok)
	}
	if n, b := x.Count(); n != 1 || b != 20 {
		t.Fatalf("Count = %d, %d; want 1, 20", n, b)
	}
	p, _, _ = x.Seek("a")
	if !x.DeleteAt(p) {
		t.Fatal("DeleteAt of a present id reports it absent")
	}
	p, _, _ = x.Seek("a")
	if x.DeleteAt(p) {
		t.Fatal("DeleteAt of an absent id reports it present")
	}
	if n, _ := x.Count(); n != 0 || x.Len() != 0 {
		t.Fatalf("Count = %d, Len = %d after DeleteAt", n, x.Len())
	}
}

// TestReserveSlabs: a reservation allocates slots in slabs that hold what
// was put, and one larger than the load leaves at most a quarter of the
// reservation, or as many pages as are full, empty.
func TestReserveSlabs(t *testing.T) {
	const page = 1 << slotPageBits
	for _, tc := range []struct{ reserve, put int }{
		{0, 3 * page},
		{10 * page, 10 * page},
		{10*page + 1, 10*page + 1},
		{200 * page, 3*page + 5},
		{100 * page, 100 * page},
	} {
		t.Run(fmt.Sprintf("reserve%d/put%d", tc.reserve, tc.put), func(t *testing.T) {
			x := newTestIndex()
			x.Reserve(tc.reserve)
			for i := range tc.put {
				x.Put(Slot{ID: fmt.Sprint(i), Seq: uint64(i + 1), Size: 1})
			}
			full := (tc.put + page - 1) / page
			if tc.reserve == tc.put && len(x.slots) != full {
				t.Errorf("exact reservation: %d pages for %d full", len(x.slots), full)
			}
			if most := max(2*full, (tc.reserve+page-1)/page/4+1); len(x.slots) > most {
				t.Errorf("%d pages for %d full, want at most %d", len(x.slots), full, most)
			}
			for _, pg := range x.slots {
				if len(pg) != page || cap(pg) != page {
					t.Fatalf("page of len %d cap %d", len(pg), cap(pg))
				}
			}
			for i := range tc.put {
				if s, ok := x.Get(fmt.Sprint(i)); !ok || s.Seq != uint64(i+1) {
					t.Fatalf("Get(%d) = %+v, %v", i, s, ok)
				}
			}
			if x.Len() != tc.put {
				t.Fatalf("Len = %d, want %d", x.Len(), tc.put)
			}
		})
	}
}

// TestReserveSizesTableOnce: Reserve sizes the id table for every id at
// once, and the ids put then are all found.
func TestReserveSizesTableOnce(t *testing.T) {
	x := newTestIndex()
	x.Put(Slot{ID: "first", Seq: 1})
	x.Reserve(100_000)
	size := len(x.ids.entries)
	if size*3 < 100_001*4 {
		t.Fatalf("table of %d entries after Reserve(100000)", size)
	}
	for i := range 100_000 {
		x.Put(Slot{ID: fmt.Sprint(i), Seq: uint64(i + 2)})
	}
	if len(x.ids.entries) != size {
		t.Fatalf("table grew from %d to %d within its reservation", size, len(x.ids.entries))
	}
	for _, id := range []string{"first", "0", "99999"} {
		if _, ok := x.Get(id); !ok {
			t.Fatalf("Get(%q) after the load: not found", id)
		}
	}
}

// TestSeekHashed: a hash computed on another goroutine finds what Seek
// finds, and Warm changes nothing in the index.
func TestSeekHashed(t *testing.T) {
	x := newTestIndex()
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = fmt.Sprintf("id-%d", i)
	}
	hs := make([]IDHash, len(ids))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i, id := range ids {
			hs[i] = x.Hash(id)
		}
	}()
	<-done
	for i := range ids {
		if i%16 == 0 {
			x.Warm(hs[i:min(i+16, len(hs))])
		}
		p, _, ok := x.SeekHashed(ids[i], hs[i])
		if ok {
			t.Fatalf("SeekHashed(%q) found an id never put", ids[i])
		}
		x.PutAt(p, Slot{ID: ids[i], Seq: uint64(i + 1)})
	}
	x.Warm(nil)
	for i, id := range ids {
		if _, seq, ok := x.SeekHashed(id, hs[i]); !ok || seq != uint64(i+1) {
			t.Fatalf("SeekHashed(%q) = %d, %v; want %d, true", id, seq, ok, i+1)
		}
		if s, ok := x.Get(id); !ok || s.Seq != uint64(i+1) {
			t.Fatalf("Get(%q) = %+v, %v", id, s, ok)
		}
	}
	if x.Len() != len(ids) {
		t.Fatalf("Len = %d, want %d", x.Len(), len(ids))
	}
}
