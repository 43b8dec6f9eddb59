package engine

import (
	"slices"

	"github.com/ebbdb/ebb/engine/internal/feedlog"
	"github.com/ebbdb/ebb/index"
	"github.com/ebbdb/ebb/policy"
	"github.com/ebbdb/ebb/segment"
)

// latestPass reads the LatestVersion feed after the key after (nil: from
// the start): the live items, each at its newest version, in key order.
// The index holds only applied writes, which are durable (with fsync on).
func (c *Container) latestPass(after *feedlog.Key) (feedPage, error) {
	if err := c.db.usable(); err != nil {
		return feedPage{}, err
	}
	now := c.db.clock.now()
	c.mu.RLock()
	if c.deleted {
		c.mu.RUnlock()
		return feedPage{}, c.notFound()
	}
	snap := c.idx.Live(now)
	c.mu.RUnlock()
	slices.SortFunc(snap, func(a, b index.Slot) int {
		ka, kb := slotKey(&a), slotKey(&b)
		return feedlog.Compare(&ka, &kb)
	})
	p := feedPage{nextDue: policy.Never}
	var lsns []uint64
	rank := 0
	for i := range snap {
		s := &snap[i]
		if i > 0 && snap[i-1].Seq == s.Seq {
			rank++ // a batch's items share their seq (and ts): adjacent, by id
		} else {
			rank = 0
		}
		k := slotKey(s)
		if after != nil && feedlog.Compare(&k, after) <= 0 {
			continue
		}
		lsn, err := feedlog.WriteLSN(s.Seq, rank)
		if err != nil {
			return feedPage{}, err
		}
		p.keys = append(p.keys, k)
		lsns = append(lsns, lsn)
	}
	p.load = func(i int) (Change, bool, error) {
		k := &p.keys[i]
		var rec segment.Record
		expires, err := c.fetchAt(k.ID, c.db.clock.now(), &rec)
		if isNotFound(err) && !c.isDeleted() {
			return Change{}, false, nil // deleted or expired since
		}
		if err != nil {
			return Change{}, false, err
		}
		if rec.Seq != k.S {
			// Written again since: the newer version has a greater key,
			// which the next read (a follower's) reports.
			return Change{}, false, nil
		}
		it := makeItem(&rec, expires)
		return Change{Op: ChangeReplace, ID: it.ID, PartitionKey: it.PartitionKey, LSN: lsns[i], TS: rec.TS, Body: it.Body, Continuation: k.Token(c.num)}, true, nil
	}
	return p, nil
}

// slotKey is the feed key of the write that made slot s's version.
func slotKey(s *index.Slot) feedlog.Key {
	return feedlog.Key{T: s.TS, S: s.Seq, Class: feedlog.ClassWrite, V: s.Seq, ID: s.ID}
}
