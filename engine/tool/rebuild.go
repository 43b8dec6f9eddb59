package tool

import (
	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/segment"
)

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
	tomb := make(dbfile.Tombstones)
	for _, v := range s.segs {
		if v.cont != ci {
			continue
		}
		for i := range v.index {
			e := &v.index[i]
			cur, ok := newest[e.ID]
			switch tomb.Apply(e, cur.seq, ok) {
			case dbfile.RebuildPut:
				newest[e.ID] = version{seq: e.Seq, op: e.Op, ts: e.TS, ttl: e.TTL, size: int64(e.Size), where: place{seg: v}}
			case dbfile.RebuildDelete:
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
