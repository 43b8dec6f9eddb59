package engine

import (
	"github.com/ebbdb/ebb/index"
	"github.com/ebbdb/ebb/segment"
)

// memtable holds a container's records that are in the journal but not yet
// sealed into a segment file, in journal order. Reads of recent writes are
// served from it. The active memtable grows under the container's lock; a
// frozen one is immutable while it is sealed.
type memtable struct {
	gen   uint32
	recs  []segment.Record
	bytes int64 // encoded size of recs
	// replaced[i] says that recs[i] superseded a version of its id that was
	// in the index when it was applied: only such records can hide an older
	// version on disk (an id absent from the index has none, or has them
	// hidden by a tombstone already).
	replaced []bool
}

// newMemtable returns an empty memtable of generation gen with room for
// hint records, at most maxMemtableHint: a seal passes the count of the
// memtable it freezes, so that a steady stream of writes fills the next one
// without regrowing (and copying) its slices.
func newMemtable(gen uint32, hint int) *memtable {
	hint = min(hint, maxMemtableHint)
	return &memtable{gen: gen, recs: make([]segment.Record, 0, hint), replaced: make([]bool, 0, hint)}
}

// maxMemtableHint bounds the records a new memtable has room for.
const maxMemtableHint = 1 << 16

// nextLoc is where the next record added will be.
func (m *memtable) nextLoc() index.Loc {
	return index.Loc{File: index.MemFile | m.gen, Off: uint32(len(m.recs))}
}

// add appends r, which superseded an indexed version of its id if replaced.
func (m *memtable) add(r segment.Record, size int, replaced bool) {
	m.recs = append(m.recs, r)
	m.replaced = append(m.replaced, replaced)
	m.bytes += int64(size)
}

// at returns the record at loc, if loc points into m.
func (m *memtable) at(loc index.Loc) (*segment.Record, bool) {
	if m == nil || loc.File != index.MemFile|m.gen || int(loc.Off) >= len(m.recs) {
		return nil, false
	}
	return &m.recs[loc.Off], true
}
