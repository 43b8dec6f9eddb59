package policy

import "math"

// Never is the expiry instant of an item that never expires.
const Never = math.MaxInt64

// Effective returns the effective TTL, in seconds, of an item whose own ttl is
// itemTTL (0: absent, -1, or 1..MaxTTL) in a container whose DefaultTTL is
// defaultTTL (nil: TTL off, -1, or 1..MaxTTL), by the rules in the package
// comment.
// finite is false when the item never expires; seconds is then 0.
//
// Values outside those domains (which validation rejects before they get
// here) are read in the direction that never hides data: an item ttl below
// -1 as -1, a DefaultTTL of 0 or below -1 as -1.
func Effective(defaultTTL *int32, itemTTL int32) (seconds int64, finite bool) {
	if defaultTTL == nil { // TTL off: item ttls are kept but ignored
		return 0, false
	}
	switch {
	case itemTTL > 0:
		return int64(itemTTL), true
	case itemTTL < 0:
		return 0, false
	}
	if d := *defaultTTL; d > 0 {
		return int64(d), true
	}
	return 0, false
}

// Expired reports whether an item with expiry instant expiresAt is expired at
// now: expiresAt <= now. An item whose expiry is Never is never expired.
func Expired(expiresAt, now int64) bool {
	return expiresAt != Never && expiresAt <= now
}

// addExpiry returns ts+eff, or Never when the sum is not below Never
// (eff >= 1, so only overflow towards +inf is possible).
func addExpiry(ts, eff int64) int64 {
	if ts > Never-eff {
		return Never
	}
	return ts + eff
}
