package engine

import "github.com/ebbdb/ebb/segment"

// The index rebuild. Recovery (Container.loadFiles) and the offline tools
// (Inspect, Verify) rebuild a container's index from its segment files' index
// blocks by one rule: files overlap in any order after compaction, so the
// version with the highest seq wins, and a tombstone hides older puts, in its
// own file or any other. tombstones.apply is that rule; each caller keeps the
// winning puts in its own index.

// tombstones is the highest seq of a delete seen so far for each id, while
// a container's index is rebuilt from its segment files.
type tombstones map[string]uint64

// rebuildAction is what one index entry does to the index being rebuilt.
type rebuildAction uint8

const (
	// rebuildSkip: the entry is older than the id's indexed put or one of
	// its tombstones; the index stays as it is.
	rebuildSkip rebuildAction = iota
	// rebuildPut: the entry is a put newer than every version seen of its
	// id; it replaces the indexed put, if any.
	rebuildPut
	// rebuildDelete: the entry is a delete newer than the id's indexed put,
	// which must be removed.
	rebuildDelete
)

// apply records e, an entry of a segment's index block, and says what it
// does to the index, whose put for e.ID has seq cur (indexed false: the
// index holds none).
func (t tombstones) apply(e *segment.IndexEntry, cur uint64, indexed bool) rebuildAction {
	if e.Op == segment.OpDelete {
		if t[e.ID] < e.Seq {
			t[e.ID] = e.Seq
		}
		if indexed && cur < e.Seq {
			return rebuildDelete
		}
		return rebuildSkip
	}
	if (indexed && cur >= e.Seq) || t[e.ID] > e.Seq {
		return rebuildSkip
	}
	return rebuildPut
}

// place says where a record is: a segView, or a journal record.
type place struct {
	seg  *segView
	jrec *jRecord
}

// version is the newest record of an id, as recovery would index it.
type version struct {
	seq   uint64
	op    segment.Op
	ts    int64
	ttl   int32
	size  int64
	where place
}

// rebuild computes, for container ci, the newest version of every id, as
// recovery does: segment index entries first, by recovery's rule, then the
// journal records from JournalFrom on, the highest seq winning. An id
// whose newest version is a delete maps to a version with op OpDelete (a
// tombstone still on disk).
func (s *snapshot) rebuild(ci int) map[string]version {
	num := s.man.Containers[ci].Num
	newest := make(map[string]version)
	tomb := make(tombstones)
	for _, v := range s.segs {
		if v.cont != ci {
			continue
		}
		for i := range v.index {
			e := &v.index[i]
			cur, ok := newest[e.ID]
			switch tomb.apply(e, cur.seq, ok) {
			case rebuildPut:
				newest[e.ID] = version{seq: e.Seq, op: e.Op, ts: e.TS, ttl: e.TTL, size: int64(e.Size), where: place{seg: v}}
			case rebuildDelete:
				delete(newest, e.ID)
			}
		}
	}
	for id, seq := range tomb {
		if _, ok := newest[id]; !ok {
			newest[id] = version{seq: seq, op: segment.OpDelete}
		}
	}
	for _, f := range s.journal {
		for i := range f.recs {
			r := &f.recs[i]
			if r.rec.Container != num {
				continue
			}
			if cur, ok := newest[r.rec.ID]; ok && cur.seq > r.rec.Seq {
				continue
			}
			newest[r.rec.ID] = version{seq: r.rec.Seq, op: r.rec.Op, ts: r.rec.TS, ttl: r.rec.TTL, size: r.size, where: place{jrec: r}}
		}
	}
	return newest
}
