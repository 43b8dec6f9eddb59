package feedlog

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/policy"
	"github.com/ebbdb/ebb/segment"
)

// Version is one stored record of an item: a version (put) or a tombstone.
// Ref is the caller's, to find the record again (its body).
type Version struct {
	ID   string
	Seq  uint64
	TS   int64
	TTL  int32
	Op   segment.Op
	Size uint32
	Ref  int
}

// SortVersions sorts vs by (id, seq) and keeps one version per (id, seq),
// a put rather than a tombstone: a record may be in two places while a
// seal or a compaction swaps files in, and a compaction may leave a
// tombstone of a version (same id and seq) that another file still holds.
func SortVersions(vs []Version) []Version {
	slices.SortFunc(vs, func(a, b Version) int {
		if c := strings.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Seq, b.Seq); c != 0 {
			return c
		}
		return cmp.Compare(a.Op, b.Op) // OpPut first
	})
	return slices.CompactFunc(vs, func(a, b Version) bool { return a.ID == b.ID && a.Seq == b.Seq })
}

// Source is what changes are derived from: a container's versions (as
// SortVersions leaves them), its policy history and its feed marks (the
// journal position of each DefaultTTL change, dbfile.ContainerMeta).
type Source struct {
	Versions []Version
	History  policy.History
	Marks    []dbfile.FeedMark
}

// Op is what a change did; the values are the engine's ChangeOp.
type Op uint8

const (
	OpCreate Op = iota + 1
	OpReplace
	OpDelete
)

// Change is a change derived from the versions.
type Change struct {
	Key     Key
	Op      Op
	Expired bool
	Ver     int // the version written, deleted (its tombstone) or expired
	Prev    int // the version replaced, deleted or expired, or -1
	LSN     uint64
	PrevLSN uint64
	Anchor  int // an expiry's anchor: the version of the write before it; else -1
}

// Derivation is what Derive found.
type Derivation struct {
	Changes []Change // in key order
	// NextDue is the instant of the first expiry still to come
	// (policy.Never: none).
	NextDue int64
	// OpenGap is the index in Changes of the first expiry after the
	// container's last write (len(Changes): none).
	OpenGap int
}

// Derive derives the changes the versions make up to the frontier (fT,
// fS): every write with a seq below fS, and every expiry by instant fT.
//
// Per item, in seq order: a put is a create unless the version before it
// was a put still live when it was written (its expiry, if any, has a
// greater key), and then a replace of it; a tombstone is a delete of the
// version before it if that one was live, and nothing otherwise (a
// tombstone that compaction left of an expired version); a put expires at
// its expiry instant under the policy history unless the next write of the
// item comes first.
func Derive(s *Source, fT int64, fS uint64) (Derivation, error) {
	vs := s.Versions
	d := Derivation{NextDue: policy.Never}
	// expiries[i] is the key of version i's expiry, T policy.Never if none.
	expiries := make([]Key, len(vs))
	for i := range vs {
		v := &vs[i]
		expiries[i] = Key{T: policy.Never, Class: ClassExpiry, V: v.Seq, ID: v.ID}
		if v.Op == segment.OpPut {
			expiries[i].T, expiries[i].S, expiries[i].M = expirySeq(s, v)
		}
	}
	for i := range vs {
		v := &vs[i]
		first := i == 0 || vs[i-1].ID != v.ID
		last := i+1 == len(vs) || vs[i+1].ID != v.ID
		wk := Key{T: v.TS, S: v.Seq, Class: ClassWrite, V: v.Seq, ID: v.ID}
		prev := -1
		if !first && vs[i-1].Op == segment.OpPut && Compare(&expiries[i-1], &wk) > 0 {
			prev = i - 1 // live when v was written
		}
		switch {
		case v.Op == segment.OpPut && prev < 0:
			d.Changes = append(d.Changes, Change{Key: wk, Op: OpCreate, Ver: i, Prev: -1, Anchor: -1})
		case v.Op == segment.OpPut:
			d.Changes = append(d.Changes, Change{Key: wk, Op: OpReplace, Ver: i, Prev: prev, Anchor: -1})
		case prev >= 0:
			d.Changes = append(d.Changes, Change{Key: wk, Op: OpDelete, Ver: i, Prev: prev, Anchor: -1})
		}
		ek := &expiries[i]
		if ek.T == policy.Never {
			continue
		}
		if !last {
			nk := Key{T: vs[i+1].TS, S: vs[i+1].Seq, Class: ClassWrite, V: vs[i+1].Seq, ID: v.ID}
			if Compare(&nk, ek) < 0 {
				continue // written again (or deleted) before it expired
			}
		}
		if ek.T > fT {
			d.NextDue = min(d.NextDue, ek.T)
			continue
		}
		d.Changes = append(d.Changes, Change{Key: *ek, Op: OpDelete, Expired: true, Ver: i, Prev: i, Anchor: -1})
	}
	slices.SortFunc(d.Changes, func(a, b Change) int { return Compare(&a.Key, &b.Key) })
	return d, assignLSNs(&d, vs, fS)
}

// expirySeq is the instant of v's expiry and the S and M of its key: the
// journal position of the DefaultTTL change that expired v, if one did (the
// instant is that change's), and the change's rank among the changes of
// that instant at that position; else 0 and 0. Several changes may share an
// instant: the marks of an instant are in the order of its history entries
// (but the first entry, the container's creation, which expires nothing at
// once), and their positions never decrease.
func expirySeq(s *Source, v *Version) (int64, uint64, uint32) {
	h := s.History
	e, i := h.ExpiryCause(v.TS, v.TTL)
	if i <= 0 || e != h[i].At {
		return e, 0, 0
	}
	first := sort.Search(len(h), func(j int) bool { return h[j].At >= e })
	nth := i - max(first, 1)
	var rank uint32
	for j, m := range s.Marks {
		if m.At != e {
			continue
		}
		if j > 0 && s.Marks[j-1].At == e && s.Marks[j-1].Seq == m.Seq {
			rank++
		} else {
			rank = 0
		}
		if nth == 0 {
			return e, m.Seq, rank
		}
		nth--
	}
	return e, 0, 0
}

// assignLSNs gives each change its LSN and PreviousLSN, and each expiry its
// anchor (key.go); fS bounds the seq of the container's next write.
func assignLSNs(d *Derivation, vs []Version, fS uint64) error {
	// Ranks of the versions within their batch (seq), by id.
	order := make([]int, len(vs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(vs[a].Seq, vs[b].Seq); c != 0 {
			return c
		}
		return strings.Compare(vs[a].ID, vs[b].ID)
	})
	verLSN := make([]uint64, len(vs))
	for j, i := range order {
		rank := 0
		if j > 0 && vs[order[j-1]].Seq == vs[i].Seq {
			rank = int(verLSN[order[j-1]]&(LSNGap-1)) + 1
		}
		lsn, err := WriteLSN(vs[i].Seq, rank)
		if err != nil {
			return err
		}
		verLSN[i] = lsn
	}
	// The limit of each expiry's LSNs: the seq of the next write after it.
	limits := make([]uint64, len(d.Changes))
	next := fS
	d.OpenGap = len(d.Changes)
	for j := len(d.Changes) - 1; j >= 0; j-- {
		limits[j] = next
		if d.Changes[j].Key.Class == ClassWrite {
			next = d.Changes[j].Key.S
		} else if next == fS {
			d.OpenGap = j
		}
	}
	anchor, rank := -1, 0
	for j := range d.Changes {
		ch := &d.Changes[j]
		if ch.Prev >= 0 {
			ch.PrevLSN = verLSN[ch.Prev]
		}
		if ch.Key.Class == ClassWrite {
			ch.LSN = verLSN[ch.Ver]
			anchor, rank = ch.Ver, 0
			continue
		}
		if anchor < 0 {
			// Its own version's write comes before it: not here means
			// the versions are not what the derivation needs.
			return fmt.Errorf("expiry of %q (seq %d) at %d has no write before it in the stored versions: %w", ch.Key.ID, ch.Key.V, ch.Key.T, segment.ErrCorrupt)
		}
		lsn, err := ExpiryLSN(vs[anchor].Seq, rank, limits[j])
		if err != nil {
			return err
		}
		ch.LSN, ch.Anchor = lsn, anchor
		rank++
	}
	return nil
}

// Cutoff is the instant from which changes are kept at now under
// retention r: now minus r in whole seconds (rounded up). With retention off
// it is math.MaxInt64: nothing is kept for the feed.
func Cutoff(now int64, r time.Duration) int64 {
	if r <= 0 {
		return math.MaxInt64
	}
	secs := int64((r + time.Second - 1) / time.Second)
	if now < math.MinInt64+secs {
		return math.MinInt64
	}
	return now - secs
}
