package segment

import (
	"sync"
	"unsafe"

	"github.com/ebbdb/ebb/internal/hugemem"
)

// maxIDChunk bounds one allocation of an IDArena.
const maxIDChunk = 16 << 20

// IDArena holds the ids of the index entries decoded with it
// (Reader.AppendIndexIn), many files' worth to an allocation, in place of
// one allocation per id: a bulk load of a million entries then makes a
// few allocations, not a million, and their memory comes in huge pages
// (hugemem). It sizes each allocation by the entries still expected and
// the ids' mean length so far.
//
// An id keeps its whole allocation alive, as a substring keeps its string:
// ids that are dropped (superseded versions, say) cost their bytes until
// every other id of their allocation is dropped too.
//
// An IDArena is safe for concurrent use.
type IDArena struct {
	mu     sync.Mutex
	expect int64  // entries still expected
	seen   int64  // entries whose ids it holds
	bytes  int64  // the bytes of their ids
	free   []byte // room left in the current allocation
}

// NewIDArena returns an arena for the ids of about entries index entries.
func NewIDArena(entries int64) *IDArena { return &IDArena{expect: entries} }

// strings copies ids, the ids of k entries back to back, into the arena
// and returns them as one string.
func (a *IDArena) strings(ids []byte, k int) string {
	if len(ids) == 0 {
		return ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen += int64(k)
	a.bytes += int64(len(ids))
	a.expect = max(a.expect-int64(k), 0)
	if len(a.free) < len(ids) {
		rest := float64(a.bytes) / float64(a.seen) * float64(a.expect) // the mean for the rest
		size := int(min(float64(len(ids))+rest, maxIDChunk))
		a.free = make([]byte, max(size, len(ids)))
		hugemem.Advise(a.free)
	}
	b := a.free[:len(ids):len(ids)]
	a.free = a.free[len(ids):]
	copy(b, ids)
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is never written again
}
