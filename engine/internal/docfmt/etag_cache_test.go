package docfmt

import (
	"sync"
	"testing"
)

// TestCachedETag: CachedETag returns ETag(seq) for every sequence, from
// many goroutines at once, also for sequences that share a slot and evict
// each other; strings returned earlier keep their value after their slot
// is taken; and a cached sequence costs no allocation.
func TestCachedETag(t *testing.T) {
	seqs := []uint64{0, 1, 2, 15, 16, 255, etagCacheSize - 1, etagCacheSize, etagCacheSize + 1,
		3 * etagCacheSize, 1<<40 + 7, 1<<64 - 1}
	var kept []string
	for _, s := range seqs {
		kept = append(kept, CachedETag(s))
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20_000 {
				// Goroutines walk the sequences from different starts, so that
				// they race on slots and evict each other's entries.
				s := uint64(i*(g+1)) % (4 * etagCacheSize)
				if got, want := CachedETag(s), ETag(s); got != want {
					t.Errorf("CachedETag(%d) = %s, want %s", s, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i, s := range seqs {
		if want := ETag(s); kept[i] != want {
			t.Errorf("etag of %d returned before eviction is now %s, want %s", s, kept[i], want)
		}
	}
	CachedETag(42)
	if n := testing.AllocsPerRun(100, func() { _ = CachedETag(42) }); n != 0 {
		t.Errorf("CachedETag of a cached sequence: %v allocations, want 0", n)
	}
}
