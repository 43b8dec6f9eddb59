package policy

import (
	"fmt"
	"sort"
)

// Change is one entry of a container's policy history: from instant At (Unix
// seconds) on, DefaultTTL applies (nil: TTL off).
type Change struct {
	At         int64
	DefaultTTL *int32
}

// History is a container's DefaultTTL history, oldest first, At
// non-decreasing. Its first entry is the container's creation (until Compact
// drops it). Several entries may share an instant: each was in force at that
// instant.
//
// A History is immutable once built: With and Compact return new values and
// never write to the receiver's backing array, so a History may be read by
// any number of goroutines while a writer derives its successor.
type History []Change

// Current returns the DefaultTTL in force now: the newest entry's, or nil
// (TTL off) for an empty history. Do not modify the pointee.
func (h History) Current() *int32 {
	if len(h) == 0 {
		return nil
	}
	return h[len(h)-1].DefaultTTL
}

// DefaultTTLAt returns the DefaultTTL in force at instant t, that is the
// newest entry with At <= t, or nil when t precedes the history.
func (h History) DefaultTTLAt(t int64) *int32 {
	i := sort.Search(len(h), func(i int) bool { return h[i].At > t })
	if i == 0 {
		return nil
	}
	return h[i-1].DefaultTTL
}

// With returns h plus a change to d at instant at. It copies: h and its
// backing array are left untouched, and d is copied too, so the caller may
// reuse it.
//
// An at below the newest entry's At is clamped to it (the history never runs
// backwards; the engine's clock does not either). A change to the DefaultTTL
// already in force (nil to nil, n to n) returns h unchanged, since two
// adjacent entries with the same DefaultTTL expire exactly what one merged
// entry does. The first change of an empty history is always recorded.
func (h History) With(at int64, d *int32) History {
	if n := len(h); n > 0 {
		if equalTTL(h[n-1].DefaultTTL, d) {
			return h
		}
		if at < h[n-1].At {
			at = h[n-1].At
		}
	}
	out := make(History, len(h)+1)
	copy(out, h)
	out[len(h)] = Change{At: at, DefaultTTL: cloneTTL(d)}
	return out
}

// ExpiresAt returns the first instant at which an item written at ts with own
// ttl itemTTL (0: absent, -1, n) is expired under h, or Never.
//
// Entry i is in force over the closed interval [At_i, At_i+1] (the newest
// one until +inf). While in force it expires the item from
// max(ts+eff_i, At_i) on, if that instant is <= At_i+1; eff_i is
// Effective(DefaultTTL_i, itemTTL). The answer is the minimum over entries,
// and since expiry is final the item stays expired from then on, whatever h
// says later. ts+eff is computed without overflow; an expiry beyond the
// int64 range is Never.
//
// Cost: a binary search plus a walk over the entries from the one in force
// at ts to the first that expires the item.
func (h History) ExpiresAt(ts int64, itemTTL int32) int64 {
	t, _ := h.ExpiryCause(ts, itemTTL)
	return t
}

// ExpiryCause is ExpiresAt that also returns the index of the entry that
// expires the item (-1 with Never). When the instant is that entry's At
// and the entry is not the first, the item expired because that change
// took effect (the entries before it never expired it).
func (h History) ExpiryCause(ts int64, itemTTL int32) (int64, int) {
	// Entries whose interval ends before ts cannot expire the item: its
	// effective ttl is at least 1, so ts+eff > At_i+1.
	i := sort.Search(len(h), func(i int) bool { return i+1 == len(h) || h[i+1].At >= ts })
	for ; i < len(h); i++ {
		eff, finite := Effective(h[i].DefaultTTL, itemTTL)
		if !finite {
			continue
		}
		t := addExpiry(ts, eff)
		if t == Never {
			continue
		}
		t = max(t, h[i].At)
		if i+1 < len(h) && t > h[i+1].At {
			continue // the entry was replaced before the item's time came
		}
		// The first entry that yields an instant yields the least: every
		// later entry's instant is at least its At, which is >= At_i+1 >= t.
		return t, i
	}
	return Never, -1
}

// Compact returns h without the entries that cannot affect any item written
// at or after minTS: those whose interval ended before minTS (At_i+1 <
// minTS). It also merges adjacent entries with the same DefaultTTL, which
// changes no answer. The result answers ExpiresAt exactly as h does for
// every ts >= minTS; the caller must pass a minTS no greater than the _ts of
// any record it may still ask about, expired but not yet purged ones
// included. The creation entry is dropped along with the rest, so the
// result's first At is no longer the container's creation. h is not
// modified; when nothing can be dropped h itself is returned.
func (h History) Compact(minTS int64) History {
	k := 0
	for k+1 < len(h) && h[k+1].At < minTS {
		k++
	}
	merge := false
	for i := k + 1; i < len(h); i++ {
		if equalTTL(h[i-1].DefaultTTL, h[i].DefaultTTL) {
			merge = true
			break
		}
	}
	if k == 0 && !merge {
		return h
	}
	out := make(History, 0, len(h)-k)
	for _, c := range h[k:] {
		if n := len(out); n > 0 && equalTTL(out[n-1].DefaultTTL, c.DefaultTTL) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// Validate checks what a decoded history must satisfy: At non-decreasing and
// every DefaultTTL nil, -1 or 1..MaxTTL. A DefaultTTL error wraps
// ErrInvalidDefaultTTL.
func (h History) Validate() error {
	for i, c := range h {
		if i > 0 && c.At < h[i-1].At {
			return fmt.Errorf("policy: history entry %d (at %d) precedes entry %d (at %d)", i, c.At, i-1, h[i-1].At)
		}
		if !validDefault(c.DefaultTTL) {
			return fmt.Errorf("policy: history entry %d: %w", i, ValidateDefaultTTL(int64(*c.DefaultTTL)))
		}
	}
	return nil
}

func equalTTL(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func cloneTTL(d *int32) *int32 {
	if d == nil {
		return nil
	}
	v := *d
	return &v
}
