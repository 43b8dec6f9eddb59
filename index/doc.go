// Package index holds ebb's in-memory view of one container: which items are
// live, where their newest record is, and when each one expires.
//
// Every item id maps to a dense uint32 slot. A slot carries the item's
// location on disk (or in the memtable), its _ts, its own ttl, its expiry
// instant under the container's policy history, and its size. Slots freed by
// deletes are reused, so slot numbers stay dense and the roaring bitmaps over
// them stay small.
//
// Expiry costs nothing per read. Each slot with a finite expiry sits in a time
// bucket: coarse buckets of 64 seconds for the far future, split into exact
// one-second buckets when their window arrives. Advance(now) walks only the
// buckets that came due, marking their slots in the expired bitmap and taking
// them out of the live counts, so counts and statistics exclude expired items
// at once; point reads compare the slot's expiry with now inline and never
// wait for Advance.
//
// The index does no I/O and no locking: the engine owns one Index per
// container and guards it with that container's lock.
package index
