package engine

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/internal/feedlog"
	"github.com/ebbdb/ebb/policy"
)

// The change feed: a container's changes read back in order (Container.ChangeFeed).
//
// Nothing is written for it. In LatestVersion mode the feed is the index's
// live items ordered by their position (feed_latest.go). In
// AllVersionsAndDeletes mode it is derived from the stored versions of
// every item (feed_versions.go, feed_all.go), which the seal and the
// compactor keep for ChangeFeedRetention (feed_retain.go), and expiries
// are derived from those versions and the policy history, so that the feed
// read after a restart or a crash is the one read before. The order, the
// LSNs, the continuation tokens and the derivation are in package
// engine/internal/feedlog, which the offline tools share.

// ChangeFeedMode chooses what a change feed reports.
type ChangeFeedMode uint8

const (
	// LatestVersion reports creates and updates: each live item once, at
	// its newest version, ordered by LSN. Deleted and expired items never
	// appear. It needs no retention.
	LatestVersion ChangeFeedMode = iota
	// AllVersionsAndDeletes reports every create, replace/upsert and
	// delete, and every expiry (a ChangeDelete with TTLExpired), in order.
	// It needs ContainerProperties.ChangeFeedRetention.
	AllVersionsAndDeletes
)

// String is "latest-version" or "all-versions-and-deletes".
func (m ChangeFeedMode) String() string {
	switch m {
	case LatestVersion:
		return "latest-version"
	case AllVersionsAndDeletes:
		return "all-versions-and-deletes"
	}
	return fmt.Sprintf("mode(%d)", m)
}

// ChangeOp is what one change did.
type ChangeOp uint8

const (
	// ChangeCreate: the item did not exist (or was deleted or expired)
	// and was written, by Create or by an Upsert that created it.
	ChangeCreate ChangeOp = iota + 1
	// ChangeReplace: a live item was overwritten (Replace or Upsert).
	ChangeReplace
	// ChangeDelete: a live item was deleted, or expired (TTLExpired).
	ChangeDelete
)

// String is "create", "replace" or "delete".
func (o ChangeOp) String() string {
	switch o {
	case ChangeCreate:
		return "create"
	case ChangeReplace:
		return "replace"
	case ChangeDelete:
		return "delete"
	}
	return fmt.Sprintf("op(%d)", o)
}

// Change is one entry of a container's change feed.
type Change struct {
	Op ChangeOp
	ID string
	// PartitionKey is the item's partition key value (None in a container
	// without a partition key path): with ID, the item's identity.
	PartitionKey PartitionKey
	LSN          uint64 // position in the container's feed; strictly increasing
	// PreviousLSN is the LSN of the version this change replaced or
	// deleted; 0 for a create, and in LatestVersion mode.
	PreviousLSN uint64
	// TS is the _ts of the new version; for a delete or an expiry, the
	// instant it took effect (unix seconds).
	TS int64
	// Body is the new version as Read returns it; nil for a delete or
	// expiry.
	Body []byte
	// TTLExpired marks a delete that is an expiry.
	TTLExpired bool
	// Continuation resumes the feed strictly after this change (pass it
	// as ChangeFeedOptions.Continuation).
	Continuation string
}

// ChangeFeedOptions choose how ChangeFeed reads.
type ChangeFeedOptions struct {
	Mode ChangeFeedMode
	// Continuation is where to resume: a Change's Continuation. "" starts
	// from the beginning (of the retention, for AllVersionsAndDeletes).
	Continuation string
	// Follow keeps the feed going: once it has caught up it waits for new
	// changes until ctx ends, and then yields ctx's error.
	Follow bool
}

// ChangeFeed iterates over the container's changes in LSN order, from
// opts.Continuation on.
//
// In AllVersionsAndDeletes mode every change is reported once it is
// durable, exactly once and in order: a consumer that stores each change's
// Continuation after handling it and resumes from the last one stored sees
// every change after it exactly once, across Close and Open and crashes.
// An expiry is a ChangeDelete with TTLExpired, at the instant the item
// expired (for an item expired by a DefaultTTL change, the instant of the
// change), placed after every change whose _ts is earlier and before every
// change whose _ts is the same or later (a DefaultTTL change orders its
// expiries after the writes committed before it in the same second). A
// follower sees an expiry once the engine's clock reaches its instant
// (within feedPoll). The feed covers the changes made while retention was
// on, from now minus ChangeFeedRetention; it fails with an error wrapping
// ErrFeedRetention when retention is off, or when opts.Continuation is
// older than the retention.
//
// In LatestVersion mode each live item appears once, at its newest
// version, ordered by LSN; Op is ChangeReplace (the index does not keep
// what each version replaced: treat every change as an upsert) and
// PreviousLSN is 0. Followers see an item again each time it changes.
//
// A malformed continuation, or another container's, fails with an error
// wrapping ErrInvalidFeedOptions that names what is wrong; a
// deleted container's feed ends with ErrNotFound. Each read costs time
// linear in what the container holds (all its stored versions, for
// AllVersionsAndDeletes), and a follower reads again when something
// changes.
func (c *Container) ChangeFeed(ctx context.Context, opts ChangeFeedOptions) iter.Seq2[Change, error] {
	return func(yield func(Change, error) bool) {
		if opts.Mode > AllVersionsAndDeletes {
			yield(Change{}, fmt.Errorf("ebb: change feed of container %q: %w: unknown mode %d", c.id, ErrInvalidFeedOptions, opts.Mode))
			return
		}
		var after *feedlog.Key
		if opts.Continuation != "" {
			k, err := feedlog.ParseToken(opts.Continuation, c.num)
			if err != nil {
				yield(Change{}, fmt.Errorf("ebb: change feed of container %q: %w: %w", c.id, ErrInvalidFeedOptions, err))
				return
			}
			after = &k
		}
		for {
			if err := ctx.Err(); err != nil {
				yield(Change{}, err)
				return
			}
			wake := c.feed.waiter() // before reading: no change can slip between
			var p feedPage
			var err error
			if opts.Mode == LatestVersion {
				p, err = c.latestPass(after)
			} else {
				p, err = c.allVersionsPass(ctx, after)
			}
			if err != nil {
				yield(Change{}, fmt.Errorf("ebb: change feed of container %q: %w", c.id, err))
				return
			}
			stop := false
			for i := range p.keys {
				ch, ok, err := p.load(i)
				if err != nil {
					err = fmt.Errorf("ebb: change feed of container %q: %w", c.id, err)
				}
				if !ok && err == nil {
					continue
				}
				if !yield(ch, err) || err != nil {
					stop = true
					break
				}
				after = &p.keys[i]
			}
			if p.release != nil {
				p.release()
			}
			if stop {
				return
			}
			if !opts.Follow {
				return
			}
			if err := c.feedWait(ctx, wake, p.nextDue); err != nil {
				yield(Change{}, err)
				return
			}
		}
	}
}

// feedPage is what one read of the feed found: the keys of the changes
// after the continuation, in order; load(i), which reads change i (ok false:
// skip it, it is gone); release, if set, to call when done; and the
// instant of the next expiry to come (policy.Never: none), when a follower
// must read again.
type feedPage struct {
	keys    []feedlog.Key
	load    func(i int) (ch Change, ok bool, err error)
	release func()
	nextDue int64
}

// feedPoll is how often a follower looks at the clock for an expiry that
// has come: a moved clock sends no signal (an injected one least of all).
const feedPoll = 20 * time.Millisecond

// feedGather is how long a follower woken by a change waits for more before
// it reads.
const feedGather = 2 * time.Millisecond

// feedWait waits until a change may have happened: a signal on wake (a
// write applied, the container changed or deleted), or the clock reaching
// due. It returns ctx's error when ctx ends first.
func (c *Container) feedWait(ctx context.Context, wake <-chan struct{}, due int64) error {
	t := time.NewTicker(feedPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
			// Let a burst of writes gather: each read costs time linear in
			// what the container holds.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(feedGather):
			}
			return nil
		case <-c.db.quit:
			return nil // the next read answers ErrClosed
		case <-t.C:
			if due != policy.Never && c.db.clock.now() >= due {
				return nil
			}
		}
	}
}

// feedState is a container's change-feed bookkeeping.
type feedState struct {
	mu sync.Mutex
	ch chan struct{} // closed by notify; nil while nobody waits

	// marks are the DefaultTTL changes the feed may still report (guarded
	// by the container's lock): where in the journal each took effect.
	marks []dbfile.FeedMark
	// since is the first instant the feed covers when retention was turned
	// on after the container's creation, else 0 (guarded by the
	// container's lock).
	since int64

	// keep is what the background compactor last computed the feed needs
	// (feedNeeded), at keepAt; guarded by mu.
	keep   *feedKeep
	keepAt time.Time
}

// setRetention notes a change of the retention from old to r at now (the
// container's lock is held): turned on, the feed covers the changes from
// the next second on, the versions before were not kept; turned off, it
// forgets.
func (f *feedState) setRetention(old, r time.Duration, now int64) {
	switch {
	case r <= 0:
		f.since = 0
	case old <= 0:
		f.since = now + 1
	}
}

// feedFloor is the first instant the feed covers at now: the retention's
// cutoff, or since when later.
func feedFloor(now int64, r time.Duration, since int64) int64 {
	return max(feedlog.Cutoff(now, r), since)
}

// waiter returns a channel that notify closes.
func (f *feedState) waiter() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ch == nil {
		f.ch = make(chan struct{})
	}
	return f.ch
}

// notify wakes the followers: something they may report has changed.
func (f *feedState) notify() {
	f.mu.Lock()
	if f.ch != nil {
		close(f.ch)
		f.ch = nil
	}
	f.mu.Unlock()
}

// markTTLChange records, if changed, that a DefaultTTL change took effect
// at instant at with seq the journal's next entry, and forgets the marks
// older than cutoff (math.MaxInt64: all of them). The container's lock is
// held for writing; the slice is replaced, never changed in place.
func (f *feedState) markTTLChange(changed bool, at int64, seq uint64, cutoff int64) {
	var out []dbfile.FeedMark
	for _, m := range f.marks {
		if m.At >= cutoff {
			out = append(out, m)
		}
	}
	if changed && at >= cutoff {
		out = append(out, dbfile.FeedMark{At: at, Seq: seq})
	}
	f.marks = out
}

// marksLocked is a copy of the marks for the MANIFEST; the container's lock
// is held.
func (f *feedState) marksLocked() []dbfile.FeedMark { return slices.Clone(f.marks) }
