package index

import (
	"math"

	"github.com/ebbdb/ebb/internal/hugemem"
)

// Never is the expiry instant of an item that does not expire.
const Never int64 = math.MaxInt64

// MemFile marks a Loc that points into a memtable rather than a segment
// file: the low bits then hold the memtable's generation.
const MemFile uint32 = 1 << 31

// Loc is where an item's newest record is: a segment file number, the block
// in it and the record's offset in the decompressed block; or, with MemFile
// set in File, a memtable generation and the record's position in it.
type Loc struct {
	File  uint32
	Block uint32
	Off   uint32
}

// InMem reports whether l points into a memtable.
func (l Loc) InMem() bool { return l.File&MemFile != 0 }

// Slot is everything the index keeps about one item.
// Its expiry instant is not stored: the index computes it from TS and TTL
// with the container's expiry function (a few nanoseconds), which keeps
// the slot at 56 bytes.
type Slot struct {
	ID   string
	Loc  Loc
	Seq  uint64 // sequence of the write that made this version; the etag
	TS   int64  // _ts of that write
	TTL  int32  // the item's own ttl property: 0 absent, -1 never, n seconds
	Size uint32 // encoded record size in bytes
}

// ExpireFunc gives the first instant at which an item written at ts with
// its own ttl property is expired, or Never: the container's policy.
type ExpireFunc func(ts int64, ttl int32) int64

// slotPageBits sizes the pages that slots are stored in. Pages keep growth
// from copying (and transiently doubling) one huge slice.
const slotPageBits = 12

type slotPages [][]Slot

// maxSlabPages bounds how many pages grow allocates at once: 64 pages of
// 4096 slots are about 14 MiB.
const maxSlabPages = 64

func (p slotPages) at(n uint32) *Slot {
	return &p[n>>slotPageBits][n&(1<<slotPageBits-1)]
}

// grow makes room for slot n and returns the pages. want is how many slots
// a bulk load expects to fill (Index.Reserve), or 0: pages below it are
// allocated several at a time, as one slab, which the bulk load fills
// front to back, in huge pages (hugemem). A slab is a quarter of the pages
// still wanted, or as many pages as are held already if that is more, up
// to maxSlabPages: a reservation larger than what the load fills (it counts
// superseded versions too) costs at most a quarter of itself, or as many
// empty pages as there are full ones, and nothing once it is exact.
func (p slotPages) grow(n, want uint32) slotPages {
	const size = 1 << slotPageBits
	for int(n>>slotPageBits) >= len(p) {
		k := 1
		if need := (int(want)+size-1)/size - len(p); need > 1 {
			k = min(need, max(len(p), need/4, 1), maxSlabPages)
		}
		slab := make([]Slot, k*size)
		hugemem.Advise(slab)
		for i := range k {
			p = append(p, slab[i*size:(i+1)*size:(i+1)*size])
		}
	}
	return p
}
