package docfmt

import (
	"sync/atomic"
	"unsafe"
)

// Every item written by one commit carries the commit's sequence, and so
// the same etag: a container filled in batches of 100 has one etag for
// every 100 items. CachedETag keeps the etag strings of recent sequences
// (ETag is a pure function of the sequence, the same in every database), so
// that a read returns its Item without allocating the etag when the item
// was written by a commit whose etag is cached, as it is after a batch was
// written or another of its items read. A read is then free of allocations
// (Container.ReadInto), and the collector has nothing to do however many
// reads run.

// etagCacheSize is the number of sequences CachedETag keeps: direct-mapped
// by the sequence's low bits, so that consecutive commits never evict each
// other. 16,384 entries cost 128 KiB of pointers and at most 512 KiB of
// entries, for the whole process.
const etagCacheSize = 1 << 14

// etagEntry is one cached etag. It is immutable once published: the strings
// CachedETag returns point into etag.
type etagEntry struct {
	seq  uint64
	etag [etagLen]byte
}

var etagCache [etagCacheSize]atomic.Pointer[etagEntry]

// CachedETag is ETag(seq), from the cache when seq's etag is there; when it
// is not, it makes it (one allocation, as ETag) and caches it in place of
// the sequence that shared its slot. Safe for concurrent use.
func CachedETag(seq uint64) string {
	slot := &etagCache[seq%etagCacheSize]
	if e := slot.Load(); e != nil && e.seq == seq {
		return e.string()
	}
	e := &etagEntry{seq: seq}
	putETag(&e.etag, seq)
	slot.Store(e)
	return e.string()
}

// string returns e's etag without a copy: e is never written once it is
// published, so the bytes behind the string never change, and the string
// keeps e alive.
func (e *etagEntry) string() string { return unsafe.String(&e.etag[0], etagLen) }
