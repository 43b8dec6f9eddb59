package engine

import (
	"github.com/ebbdb/ebb/index"
	"github.com/ebbdb/ebb/segment"
)

// The term queue. Setting a document's terms in the secondary index costs
// about as much CPU as the rest of its write, and none of it need hold up
// the write's commit. So the apply only queues each put (queuedPut), and
// terms are computed and set off the commit's path, in steps
// (setQueuedTerms), by whichever goroutine comes first:
//
//   - the index loop, kicked when the queue fills from empty, on a core the
//     committing writer is not using while it waits for its fsync;
//   - a query in consistent mode, before it reads the index (lockForQuery):
//     the index then holds the terms of every write applied before the
//     query, as if the apply had set them;
//   - a writer that finds more than maxQueuedPuts waiting once its commit is
//     done, so that the queue (and the bodies it holds) stays bounded when
//     the index loop falls behind.
//
// A step computes terms outside the container lock and sets them under it.
// Index.SetTermList sets terms only for an item's newest version, so terms
// set late, or twice, or for an item deleted meanwhile, are harmless.

// queuedPut is an applied put whose terms are not set yet.
type queuedPut struct {
	id   string
	seq  uint64
	ts   int64
	body []byte // stored form
}

const (
	// termStep is the most puts a step sets. The container lock is held
	// while they are set, about 8 µs a 1 KiB document with every path
	// indexed, and a write's apply waits for it: of steps of 16 to 128,
	// 32 let writes through fastest.
	termStep = 32
	// maxQueuedPuts is the backlog past which writers set terms
	// themselves. A query in consistent mode may have to set that many
	// before it runs: about 8 ms of CPU for 1 KiB documents.
	maxQueuedPuts = 512
)

// settleTries is how many times a consistent query sets queued terms
// outside the lock before it takes the write lock to set the rest. It is
// a variable so that tests can send every such query down the second path.
var settleTries = 2

// queuePutLocked queues rec's terms, if the policy keeps any and the
// index is not waiting for its first query since Open (the build that
// query starts indexes rec with every other live item); c.mu is held for
// writing.
func (c *Container) queuePutLocked(rec *segment.Record) {
	if cfg := c.ix.cfg.Load(); cfg == nil || !cfg.terms || c.ix.deferred.Load() {
		return
	}
	c.ix.queue = append(c.ix.queue, queuedPut{id: rec.ID, seq: rec.Seq, ts: rec.TS, body: rec.Body})
	c.ix.queued.Store(int64(len(c.ix.queue)))
	if len(c.ix.queue) == 1 {
		// The loop finds the rest: it steps while puts are queued.
		c.db.kickIndex()
	}
}

// dropQueueLocked forgets every queued put, for a policy change whose
// build will index them anew; c.mu is held for writing.
func (c *Container) dropQueueLocked() {
	c.ix.popped += uint64(len(c.ix.queue))
	c.ix.queue = nil
	c.ix.queued.Store(0)
}

// setQueuedTerms sets the terms of up to limit queued puts, the oldest
// first, and reports how many it took off the queue (fewer than it
// computed if another step set some of them meanwhile) and whether puts
// remain queued.
func (c *Container) setQueuedTerms(limit int) (set int, more bool) {
	c.mu.Lock()
	if c.deleted || len(c.ix.queue) == 0 {
		c.mu.Unlock()
		return 0, false
	}
	cfg := c.ix.cfg.Load()
	// Puts are only ever taken off the front and appended at the back, so
	// this stretch of the array stays as it is while the lock is let go.
	puts := c.ix.queue[:min(limit, len(c.ix.queue))]
	from := c.ix.popped
	c.mu.Unlock()

	lists := make([]*index.TermList, len(puts))
	for i, p := range puts {
		lists[i] = termsOf(cfg, p.body, p.ts, p.seq)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() {
		for _, l := range lists {
			putTermList(l)
		}
	}()
	if c.deleted || c.ix.cfg.Load() != cfg {
		// The policy changed meanwhile: its build indexes these puts.
		return 0, !c.deleted && len(c.ix.queue) > 0
	}
	// The first done of puts were taken off by another step meanwhile.
	done := int(min(c.ix.popped-from, uint64(len(puts))))
	for i := done; i < len(puts); i++ {
		c.idx.SetTermList(puts[i].id, puts[i].seq, lists[i])
	}
	set = len(puts) - done
	c.popLocked(set)
	return set, len(c.ix.queue) > 0
}

// setQueuedTermsLocked sets the terms of every queued put under the lock
// already held for writing: a query's last resort when writes keep
// queueing puts faster than it sets them outside the lock.
func (c *Container) setQueuedTermsLocked() {
	cfg := c.ix.cfg.Load()
	for _, p := range c.ix.queue {
		l := termsOf(cfg, p.body, p.ts, p.seq)
		c.idx.SetTermList(p.id, p.seq, l)
		putTermList(l)
	}
	c.popLocked(len(c.ix.queue))
}

// popLocked takes n puts off the front of the queue; c.mu is held for
// writing. Popped entries are not cleared, since a step may be reading
// them outside the lock; the array goes once the queue empties or grows
// into a new one.
func (c *Container) popLocked(n int) {
	c.ix.queue = c.ix.queue[n:]
	c.ix.popped += uint64(n)
	if len(c.ix.queue) == 0 {
		c.ix.queue = nil
	}
	c.ix.queued.Store(int64(len(c.ix.queue)))
}

// catchUpTerms is a writer's share once its commit is done: when more than
// maxQueuedPuts wait, it sets terms until the queue is back under half of
// that.
func (c *Container) catchUpTerms() {
	if c.ix.queued.Load() <= maxQueuedPuts {
		return
	}
	for c.ix.queued.Load() > maxQueuedPuts/2 {
		if _, more := c.setQueuedTerms(termStep); !more {
			return
		}
	}
}

// settleLocked reports whether a query must set queued terms before it
// reads the secondary index: in consistent mode it must see every write
// applied before it. A lazy index is allowed to lag. c.mu is held.
func (c *Container) settleLocked() bool {
	cfg := c.ix.cfg.Load()
	return len(c.ix.queue) > 0 && cfg != nil && cfg.mode == IndexingConsistent
}

// lockForQuery takes c.mu for a query that reads the secondary index, once
// every put applied so far has its terms set (settleLocked). It sets the
// queued terms itself, outside the lock; if writes keep queueing more
// meanwhile, it sets the rest under the write lock and keeps that for the
// query. It reports which it holds, for unlockForQuery.
func (c *Container) lockForQuery() (exclusive bool) {
	for range settleTries {
		c.mu.RLock()
		if !c.settleLocked() {
			return false
		}
		c.mu.RUnlock()
		for n := int(c.ix.queued.Load()); n > 0; {
			set, more := c.setQueuedTerms(min(n, termStep))
			if !more {
				break
			}
			n -= max(set, 1)
		}
	}
	c.mu.Lock()
	if c.settleLocked() {
		c.setQueuedTermsLocked()
	}
	return true
}

// unlockForQuery releases what lockForQuery took.
func (c *Container) unlockForQuery(exclusive bool) {
	if exclusive {
		c.mu.Unlock()
	} else {
		c.mu.RUnlock()
	}
}
