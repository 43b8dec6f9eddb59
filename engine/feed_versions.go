package engine

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/policy"
	"github.com/ebbdb/ebb/segment"
)

// The stored versions of a container's items, and the changes they make:
// what the AllVersionsAndDeletes feed reports and what the compactor keeps
// for it. Both derive the changes from the versions by one function
// (deriveChanges), so the feed read after a restart, a crash or a
// compaction is the one read before.

// feedVersion is one stored record of an item: a version (put) or a
// tombstone.
type feedVersion struct {
	id   string
	seq  uint64
	ts   int64
	ttl  int32
	op   segment.Op
	size uint32
	file uint32          // its segment file, when mem is nil
	h    segment.Handle  // its place in that file
	mem  *segment.Record // the record, when it is in a memtable
}

// feedSource is a snapshot of a container's stored versions, sorted by
// (id, seq), one per (id, seq), with what deriving changes from them needs.
// It holds a reference to each segment file it names until release.
type feedSource struct {
	versions  []feedVersion
	files     map[uint32]*segFile
	history   policy.History
	marks     []dbfile.FeedMark
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
	s := &feedSource{files: make(map[uint32]*segFile, len(c.files)), history: f.history,
		marks: f.marks, retention: c.props.ChangeFeedRetention}
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
	for n, f := range s.files {
		var err error
		entries, err = f.r.AppendIndexIn(entries[:0], ids)
		if err != nil {
			s.release()
			return nil, fmt.Errorf("read versions of segment %d: %w", n, err)
		}
		for i := range entries {
			e := &entries[i]
			if e.Seq >= below {
				continue
			}
			s.versions = append(s.versions, feedVersion{id: e.ID, seq: e.Seq, ts: e.TS, ttl: e.TTL, op: e.Op, size: e.Size, file: n, h: e.Handle})
		}
	}
	for _, recs := range mems {
		for i := range recs {
			r := &recs[i]
			if r.Seq >= below {
				continue
			}
			s.versions = append(s.versions, feedVersion{id: r.ID, seq: r.Seq, ts: r.TS, ttl: r.TTL, op: r.Op,
				size: uint32(segment.RecordSize(r)), mem: r})
		}
	}
	// A record may be in two places while a seal or a compaction swaps
	// files in, and a compaction may have left a tombstone of a version
	// (same id and seq) that another file still holds: one each, the put
	// preferred.
	slices.SortFunc(s.versions, func(a, b feedVersion) int {
		if c := strings.Compare(a.id, b.id); c != 0 {
			return c
		}
		if c := cmp.Compare(a.seq, b.seq); c != 0 {
			return c
		}
		return cmp.Compare(a.op, b.op) // OpPut first
	})
	s.versions = slices.CompactFunc(s.versions, func(a, b feedVersion) bool { return a.id == b.id && a.seq == b.seq })
	return s, nil
}

// feedChange is a change derived from the versions.
type feedChange struct {
	key     feedKey
	op      ChangeOp
	expired bool
	ver     int // the version written, deleted (its tombstone) or expired
	prev    int // the version replaced or deleted, or -1
	lsn     uint64
	prevLSN uint64
	// uses are the versions the change needs to be derived exactly as it
	// is: itself, the one before, and for an expiry its anchor's batch.
	anchor int // an expiry's anchor write (a version), or -1
}

// derivation is deriveChanges's result.
type derivation struct {
	changes []feedChange // in key order
	// nextDue is the first expiry still to come (policy.Never: none).
	nextDue int64
	// openGap is the index in changes of the first expiry after the
	// container's last write (len(changes): none).
	openGap int
}

// deriveChanges derives the changes the versions make, up to the frontier
// (fT, fS): every write with a seq below fS, and every expiry by instant fT.
//
// Per item, in seq order: a put is a create unless the version before it
// was a put still live when it was written (its expiry, if any, has a
// greater key), and then a replace of it; a tombstone is a delete of the
// version before it if that one was live, and nothing otherwise (a
// tombstone that compaction left of an expired version); a put expires at
// its expiry instant under the policy history unless the next write of the
// item comes first.
func deriveChanges(s *feedSource, fT int64, fS uint64) (derivation, error) {
	vs := s.versions
	d := derivation{nextDue: policy.Never}
	// expiries[i] is the key of version i's expiry, T policy.Never if none.
	expiries := make([]feedKey, len(vs))
	for i := range vs {
		v := &vs[i]
		expiries[i] = feedKey{T: policy.Never, Class: classExpiry, V: v.seq, ID: v.id}
		if v.op == segment.OpPut {
			expiries[i].T, expiries[i].S = expirySeq(s, v)
		}
	}
	for i := range vs {
		v := &vs[i]
		first := i == 0 || vs[i-1].id != v.id
		last := i+1 == len(vs) || vs[i+1].id != v.id
		wk := feedKey{T: v.ts, S: v.seq, Class: classWrite, V: v.seq, ID: v.id}
		prev := -1
		if !first && vs[i-1].op == segment.OpPut && compareFeedKeys(&expiries[i-1], &wk) > 0 {
			prev = i - 1 // live when v was written
		}
		switch {
		case v.op == segment.OpPut && prev < 0:
			d.changes = append(d.changes, feedChange{key: wk, op: ChangeCreate, ver: i, prev: -1, anchor: -1})
		case v.op == segment.OpPut:
			d.changes = append(d.changes, feedChange{key: wk, op: ChangeReplace, ver: i, prev: prev, anchor: -1})
		case prev >= 0:
			d.changes = append(d.changes, feedChange{key: wk, op: ChangeDelete, ver: i, prev: prev, anchor: -1})
		}
		ek := &expiries[i]
		if ek.T == policy.Never {
			continue
		}
		if !last {
			nk := feedKey{T: vs[i+1].ts, S: vs[i+1].seq, Class: classWrite, V: vs[i+1].seq, ID: v.id}
			if compareFeedKeys(&nk, ek) < 0 {
				continue // written again (or deleted) before it expired
			}
		}
		if ek.T > fT {
			d.nextDue = min(d.nextDue, ek.T)
			continue
		}
		d.changes = append(d.changes, feedChange{key: *ek, op: ChangeDelete, expired: true, ver: i, prev: i, anchor: -1})
	}
	slices.SortFunc(d.changes, func(a, b feedChange) int { return compareFeedKeys(&a.key, &b.key) })
	return d, assignLSNs(&d, vs, fS)
}

// expirySeq is the S of the key of v's expiry at e: the journal position
// of the DefaultTTL change that expired v, if one did (e is that change's
// instant), else 0. Several changes may share an instant: the marks of an
// instant are in the order of its history entries (but the first entry,
// the container's creation, which expires nothing at once).
func expirySeq(s *feedSource, v *feedVersion) (int64, uint64) {
	h := s.history
	e, i := h.ExpiryCause(v.ts, v.ttl)
	if i <= 0 || e != h[i].At {
		return e, 0
	}
	first := sort.Search(len(h), func(j int) bool { return h[j].At >= e })
	nth := i - max(first, 1)
	for _, m := range s.marks {
		if m.At == e {
			if nth == 0 {
				return e, m.Seq
			}
			nth--
		}
	}
	return e, 0
}

// assignLSNs gives each change its LSN and PreviousLSN, and each expiry its
// anchor (feed_key.go); fS bounds the seq of the container's next write.
func assignLSNs(d *derivation, vs []feedVersion, fS uint64) error {
	// Ranks of the versions within their batch (seq), by id.
	order := make([]int, len(vs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(vs[a].seq, vs[b].seq); c != 0 {
			return c
		}
		return strings.Compare(vs[a].id, vs[b].id)
	})
	verLSN := make([]uint64, len(vs))
	for j, i := range order {
		rank := 0
		if j > 0 && vs[order[j-1]].seq == vs[i].seq {
			prev := order[j-1]
			rank = int(verLSN[prev]&(lsnGap-1)) + 1
		}
		lsn, err := writeLSN(vs[i].seq, rank)
		if err != nil {
			return err
		}
		verLSN[i] = lsn
	}
	// The limit of each expiry's LSNs: the seq of the next write after it.
	limits := make([]uint64, len(d.changes))
	next := fS
	d.openGap = len(d.changes)
	for j := len(d.changes) - 1; j >= 0; j-- {
		limits[j] = next
		if d.changes[j].key.Class == classWrite {
			next = d.changes[j].key.S
		} else if next == fS {
			d.openGap = j
		}
	}
	anchor, rank := -1, 0
	for j := range d.changes {
		ch := &d.changes[j]
		if ch.prev >= 0 {
			ch.prevLSN = verLSN[ch.prev]
		}
		if ch.key.Class == classWrite {
			ch.lsn = verLSN[ch.ver]
			anchor, rank = ch.ver, 0
			continue
		}
		if anchor < 0 {
			// Its own version's write comes before it: not here means
			// the versions are not what the derivation needs.
			return fmt.Errorf("expiry of %q (seq %d) at %d has no write before it in the stored versions: %w", ch.key.ID, ch.key.V, ch.key.T, ErrCorrupt)
		}
		lsn, err := expiryLSN(vs[anchor].seq, rank, limits[j])
		if err != nil {
			return err
		}
		ch.lsn, ch.anchor = lsn, anchor
		rank++
	}
	return nil
}
