package dbfile

import "github.com/ebbdb/ebb/segment"

// The index rebuild. Recovery (the engine's Container.loadFiles) and the
// offline tools (Inspect, Verify) rebuild a container's index from its
// segment files' index blocks by one rule: files overlap in any order after
// compaction, so the version with the highest seq wins, and a tombstone
// hides older puts, in its own file or any other. Tombstones.Apply is that
// rule; each caller keeps the winning puts in its own index.

// Tombstones is the highest seq of a delete seen so far for each id, while
// a container's index is rebuilt from its segment files.
type Tombstones map[string]uint64

// RebuildAction is what one index entry does to the index being rebuilt.
type RebuildAction uint8

const (
	// RebuildSkip: the entry is older than the id's indexed put or one of
	// its tombstones; the index stays as it is.
	RebuildSkip RebuildAction = iota
	// RebuildPut: the entry is a put newer than every version seen of its
	// id; it replaces the indexed put, if any.
	RebuildPut
	// RebuildDelete: the entry is a delete newer than the id's indexed put,
	// which must be removed.
	RebuildDelete
)

// Apply records e, an entry of a segment's index block, and says what it
// does to the index, whose put for e.ID has seq cur (indexed false: the
// index holds none).
func (t Tombstones) Apply(e *segment.IndexEntry, cur uint64, indexed bool) RebuildAction {
	if e.Op == segment.OpDelete {
		if t[e.ID] < e.Seq {
			t[e.ID] = e.Seq
		}
		if indexed && cur < e.Seq {
			return RebuildDelete
		}
		return RebuildSkip
	}
	if (indexed && cur >= e.Seq) || t[e.ID] > e.Seq {
		return RebuildSkip
	}
	return RebuildPut
}
