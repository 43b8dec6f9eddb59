package engine

import (
	"fmt"

	"github.com/ebbdb/ebb/engine/internal/docfmt"
	"github.com/ebbdb/ebb/engine/internal/feedlog"
	"github.com/ebbdb/ebb/segment"
	"time"
)

// The stored versions of a container's items, from which the
// AllVersionsAndDeletes feed derives its changes (feedlog.Derive), and the
// compactor what it keeps for it. Both derive them by the same function,
// so the feed read after a restart, a crash or a compaction is the one
// read before.

// verLoc is where a version's record is: a segment file and handle, or a
// memtable record.
type verLoc struct {
	file uint32
	h    segment.Handle
	mem  *segment.Record
}

// feedSource is a snapshot of a container's stored versions. It holds a
// reference to each segment file it names until release.
type feedSource struct {
	feedlog.Source
	locs      []verLoc // by Version.Ref
	files     map[uint32]*segFile
	retention time.Duration
}

func (s *feedSource) release() {
	for _, f := range s.files {
		f.release()
	}
	s.files = nil
}

// feedSnapshot collects the container's stored versions with a seq below
// the frontier's: the records of its segment files (from their index
// blocks, not their data) and of its memtables.
func (c *Container) feedSnapshot(f feedFrontier) (*feedSource, error) {
	below := f.fS
	c.mu.RLock()
	if c.deleted {
		c.mu.RUnlock()
		return nil, c.notFound()
	}
	s := &feedSource{Source: feedlog.Source{History: f.history, Marks: f.marks},
		files: make(map[uint32]*segFile, len(c.files)), retention: c.props.ChangeFeedRetention}
	for n, f := range c.files {
		f.acquire()
		s.files[n] = f
	}
	// A memtable's records before its current length never change.
	var mems [][]segment.Record
	for _, m := range []*memtable{c.frozen, c.mem} {
		if m != nil {
			mems = append(mems, m.recs[:len(m.recs):len(m.recs)])
		}
	}
	c.mu.RUnlock()

	var records int64
	for _, f := range s.files {
		records += f.r.Stats().Records
	}
	ids := segment.NewIDArena(records)
	var entries []segment.IndexEntry
	add := func(v feedlog.Version, at verLoc) {
		v.Ref = len(s.locs)
		s.Versions = append(s.Versions, v)
		s.locs = append(s.locs, at)
	}
	for n, f := range s.files {
		var err error
		entries, err = f.r.AppendIndexIn(entries[:0], ids)
		if err != nil {
			s.release()
			return nil, fmt.Errorf("read versions of segment %d: %w", n, err)
		}
		for i := range entries {
			if e := &entries[i]; e.Seq < below {
				add(feedlog.Version{ID: e.ID, Seq: e.Seq, TS: e.TS, TTL: e.TTL, Op: e.Op, Size: e.Size}, verLoc{file: n, h: e.Handle})
			}
		}
	}
	for _, recs := range mems {
		for i := range recs {
			if r := &recs[i]; r.Seq < below {
				add(feedlog.Version{ID: r.ID, Seq: r.Seq, TS: r.TS, TTL: r.TTL, Op: r.Op, Size: uint32(segment.RecordSize(r))}, verLoc{mem: r})
			}
		}
	}
	s.Versions = feedlog.SortVersions(s.Versions)
	return s, nil
}

// body renders version v's body as Read returns it.
func (s *feedSource) body(v *feedlog.Version) ([]byte, error) {
	at := &s.locs[v.Ref]
	rec := at.mem
	if rec == nil {
		f := s.files[at.file]
		if f == nil {
			return nil, fmt.Errorf("item %s seq %d: segment %d is not open: %w", showItem(v.ID), v.Seq, at.file, ErrCorrupt)
		}
		rec = &segment.Record{ID: v.ID}
		if err := f.r.Get(at.h, rec); err != nil {
			return nil, fmt.Errorf("read item %s seq %d: %w", showItem(v.ID), v.Seq, err)
		}
		if rec.ID != v.ID || rec.Seq != v.Seq || rec.Op != segment.OpPut {
			return nil, fmt.Errorf("item %q: segment %d block %d offset %d holds %s %q seq %d, not seq %d: %w",
				v.ID, at.file, at.h.Block, at.h.Off, rec.Op, rec.ID, rec.Seq, v.Seq, ErrCorrupt)
		}
	}
	return docfmt.RenderSeq(nil, rec.Body, rec.TS, rec.Seq), nil
}
