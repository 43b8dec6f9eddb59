package index

import (
	"hash/maphash"

	"github.com/ebbdb/ebb/internal/hugemem"
)

// idTable maps item ids to slots: an open-addressing hash table of 8-byte
// entries that holds no strings of its own. Each entry is a 32-bit hash
// fingerprint and the slot number plus one (zero marks an empty entry); the
// id itself is read from the slot when fingerprints match. Against a
// map[string]uint32 this saves the map's copy of each string header and its
// per-entry overhead, about 40 bytes an item, and the GC has no pointers to
// scan in it.
//
// Probing is linear; deletion shifts later entries back, so there are no
// tombstones and lookups stay short after churn. An entry's home position
// is its fingerprint masked to the table size, so it never needs the id
// again.
type idTable struct {
	entries []uint64
	n       int
	seed    maphash.Seed
}

const minTableSize = 16

func newIDTable(capacity int) idTable {
	return idTable{entries: newEntries(tableSize(minTableSize, capacity)), seed: maphash.MakeSeed()}
}

// tableSize is the size, from size on, that holds n entries within the
// load limit of 3/4.
func tableSize(size, n int) int {
	for size*3 < n*4 {
		size *= 2
	}
	return size
}

// newEntries allocates a table of size entries. A large one is filled in
// no order, so every page of it is touched at once: it asks for huge pages.
func newEntries(size int) []uint64 {
	e := make([]uint64, size)
	hugemem.Advise(e)
	return e
}

func (t *idTable) fingerprint(id string) uint32 {
	return uint32(maphash.String(t.seed, id) >> 32)
}

// find returns the slot of id and its position in entries.
func (t *idTable) find(id string, slots slotPages) (slot uint32, pos int, ok bool) {
	return t.findHashed(id, t.fingerprint(id), slots)
}

// findHashed is find of id, whose fingerprint is fp.
func (t *idTable) findHashed(id string, fp uint32, slots slotPages) (slot uint32, pos int, ok bool) {
	mask := len(t.entries) - 1
	for i := int(fp) & mask; ; i = (i + 1) & mask {
		e := t.entries[i]
		if e == 0 {
			return 0, i, false
		}
		if uint32(e>>32) == fp {
			n := uint32(e) - 1
			if slots.at(n).ID == id {
				return n, i, true
			}
		}
	}
}

// insert adds the id of fingerprint fp → slot at pos, the empty position
// find returned for the id.
func (t *idTable) insert(fp uint32, slot uint32, pos int) {
	t.entries[pos] = uint64(fp)<<32 | uint64(slot+1)
	t.n++
	if t.n*4 > len(t.entries)*3 {
		t.grow()
	}
}

// remove deletes the entry at pos and shifts back the entries after it
// that would no longer be found.
func (t *idTable) remove(pos int) {
	mask := len(t.entries) - 1
	t.entries[pos] = 0
	t.n--
	for i := (pos + 1) & mask; t.entries[i] != 0; i = (i + 1) & mask {
		e := t.entries[i]
		home := int(uint32(e>>32)) & mask
		// Move e into the hole if the hole lies on e's probe path: between
		// its home and its position, cyclically.
		if (i > pos && (home <= pos || home > i)) || (i < pos && home <= pos && home > i) {
			t.entries[pos] = e
			t.entries[i] = 0
			pos = i
		}
	}
}

func (t *idTable) grow() { t.resize(len(t.entries) * 2) }

// resize moves the entries to a table of size entries, a power of two
// larger than the current one.
func (t *idTable) resize(size int) {
	old := t.entries
	t.entries = newEntries(size)
	mask := len(t.entries) - 1
	for _, e := range old {
		if e == 0 {
			continue
		}
		i := int(uint32(e>>32)) & mask
		for t.entries[i] != 0 {
			i = (i + 1) & mask
		}
		t.entries[i] = e
	}
}

// reserve grows the table ahead of n more inserts, in one step.
func (t *idTable) reserve(n int) {
	if size := tableSize(len(t.entries), t.n+n); size > len(t.entries) {
		t.resize(size)
	}
}

// each calls fn for every slot in the table until fn returns false.
func (t *idTable) each(fn func(slot uint32) bool) {
	for _, e := range t.entries {
		if e != 0 && !fn(uint32(e)-1) {
			return
		}
	}
}
