package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/ebbdb/ebb/policy"
)

// TestPruneHistoryKeepsRetention: a history pruned for the change feed is
// short before the cutoff and answers every expiry from the cutoff on as
// the whole history does, so the feed derives the same instants.
func TestPruneHistoryKeepsRetention(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	ttls := []*int32{nil, TTL(-1), TTL(1), TTL(3), TTL(10), TTL(40)}
	for round := range 300 {
		var h policy.History
		at := int64(1000)
		for range 2 + rnd.IntN(40) {
			h = h.With(at, ttls[rnd.IntN(len(ttls))])
			at += int64(rnd.IntN(6))
		}
		cutoff := 1000 + int64(rnd.IntN(int(at-1000)+1))
		p := pruneHistory(h, cutoff)
		before := 0
		for _, c := range p {
			if c.At < cutoff {
				before++
			}
		}
		if before > policy.PruneLen {
			t.Fatalf("round %d: %d entries before the cutoff", round, before)
		}
		for range 200 {
			ts := 990 + int64(rnd.IntN(int(at-990)+5))
			own := []int32{0, -1, 1, 2, 5, 30}[rnd.IntN(6)]
			want, got := h.ExpiresAt(ts, own), p.ExpiresAt(ts, own)
			if (want >= cutoff || got >= cutoff) && want != got {
				t.Fatalf("round %d: ts %d ttl %d cutoff %d: expires at %d, pruned %d\nhistory %v\npruned %v", round, ts, own, cutoff, want, got, h, p)
			}
		}
	}
}
