package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/internal/feedlog"
	"github.com/ebbdb/ebb/policy"
)

// allVersionsPass reads the AllVersionsAndDeletes feed after the key after
// (nil: from the start of the retention).
func (c *Container) allVersionsPass(ctx context.Context, after *feedlog.Key) (feedPage, error) {
	if err := c.db.usable(); err != nil {
		return feedPage{}, err
	}
	c.mu.RLock()
	retention, deleted := c.props.ChangeFeedRetention, c.deleted
	c.mu.RUnlock()
	if deleted {
		return feedPage{}, c.notFound()
	}
	if retention <= 0 {
		return feedPage{}, fmt.Errorf("%w: it is off (ChangeFeedRetention 0), and %s needs it", ErrFeedRetention, AllVersionsAndDeletes)
	}
	f, err := c.feedFrontier(ctx)
	if err != nil {
		return feedPage{}, err
	}
	fT, fS := f.fT, f.fS
	src, err := c.feedSnapshot(f)
	if err != nil {
		return feedPage{}, err
	}
	cutoff := feedFloor(fT, src.retention, f.since)
	if after != nil && after.T < cutoff {
		src.release()
		return feedPage{}, fmt.Errorf("%w: the continuation is at %d, older than the retention of %v (changes before %d may be gone)",
			ErrFeedRetention, after.T, src.retention, cutoff)
	}
	d, err := feedlog.Derive(&src.Source, fT, fS)
	if err != nil {
		src.release()
		return feedPage{}, err
	}
	var chs []*feedlog.Change
	p := feedPage{nextDue: d.NextDue, release: src.release}
	for i := range d.Changes {
		ch := &d.Changes[i]
		if ch.Key.T < cutoff || (after != nil && feedlog.Compare(&ch.Key, after) <= 0) {
			continue
		}
		chs = append(chs, ch)
		p.keys = append(p.keys, ch.Key)
	}
	p.load = func(i int) (Change, bool, error) {
		ch := chs[i]
		id, pk := splitItemKey(ch.Key.ID)
		out := Change{Op: ChangeOp(ch.Op), ID: id, PartitionKey: pk, LSN: ch.LSN, PreviousLSN: ch.PrevLSN, TS: ch.Key.T, TTLExpired: ch.Expired,
			Continuation: ch.Key.Token(c.num)}
		if ch.Expired {
			// As for any answer that relies on an item having expired:
			// no crash and no wall clock found behind can take it back.
			c.db.observeExpiry(ch.Key.T)
		}
		if ch.Op == feedlog.OpDelete {
			return out, true, nil
		}
		body, err := src.body(&src.Versions[ch.Ver])
		if err != nil {
			return Change{}, false, err
		}
		out.Body = body
		return out, true, nil
	}
	return p, nil
}

// feedFrontier is the frontier of c's feed now: the engine's clock fT and
// the seq fS of the next journal entry, with the policy history and the
// feed marks as they are then, taken in the commit queue once every write
// before is applied (and so durable), and no DefaultTTL change is under
// way (SetProperties makes its change durable within the queue). No write
// to come has a key below (fT, fS), and no DefaultTTL change to come
// expires an item before it: the changes below it are final. A read-only
// DB writes nothing more: what it applied is final.
type feedFrontier struct {
	fT      int64
	fS      uint64
	history policy.History
	marks   []dbfile.FeedMark
	since   int64
}

func (c *Container) feedFrontier(ctx context.Context) (feedFrontier, error) {
	var f feedFrontier
	take := func(now int64, next uint64) {
		c.mu.RLock()
		f = feedFrontier{fT: now, fS: next, history: c.history, marks: c.feed.marks, since: c.feed.since}
		c.mu.RUnlock()
	}
	err := c.db.control(ctx, func(now int64) error {
		take(now, c.db.nextSeq())
		return nil
	})
	if errors.Is(err, ErrReadOnly) {
		take(c.db.clock.now(), c.db.appliedThrough()+1)
		return f, nil
	}
	return f, err
}
