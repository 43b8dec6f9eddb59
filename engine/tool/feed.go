package tool

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/internal/docfmt"
	"github.com/ebbdb/ebb/engine/internal/feedlog"
	"github.com/ebbdb/ebb/engine/internal/pkey"
	"github.com/ebbdb/ebb/policy"
	"github.com/ebbdb/ebb/segment"
)

// FeedOptions choose what Feed reads.
type FeedOptions struct {
	// Container is the container's id.
	Container string
	// All reads the all-versions-and-deletes feed (expiries included),
	// which needs the container's change feed retention; otherwise the
	// latest-version feed.
	All bool
	// From is a continuation token (a change's Continuation, from Feed or
	// from the engine's Container.ChangeFeed): Feed reports the changes
	// strictly after it. "" starts from the beginning.
	From string
	// Wall is the wall clock (nil: time.Now); the instant expiry is judged
	// against is derived from it as Open would.
	Wall func() time.Time
}

// FeedChange is one change as Feed reports it: the engine's
// engine.Change, with Op as a word ("create", "replace" or "delete").
type FeedChange struct {
	Op string `json:"op"`
	ID string `json:"id"`
	// PartitionKey is the item's partition key value in header form
	// (`["a"]`, `[{}]` for None), "" in a container without a key.
	PartitionKey string `json:"partitionKey,omitempty"`
	LSN          uint64 `json:"lsn"`
	PreviousLSN  uint64 `json:"previousLsn,omitempty"`
	TS           int64  `json:"ts"`
	TTLExpired   bool   `json:"timeToLiveExpired,omitempty"`
	Body         []byte `json:"-"`
	Continuation string `json:"continuation"`
}

// FeedPage is what one Feed call found: the changes, and the instant of the
// next expiry to come (math.MaxInt64: none), when a follower should look
// again at the latest.
type FeedPage struct {
	Changes []FeedChange
	NextDue int64
}

var feedOps = [...]string{feedlog.OpCreate: "create", feedlog.OpReplace: "replace", feedlog.OpDelete: "delete"}

// Feed reads a container's change feed from dir without opening the
// database, as Inspect reads it: no lock, nothing written, so it works
// while another process has the database open. It reports the changes on
// disk as the engine's Container.ChangeFeed would (same order, LSNs and
// continuation tokens), except that a writer's journal entries not yet
// fsynced may be reported too. A directory without a database fails with
// an error wrapping dbfile's ErrNoDatabase (engine.ErrNoDatabase); a
// missing container, a malformed token, the all-versions feed of a
// container without retention, or one from a continuation older than the
// retention fail saying so.
func Feed(dir string, opts FeedOptions) (*FeedPage, error) {
	s, err := takeSnapshot(dir)
	if s != nil {
		defer s.close()
	}
	if err != nil {
		return nil, err
	}
	if s.man == nil {
		return nil, s.manErr
	}
	ci := slices.IndexFunc(s.man.Containers, func(cm dbfile.ContainerMeta) bool { return cm.ID == opts.Container })
	if ci < 0 {
		return nil, fmt.Errorf("ebb: %s: no container %q", dir, opts.Container)
	}
	cm := &s.man.Containers[ci]
	var after *feedlog.Key
	if opts.From != "" {
		k, err := feedlog.ParseToken(opts.From, cm.Num)
		if err != nil {
			return nil, fmt.Errorf("ebb: change feed of container %q: %w", cm.ID, err)
		}
		after = &k
	}
	wall := time.Now
	if opts.Wall != nil {
		wall = opts.Wall
	}
	now := s.now(wall().Unix())
	src, bodies, fS, err := s.feedSource(ci)
	if err != nil {
		return nil, err
	}
	if !opts.All {
		return latestFeed(src, bodies, cm.Num, now, after)
	}
	retention := time.Duration(cm.FeedRetention)
	if retention <= 0 {
		return nil, fmt.Errorf("ebb: change feed of container %q: all versions and deletes need the change feed retention, which is off", cm.ID)
	}
	cutoff := max(feedlog.Cutoff(now, retention), cm.FeedSince)
	if after != nil && after.T < cutoff {
		return nil, fmt.Errorf("ebb: change feed of container %q: the continuation is at %d, older than the retention of %v (changes before %d may be gone)",
			cm.ID, after.T, retention, cutoff)
	}
	d, err := feedlog.Derive(src, now, fS)
	if err != nil {
		return nil, fmt.Errorf("ebb: change feed of container %q: %w", cm.ID, err)
	}
	page := &FeedPage{NextDue: d.NextDue}
	for i := range d.Changes {
		ch := &d.Changes[i]
		if ch.Key.T < cutoff || (after != nil && feedlog.Compare(&ch.Key, after) <= 0) {
			continue
		}
		id, key, err := pkey.Show(ch.Key.ID)
		if err != nil {
			return nil, fmt.Errorf("ebb: change feed of container %q: %v: %w", cm.ID, err, segment.ErrCorrupt)
		}
		out := FeedChange{Op: feedOps[ch.Op], ID: id, PartitionKey: key, LSN: ch.LSN, PreviousLSN: ch.PrevLSN, TS: ch.Key.T,
			TTLExpired: ch.Expired, Continuation: ch.Key.Token(cm.Num)}
		if ch.Op != feedlog.OpDelete {
			if out.Body, err = bodies(&src.Versions[ch.Ver]); err != nil {
				return nil, err
			}
		}
		page.Changes = append(page.Changes, out)
	}
	if page.NextDue == policy.Never {
		page.NextDue = math.MaxInt64
	}
	return page, nil
}

// latestFeed is the latest-version feed: each item's newest version if it
// is live at now, in key order, as the engine's index would list it.
func latestFeed(src *feedlog.Source, bodies func(*feedlog.Version) ([]byte, error), num uint32, now int64, after *feedlog.Key) (*FeedPage, error) {
	var live []*feedlog.Version
	vs := src.Versions
	for i := range vs {
		v := &vs[i]
		if last := i+1 == len(vs) || vs[i+1].ID != v.ID; last && v.Op == segment.OpPut && src.History.ExpiresAt(v.TS, v.TTL) > now {
			live = append(live, v)
		}
	}
	key := func(v *feedlog.Version) feedlog.Key {
		return feedlog.Key{T: v.TS, S: v.Seq, Class: feedlog.ClassWrite, V: v.Seq, ID: v.ID}
	}
	slices.SortFunc(live, func(a, b *feedlog.Version) int {
		ka, kb := key(a), key(b)
		return feedlog.Compare(&ka, &kb)
	})
	page := &FeedPage{NextDue: math.MaxInt64}
	rank := 0
	for i, v := range live {
		if i > 0 && live[i-1].Seq == v.Seq {
			rank++
		} else {
			rank = 0
		}
		k := key(v)
		if after != nil && feedlog.Compare(&k, after) <= 0 {
			continue
		}
		lsn, err := feedlog.WriteLSN(v.Seq, rank)
		if err != nil {
			return nil, err
		}
		body, err := bodies(v)
		if err != nil {
			return nil, err
		}
		id, pk, err := pkey.Show(v.ID)
		if err != nil {
			return nil, fmt.Errorf("ebb: change feed: %v: %w", err, segment.ErrCorrupt)
		}
		page.Changes = append(page.Changes, FeedChange{Op: "replace", ID: id, PartitionKey: pk, LSN: lsn, TS: v.TS, Body: body, Continuation: k.Token(num)})
	}
	return page, nil
}

// feedSource collects container ci's versions from its segment files'
// index blocks and the journal's unsealed records, with a function that
// renders a version's body, and the seq after the last one on disk.
func (s *snapshot) feedSource(ci int) (*feedlog.Source, func(*feedlog.Version) ([]byte, error), uint64, error) {
	cm := &s.man.Containers[ci]
	type loc struct {
		seg *segView
		h   segment.Handle
		rec *segment.Record
	}
	var locs []loc
	src := &feedlog.Source{History: dbfile.ToHistory(cm.History), Marks: cm.FeedMarks}
	fS := s.man.JournalFrom
	add := func(v feedlog.Version, at loc) {
		v.Ref = len(locs)
		src.Versions = append(src.Versions, v)
		locs = append(locs, at)
		fS = max(fS, v.Seq+1)
	}
	for _, v := range s.segs {
		if v.cont != ci {
			continue
		}
		if v.err != nil || v.missing {
			return nil, nil, 0, fmt.Errorf("ebb: container %q: segment %s cannot be read: %v: %w", cm.ID, v.rel, v.err, segment.ErrCorrupt)
		}
		for i := range v.index {
			e := &v.index[i]
			add(feedlog.Version{ID: e.ID, Seq: e.Seq, TS: e.TS, TTL: e.TTL, Op: e.Op, Size: e.Size}, loc{seg: v, h: e.Handle})
		}
	}
	for _, f := range s.journal {
		for i := range f.recs {
			r := &f.recs[i].rec
			if r.Container == cm.Num {
				add(feedlog.Version{ID: r.ID, Seq: r.Seq, TS: r.TS, TTL: r.TTL, Op: r.Op, Size: uint32(segment.RecordSize(r))}, loc{rec: r})
			}
		}
		if f.seqs != nil {
			fS = max(fS, f.seqs.Last+1)
		}
	}
	src.Versions = feedlog.SortVersions(src.Versions)
	body := func(v *feedlog.Version) ([]byte, error) {
		at := locs[v.Ref]
		rec := at.rec
		if rec == nil {
			rec = &segment.Record{}
			if err := at.seg.r.Get(at.h, rec); err != nil {
				return nil, fmt.Errorf("ebb: container %q: item %q: %w", cm.ID, v.ID, err)
			}
			if rec.ID != v.ID || rec.Seq != v.Seq {
				return nil, fmt.Errorf("ebb: container %q: %s holds %q seq %d where its index says %q seq %d: %w",
					cm.ID, at.seg.rel, rec.ID, rec.Seq, v.ID, v.Seq, segment.ErrCorrupt)
			}
		}
		return docfmt.RenderSeq(nil, rec.Body, rec.TS, rec.Seq), nil
	}
	return src, body, fS, nil
}
