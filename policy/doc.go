// Package policy holds ebb's time-to-live rules, Azure Cosmos DB's, as pure
// functions: no I/O, no clocks, no locks. Times are whole Unix seconds.
//
// Values. A container's DefaultTTL is absent (nil: TTL off), -1, or n in
// 1..MaxTTL. An item's own ttl is a top-level JSON property: absent, -1, or m
// in 1..MaxTTL, written as a JSON number with an integral value (60, 6e1 and
// 60.0 are all 60; 1.5, 0, null, "10", true and values above MaxTTL are
// rejected). ParseItemTTL and ValidateDefaultTTL enforce this; their errors
// name the field and the value and wrap ErrInvalidTTL or ErrInvalidDefaultTTL.
//
// Effective TTL (Effective). With TTL off every item lives forever and item
// ttls are kept but ignored. With TTL on, an item's own ttl wins (-1: never
// expires, m: expires m s after _ts); an item without one follows the
// container (-1: never, n: n s after _ts). An item is expired at now when
// _ts + ttl <= now, computed in 64 bits.
//
// History (History, ExpiresAt). A container's DefaultTTL changes over time;
// History records every change with the instant it took effect. Change i is
// in force over the closed interval [At_i, At_i+1] (the newest one for ever
// after). While it is in force an item written at ts is expired from
// max(ts+eff_i, At_i) on, provided that instant is not after At_i+1. The
// item's expiry instant is the earliest such instant over all changes, so:
//
//   - setting n on a container that holds items applies retroactively: items
//     with _ts+n <= now expire at that very moment;
//   - removing DefaultTTL stops expiry; when TTL is turned on again, item ttls
//     count again from the item's original _ts;
//   - -1 is not "off": items with their own ttl still expire under it;
//   - expiry is final (an ebb rule): once an item was expired at any instant
//     no later change (raising n, -1, removing it) brings it back.
//
// Appending a change at instant T never alters whether an item is expired at
// any instant before T, so an expiry instant computed and acted on earlier
// stays true as long as changes are stamped with a clock that never runs
// backwards. Prune condenses a history to at most PruneLen entries that
// answer the same from its newest change on; the engine prunes at every
// change, so an expiry check costs the same after ten changes or ten
// thousand.
package policy
