package engine

import (
	"context"
	"math"
	"sort"
	"time"

	"github.com/ebbdb/ebb/engine/internal/feedlog"
	"github.com/ebbdb/ebb/policy"
	"github.com/ebbdb/ebb/segment"
)

// What the change feed's retention keeps: the seal writes every version
// of a container with retention (not only each item's newest), and the
// compactor keeps the versions the AllVersionsAndDeletes feed derives its
// changes from, for the changes younger than the retention, and nothing
// more (feedNeeded).

// feedCutoff is feedlog.Cutoff: the instant from which changes are kept at
// now under retention r (math.MaxInt64 with retention off).
func feedCutoff(now int64, r time.Duration) int64 { return feedlog.Cutoff(now, r) }

// pruneHistory shortens the policy history h as policy.History.Prune does,
// but keeps every entry from cutoff on as it is: the feed derives the
// expiries of the retention from the exact history. The entries before
// cutoff are pruned to a few equivalent ones (from the last of them on), so
// the result answers exactly for every instant from cutoff on.
func pruneHistory(h policy.History, cutoff int64) policy.History {
	if cutoff == math.MaxInt64 {
		return h.Prune()
	}
	j := sort.Search(len(h), func(i int) bool { return h[i].At >= cutoff })
	if j <= policy.PruneLen {
		return h
	}
	head := h[:j].Prune()
	out := make(policy.History, 0, len(head)+len(h)-j)
	return append(append(out, head...), h[j:]...)
}

// feedKeep is what the change feed needs kept at one moment: the versions
// (by id and seq) and, per segment file, how many of its records are
// needed beyond the live ones the index counts, and their bytes.
type feedKeep struct {
	need map[verKey]bool
	// perFile counts, per file, the needed records that were not live
	// then: the picker adds them to what the index counts live.
	perFile map[uint32]fileKeep
	// anyNeeded are the files holding a needed record, live then or not.
	// A record live then may have died since (expired, superseded), and
	// the index no longer counts it; it is still needed.
	anyNeeded map[uint32]bool
	// known are the segment files the snapshot read: a file sealed since
	// holds records whose need is in need, but not in perFile.
	known map[uint32]bool
	// below is the frontier's seq: every version from it on is needed.
	below uint64
	// bytes is the size of every version kept for the feed alone (not
	// live), in files and memtables.
	bytes int64
}

type verKey struct {
	id  string
	seq uint64
}

type fileKeep struct{ records, bytes int64 }

// needs reports whether the feed needs record r kept (k may be nil:
// retention is off).
func (k *feedKeep) needs(id string, seq uint64) bool {
	return k != nil && (seq >= k.below || k.need[verKey{id, seq}])
}

// holds reports whether file n may hold a record the feed needs, live or
// not: such a file must go through a rewrite (which keeps those records),
// never be dropped unread.
func (k *feedKeep) holds(n uint32) bool {
	return k != nil && (!k.known[n] || k.anyNeeded[n])
}

// feedKeepMaxAge is how long the background compactor reuses what
// feedNeeded found, which costs time linear in the container's records.
// An older answer is safe: it keeps more (the changes that have left the
// retention since), never less (files sealed since count as needed whole,
// versions written since as needed, and a newest live version, which a
// later write may replace or its TTL expire, is needed already, its file
// held by anyNeeded after the index stops counting it live).
const feedKeepMaxAge = 5 * time.Second

// feedNeededCached is feedNeeded, reusing an answer up to feedKeepMaxAge
// old.
func (c *Container) feedNeededCached(ctx context.Context) (*feedKeep, error) {
	c.feed.mu.Lock()
	k, at := c.feed.keep, c.feed.keepAt
	c.feed.mu.Unlock()
	if k != nil && time.Since(at) < feedKeepMaxAge {
		return k, nil
	}
	k, err := c.feedNeeded(ctx)
	if err != nil {
		return nil, err
	}
	c.feed.mu.Lock()
	c.feed.keep, c.feed.keepAt = k, time.Now()
	c.feed.mu.Unlock()
	return k, nil
}

// feedNeeded computes what the feed needs kept at now, or nil when the
// container's retention is off. A version is needed when a change younger
// than the retention is derived from it (its own, or the one after it,
// which tells a create from a replace and names its PreviousLSN); when it
// expired among the expiries after one write (all of them stay while one
// does, and all after the container's last write stay, so that their ranks,
// hence their LSNs, never change); when it anchors such expiries; when it
// is an item's newest live version (a later write may replace it); and
// when a needed version shares its seq (a batch's LSNs rank its items).
//
// The history and the versions are taken at a frontier in the commit queue
// (as the feed reads them), so that no DefaultTTL change not yet durable
// decides what is dropped.
func (c *Container) feedNeeded(ctx context.Context) (*feedKeep, error) {
	c.mu.RLock()
	retention := c.props.ChangeFeedRetention
	c.mu.RUnlock()
	if retention <= 0 {
		return nil, nil
	}
	f, err := c.feedFrontier(ctx)
	if err != nil {
		return nil, err
	}
	now := f.fT
	src, err := c.feedSnapshot(f)
	if err != nil {
		return nil, err
	}
	defer src.release()
	vs := src.Versions
	d, err := feedlog.Derive(&src.Source, now, feedlog.LSNMaxSeq+1)
	if err != nil {
		return nil, err
	}
	cutoff := feedFloor(now, retention, f.since)
	need := make([]bool, len(vs))
	// Gaps: the expiries after one anchor, kept whole.
	for j := 0; j < len(d.Changes); {
		ch := &d.Changes[j]
		if ch.Key.Class == feedlog.ClassWrite {
			if ch.Key.T >= cutoff {
				need[ch.Ver] = true
				if ch.Prev >= 0 {
					need[ch.Prev] = true
				}
			}
			j++
			continue
		}
		end := j
		keepGap := j >= d.OpenGap
		for ; end < len(d.Changes) && d.Changes[end].Key.Class == feedlog.ClassExpiry; end++ {
			keepGap = keepGap || d.Changes[end].Key.T >= cutoff
		}
		if keepGap {
			need[ch.Anchor] = true
			for _, e := range d.Changes[j:end] {
				need[e.Ver] = true
			}
		}
		j = end
	}
	for i := range vs {
		last := i+1 == len(vs) || vs[i+1].ID != vs[i].ID
		if last && vs[i].Op == segment.OpPut && src.History.ExpiresAt(vs[i].TS, vs[i].TTL) > now {
			need[i] = true
		}
	}
	// Batch closure: a needed version's batch-mates.
	bySeq := make(map[uint64][]int)
	for i := range vs {
		bySeq[vs[i].Seq] = append(bySeq[vs[i].Seq], i)
	}
	for i := range vs {
		if need[i] {
			for _, m := range bySeq[vs[i].Seq] {
				need[m] = true
			}
		}
	}
	k := &feedKeep{need: make(map[verKey]bool), perFile: make(map[uint32]fileKeep), anyNeeded: make(map[uint32]bool),
		known: make(map[uint32]bool), below: f.fS}
	for n := range src.files {
		k.known[n] = true
	}
	for i := range vs {
		if !need[i] {
			continue
		}
		v := &vs[i]
		k.need[verKey{v.ID, v.Seq}] = true
		at := src.locs[v.Ref]
		if at.mem == nil {
			k.anyNeeded[at.file] = true
		}
		last := i+1 == len(vs) || vs[i+1].ID != v.ID
		if last && v.Op == segment.OpPut && src.History.ExpiresAt(v.TS, v.TTL) > now {
			continue // live: counted by the index
		}
		k.bytes += int64(v.Size)
		if at.mem == nil {
			fk := k.perFile[at.file]
			fk.records++
			fk.bytes += int64(v.Size)
			k.perFile[at.file] = fk
		}
	}
	return k, nil
}
