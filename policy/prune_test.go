package policy

import (
	"math/rand/v2"
	"testing"
)

// TestPruneKeepsVisibility: a container's history built by random DefaultTTL
// changes, pruned after every change as the engine does, answers every
// item's visibility at every instant from the newest change on exactly as
// the unpruned history does, and expiry instants after the newest change
// agree exactly. The pruned history stays short, validates, and keeps the
// DefaultTTL in force.
func TestPruneKeepsVisibility(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	runs := 3000
	if testing.Short() {
		runs = 300
	}
	for range runs {
		at := rng.Int64N(20)
		full := History{}.With(at, randomDefault(rng))
		pruned := full
		for range rng.IntN(40) {
			if rng.IntN(3) > 0 {
				at += rng.Int64N(15)
			}
			d := randomDefault(rng)
			full = full.With(at, d)
			pruned = pruned.With(at, d).Prune()
			if len(pruned) > PruneLen {
				t.Fatalf("Prune left %d entries: %s", len(pruned), show(pruned))
			}
			if err := pruned.Validate(); err != nil {
				t.Fatalf("pruned %s of %s: %v", show(pruned), show(full), err)
			}
			if show(pruned.Current()) != show(full.Current()) {
				t.Fatalf("pruned %s of %s: current %s, want %s", show(pruned), show(full), show(pruned.Current()), show(full.Current()))
			}
			newest := full[len(full)-1].At
			for range 20 {
				ts := rng.Int64N(at + 30)
				item := randomItemTTL(rng)
				want, got := full.ExpiresAt(ts, item), pruned.ExpiresAt(ts, item)
				if (want > newest || got > newest) && want != got {
					t.Fatalf("ExpiresAt(ts=%d, ttl=%d) after %d: full %s says %d, pruned %s says %d",
						ts, item, newest, show(full), want, show(pruned), got)
				}
				for now := newest; now < newest+30; now++ {
					if Expired(want, now) != Expired(got, now) {
						t.Fatalf("item ts=%d ttl=%d at %d: full %s expired=%v (at %d), pruned %s expired=%v (at %d)",
							ts, item, now, show(full), Expired(want, now), want, show(pruned), Expired(got, now), got)
					}
				}
			}
		}
	}
}

// TestPruneBoundsHistory: however many changes a container sees, a history
// pruned after each stays within PruneLen entries; without pruning it grows
// by one per change (the cost the engine no longer pays).
func TestPruneBoundsHistory(t *testing.T) {
	on := ttl(3600)
	var full, pruned History
	for i := range 10_000 {
		d := on
		if i%2 == 1 {
			d = nil
		}
		full = full.With(int64(i), d)
		pruned = pruned.With(int64(i), d).Prune()
	}
	if len(full) != 10_000 || len(pruned) > PruneLen {
		t.Fatalf("after 10,000 changes: full %d entries, pruned %d (limit %d)", len(full), len(pruned), PruneLen)
	}
	// An item written at 0 without a ttl expired during the on-period at
	// 3600; one written at 9000 never saw an hour of TTL on and never will
	// (the newest change turned TTL off); one with ttl 1 expired at once.
	for _, c := range []struct {
		ts      int64
		ttl     int32
		expired bool
	}{{0, 0, true}, {9000, 0, false}, {0, 1, true}, {9998, 1, true}, {9999, -1, false}} {
		f, p := full.ExpiresAt(c.ts, c.ttl), pruned.ExpiresAt(c.ts, c.ttl)
		if Expired(f, 9_999) != c.expired || Expired(p, 9_999) != c.expired || (!c.expired && f != p) {
			t.Fatalf("item ts=%d ttl=%d: full expires at %d, pruned at %d; want expired=%v at 9999", c.ts, c.ttl, f, p, c.expired)
		}
	}
}

// TestPruneShortUnchanged: Prune returns a history of PruneLen entries or
// fewer as it is.
func TestPruneShortUnchanged(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 1000 {
		h := randomHistory(rng)
		if len(h) > PruneLen {
			continue
		}
		if p := h.Prune(); show(p) != show(h) {
			t.Fatalf("Prune(%s) = %s", show(h), show(p))
		}
	}
}
