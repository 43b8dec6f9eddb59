package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/internal/docfmt"
	"github.com/ebbdb/ebb/policy"
	"github.com/ebbdb/ebb/segment"
)

// allVersionsPass reads the AllVersionsAndDeletes feed after the key after
// (nil: from the start of the retention).
func (c *Container) allVersionsPass(ctx context.Context, after *feedKey) (feedPage, error) {
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
	cutoff := feedCutoff(fT, src.retention)
	if after != nil && after.T < cutoff {
		src.release()
		return feedPage{}, fmt.Errorf("%w: the continuation is at %d, older than the retention of %v (changes before %d may be gone)",
			ErrFeedRetention, after.T, src.retention, cutoff)
	}
	d, err := deriveChanges(src, fT, fS)
	if err != nil {
		src.release()
		return feedPage{}, err
	}
	var chs []*feedChange
	p := feedPage{nextDue: d.nextDue, release: src.release}
	for i := range d.changes {
		ch := &d.changes[i]
		if ch.key.T < cutoff || (after != nil && compareFeedKeys(&ch.key, after) <= 0) {
			continue
		}
		chs = append(chs, ch)
		p.keys = append(p.keys, ch.key)
	}
	p.load = func(i int) (Change, bool, error) {
		ch := chs[i]
		out := Change{Op: ch.op, ID: ch.key.ID, LSN: ch.lsn, PreviousLSN: ch.prevLSN, TS: ch.key.T, TTLExpired: ch.expired,
			Continuation: ch.key.token(c.num)}
		if ch.expired {
			// As for any answer that relies on an item having expired:
			// no crash and no wall clock found behind can take it back.
			c.db.observeExpiry(ch.key.T)
		}
		if ch.op == ChangeDelete {
			return out, true, nil
		}
		body, err := src.body(&src.versions[ch.ver])
		if err != nil {
			return Change{}, false, err
		}
		out.Body = body
		return out, true, nil
	}
	return p, nil
}

// body renders version v's body as Read returns it.
func (s *feedSource) body(v *feedVersion) ([]byte, error) {
	rec := v.mem
	if rec == nil {
		f := s.files[v.file]
		if f == nil {
			return nil, fmt.Errorf("item %q seq %d: segment %d is not open: %w", v.id, v.seq, v.file, ErrCorrupt)
		}
		rec = &segment.Record{ID: v.id}
		if err := f.r.Get(v.h, rec); err != nil {
			return nil, fmt.Errorf("read item %q seq %d: %w", v.id, v.seq, err)
		}
		if rec.ID != v.id || rec.Seq != v.seq || rec.Op != segment.OpPut {
			return nil, fmt.Errorf("item %q: segment %d block %d offset %d holds %s %q seq %d, not seq %d: %w",
				v.id, v.file, v.h.Block, v.h.Off, rec.Op, rec.ID, rec.Seq, v.seq, ErrCorrupt)
		}
	}
	return docfmt.Render(nil, rec.Body, rec.TS, docfmt.ETag(rec.Seq)), nil
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
}

func (c *Container) feedFrontier(ctx context.Context) (feedFrontier, error) {
	var f feedFrontier
	take := func(now int64, next uint64) {
		c.mu.RLock()
		f = feedFrontier{fT: now, fS: next, history: c.history, marks: c.feed.marks}
		c.mu.RUnlock()
	}
	err := c.db.control(ctx, func(now int64) error {
		take(now, c.db.jnl.NextSeq())
		return nil
	})
	if errors.Is(err, ErrReadOnly) {
		take(c.db.clock.now(), c.db.appliedThrough()+1)
		return f, nil
	}
	return f, err
}
