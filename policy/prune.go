package policy

import "math"

// PruneLen is the history length above which Prune has something to gain:
// it never returns more entries than this.
const PruneLen = 4

// Prune returns a history of at most PruneLen entries that is equivalent to
// h from its newest entry's instant on: for every item (any _ts, any own
// ttl) and every instant t >= h's newest At, the item is expired at t under
// the result exactly when it is under h, and the two expiry instants are
// equal whenever either is after that newest At. It is what lets a
// container's history stay short however often its DefaultTTL changes.
//
// Why that is enough: an entry that is not the newest is in force only up
// to its successor's At, so whatever it expires it expires by the newest
// At. All the older entries together thus decide one thing, which items are
// expired by then, and that set has a simple shape: an item with its own
// ttl m is in it when _ts+m <= L, an item without one when _ts <= K, where
// L is the latest instant some older entry with TTL on was in force, and K
// the greatest At_i+1 - n_i over older entries with DefaultTTL n_i > 0.
// Prune replaces the older entries by at most three that draw the same two
// lines: a point entry with DefaultTTL L-K (or MaxTTL) ending at K+that, a
// -1 entry reaching up to L, and a TTL-off entry from L to the newest At.
// The newest entry is kept as it is, so Current is unchanged.
//
// The caller must not ask about instants before the newest At with the
// result; the engine appends a change at its current instant, after it has
// marked what expired so far, so it never does. The instants of the
// replaced entries are not kept, so DefaultTTLAt is meaningful only from
// the newest At on. h is not modified; when h is short already (or an
// instant is so extreme that the arithmetic would overflow) h itself is
// returned.
func (h History) Prune() History {
	n := len(h)
	if n <= PruneLen {
		return h
	}
	last := h[n-1]
	var (
		haveL, haveK bool
		L, K         int64
	)
	for i := 0; i < n-1; i++ {
		d := h[i].DefaultTTL
		if d == nil {
			continue
		}
		end := h[i+1].At
		if !haveL || end > L {
			L, haveL = end, true
		}
		if *d > 0 {
			if end < math.MinInt64+int64(*d) {
				return h // K would overflow; such instants never occur in practice
			}
			if k := end - int64(*d); !haveK || k > K {
				K, haveK = k, true
			}
		}
	}
	out := make(History, 0, PruneLen)
	if haveK {
		// Every item without its own ttl and _ts <= K is expired by
		// K+d <= L; those with _ts > K are not (ts+d > K+d). Items with
		// their own ttl m are expired here when ts+m <= K+d, a subset of
		// ts+m <= L. L > K since each n_i >= 1.
		d := uint64(L) - uint64(K)
		if d > MaxTTL {
			d = MaxTTL
		}
		b := K + int64(d)
		out = append(out, Change{At: b, DefaultTTL: ptr(int32(d))})
		if b < L {
			out = append(out, Change{At: b, DefaultTTL: ptr(-1)})
		}
	} else if haveL {
		out = append(out, Change{At: L, DefaultTTL: ptr(-1)})
	}
	if haveL && L < last.At {
		out = append(out, Change{At: L})
	}
	return append(out, last)
}

func ptr(v int32) *int32 { return &v }
