package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/ebbdb/ebb/engine/internal/docfmt"
	"github.com/ebbdb/ebb/index"
	"github.com/ebbdb/ebb/segment"
)

// Group commit. Every mutation is a request in one queue (commit_queue.go).
// The writer that finds nobody leading the queue leads it: it takes
// whatever requests are waiting, validates each against the index as of
// that moment, writes all that passed as consecutive journal entries, and
// hands the group to the apply loop (commit_apply.go), which fsyncs the
// journal once for every group waiting, then applies them to the memtables
// and index and answers them. The two overlap: the next group is validated,
// encoded and written while the fsync of the previous one runs. Many
// concurrent writers thus share one fsync, a write is acknowledged only
// after its fsync, and readers never see a write that is not yet durable.
// A lone writer (nobody waiting behind it, no group in the apply loop)
// does all of it on its own goroutine, the fsync too: no hand-off between
// goroutines. With Options.NoSync every leader applies its own group, and
// the journal queue (commit_journal.go) writes it to the journal behind it.
//
// Two writes to the same item never share a group, and a write to an item
// whose previous write is written but not yet applied waits for it: each
// write is validated against the state the one before it left.

// recordOverhead is a generous bound on a record's encoding beyond its id
// and body, to size payload buffers once.
const recordOverhead = 48

// Limits of one commit group.
const (
	maxGroupRequests = 512
	maxGroupBytes    = 8 << 20
)

// commitReq is one request in the commit queue: item writes of one
// container (committed all or none), or a control function run in the loop
// between groups (container and policy changes, freezing memtables).
type commitReq struct {
	c       *Container
	ops     []op
	batch   bool // ops are a Batch: an op's failure is a *BatchError
	control func(now int64) error
	// wake gets one signal: reqFinished once the request is answered, or,
	// while it waits in the queue, reqLead when its writer is to lead.
	wake chan reqSignal

	// Filled by the loop.
	seq   uint64
	recs  []segment.Record
	sizes []int
	items []Item
	err   error
	// expired is the expiry instant of an item whose having expired
	// decided the outcome (a refused replace, delete or IfMatch), or 0.
	expired int64
}

// reqSignal is what a waiting writer is woken for.
type reqSignal uint8

const (
	reqFinished reqSignal = iota + 1
	reqLead
)

func newCommitReq(c *Container, ops []op, control func(now int64) error) *commitReq {
	return &commitReq{c: c, ops: ops, control: control, wake: make(chan reqSignal, 1)}
}

func (r *commitReq) finish(err error) {
	r.err = err
	r.wake <- reqFinished
}

// commit submits ops and waits for their outcome. For a batch, an op's
// failure is a *BatchError.
func (c *Container) commit(ctx context.Context, ops []op, batch bool) ([]Item, error) {
	if err := c.db.waitForRoom(ctx); err != nil {
		return nil, err
	}
	req := newCommitReq(c, ops, nil)
	req.batch = batch
	if err := c.db.submit(ctx, req); err != nil {
		return nil, err
	}
	if req.expired > 0 {
		c.db.observeExpiry(req.expired)
	}
	if req.err == nil {
		req.renderItems()
	}
	c.catchUpTerms()
	return req.items, req.err
}

// renderItems completes the items apply returned with their etags and
// bodies (but for the writes that asked for none, OmitBody). The writer does it once its request is answered, so that the
// commit leader and the container lock are not held up by copying bodies.
//
// The bodies of a batch share one allocation, each body a slice of it
// capped at its own length, so that appending to one cannot reach the next.
func (r *commitReq) renderItems() {
	size := 0
	for i := range r.items {
		if rec := &r.recs[i]; rec.Op == segment.OpPut && !r.ops[i].omitBody {
			size += docfmt.RenderedSize(rec.Body)
		}
	}
	var buf []byte
	if size > 0 {
		buf = make([]byte, 0, size)
	}
	for i := range r.items {
		if rec := &r.recs[i]; rec.Op == segment.OpPut {
			it := &r.items[i]
			it.ETag = docfmt.CachedETag(rec.Seq) // one string for the whole request: its records share rec.Seq
			if r.ops[i].omitBody {
				continue
			}
			start := len(buf)
			buf = docfmt.Render(buf, rec.Body, rec.TS, it.ETag)
			it.Body = buf[start:len(buf):len(buf)]
		}
	}
}

// control runs fn in the commit queue, serialized with all writes.
func (db *DB) control(ctx context.Context, fn func(now int64) error) error {
	req := newCommitReq(nil, nil, fn)
	if err := db.submit(ctx, req); err != nil {
		return err
	}
	return req.err
}

// pipeline is the commit leader's record of the groups it has handed to
// the apply loop.
type pipeline struct {
	// handed is the last seq of the last group handed to the apply loop.
	handed uint64
	// inflight maps each item written by a handed group to the group's last
	// seq; an entry is stale once the apply loop has applied that seq.
	inflight map[itemKey]uint64
	// plain and payloads are scratch kept from group to group, so that a
	// steady stream of writes encodes without allocating: plain holds one
	// request's records while it is prepared, payloads the group's journal
	// payloads back to back until the journal has copied them.
	plain    []byte
	payloads []byte
}

// maxRetainedScratch bounds the scratch a pipeline keeps for the next group;
// a larger group's buffers are let go once it is written.
const maxRetainedScratch = 4 << 20

// itemKey names one item of one container.
type itemKey struct {
	c  *Container
	id string
}

// maxInflight bounds the leader's inflight map before it drops the
// entries of groups already applied.
const maxInflight = 1 << 14

// runGroup writes a prefix of reqs to the journal, hands it to the apply
// loop, and returns the rest, still pending.
func (db *DB) runGroup(p *pipeline, reqs []*commitReq) []*commitReq {
	if f := db.failure.Load(); f != nil {
		for _, r := range reqs {
			r.finish(db.writable())
		}
		return nil
	}
	applied := db.appliedThrough()
	if applied >= p.handed {
		clear(p.inflight)
	} else if len(p.inflight) > maxInflight {
		maps.DeleteFunc(p.inflight, func(_ itemKey, seq uint64) bool { return seq <= applied })
	}
	if reqs[0].control != nil {
		// A control sees, and may change, everything: it runs once every
		// write before it is applied, and before any after it is written.
		db.waitApplied(p.handed)
		db.drainJournal()
		r := reqs[0]
		r.finish(r.control(db.clock.now()))
		return reqs[1:]
	}
	now := db.clock.now()
	next := db.nextSeq()
	touched := make(map[itemKey]struct{}, len(reqs))
	var group []*commitReq
	var payloads [][]byte
	p.payloads = p.payloads[:0]
	var blockedBy uint64 // the unapplied group the first request waits for
	bytes := 0
	limit := maxGroupBytes
	if db.jq != nil {
		// With NoSync no fsync is shared, so a group need be no larger
		// than the journal queue; groups of 8 MiB of plain records
		// outgrew the scratch kept (maxRetainedScratch) and regrew it from
		// nothing each time.
		limit = journalQueueBytes
	}
	rest := reqs[len(reqs):]
outer:
	for i, r := range reqs {
		if r.control != nil || bytes >= limit {
			rest = reqs[i:]
			break
		}
		for _, o := range r.ops {
			k := itemKey{r.c, o.id}
			if _, dup := touched[k]; dup {
				rest = reqs[i:]
				break outer
			}
			if seq, ok := p.inflight[k]; ok && seq > applied {
				if len(group) == 0 {
					blockedBy = seq
				}
				rest = reqs[i:]
				break outer
			}
		}
		// A payload keeps its place when p.payloads grows: the old array
		// stays valid, and the journal copies every payload before the
		// next group reuses the space.
		start := len(p.payloads)
		var err error
		if db.jq != nil {
			// The journal queue compresses the records on its own
			// goroutine, off the writers' path.
			p.payloads, err = r.c.prepare(r, now, next, p.payloads)
		} else if p.plain, err = r.c.prepare(r, now, next, p.plain[:0]); err == nil {
			p.payloads = segment.AppendPayload(p.payloads, p.plain)
		}
		if err != nil {
			p.payloads = p.payloads[:start]
			r.finish(err)
			continue
		}
		payload := p.payloads[start:len(p.payloads):len(p.payloads)]
		for _, o := range r.ops {
			touched[itemKey{r.c, o.id}] = struct{}{}
		}
		group = append(group, r)
		payloads = append(payloads, payload)
		bytes += len(payload)
		next++
	}
	if len(group) == 0 {
		if blockedBy > 0 {
			db.waitApplied(blockedBy)
		}
		return rest
	}
	first, err := db.writeJournal(payloads)
	if cap(p.plain) > maxRetainedScratch {
		p.plain = nil
	}
	if cap(p.payloads) > maxRetainedScratch {
		p.payloads = nil
	}
	if err == nil && first != group[0].seq {
		err = fmt.Errorf("ebb: journal assigned seq %d, expected %d", first, group[0].seq)
	}
	if err != nil {
		// Nothing of the group was applied: none of it is visible, and
		// none of it is acknowledged. What reached the journal is unknown,
		// so no later write may follow it (see ErrReadOnly).
		db.fail(err)
		err = fmt.Errorf("ebb: %d writes not committed: %w: %w", len(group), ErrReadOnly, err)
		for _, r := range group {
			r.finish(err)
		}
		return rest
	}
	last := first + uint64(len(group)) - 1
	for k := range touched {
		p.inflight[k] = last
	}
	prev := p.handed
	p.handed = last
	g := &commitGroup{reqs: group, last: last}
	if db.opts.NoSync || (len(rest) == 0 && applied >= prev && db.queueEmpty()) {
		// No fsync to overlap with (NoSync), or nothing to overlap it
		// with: no group is in the apply loop and no writer waits for the
		// next. Applying here saves the writers two hand-offs between
		// goroutines; a writer that comes meanwhile waits for this group
		// as it would for the apply loop.
		db.takeGroups(g)
		db.applyGroups([]*commitGroup{g})
		return rest
	}
	db.written <- g
	return rest
}

// nextSeq returns the seq the next write will get.
func (db *DB) nextSeq() uint64 {
	if db.jq != nil {
		return db.jq.nextSeq()
	}
	return db.jnl.NextSeq()
}

// drainJournal waits until every write applied so far is in the journal:
// with NoSync, until the journal queue has written it (commit_journal.go).
func (db *DB) drainJournal() {
	if db.jq != nil {
		db.jq.drain()
	}
}

// writeJournal writes a group's payloads to the journal, or with NoSync
// queues them for it (commit_journal.go), and returns the first one's seq.
// With NoSync the payloads are the plain records, which the queue
// compresses; otherwise they are stored payloads (segment.AppendPayload).
func (db *DB) writeJournal(payloads [][]byte) (uint64, error) {
	if db.jq != nil {
		return db.jq.push(payloads), nil
	}
	return db.jnl.Write(payloads...)
}

// prepare validates r's ops against the index at now and appends their
// records, encoded with sequence seq, to plain, which it returns. Nothing is
// changed.
func (c *Container) prepare(r *commitReq, now int64, seq uint64, plain []byte) ([]byte, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.deleted {
		return plain, c.notFound()
	}
	r.seq = seq
	r.recs = r.recs[:0]
	r.sizes = r.sizes[:0]
	size := 0
	for i := range r.ops {
		size += len(r.ops[i].body) + len(r.ops[i].id) + recordOverhead
	}
	plain = slices.Grow(plain, size)
	for i, o := range r.ops {
		if err := c.checkLocked(o, now); err != nil {
			if !errors.Is(err, ErrConflict) {
				r.expired = max(r.expired, c.expiredAtLocked(o.id, now))
			}
			if r.batch {
				return plain, &BatchError{Index: i, Err: err}
			}
			return plain, err
		}
		rec := segment.Record{Op: segment.OpPut, Container: c.num, Seq: seq, TS: now, TTL: o.ttl, ID: o.id, Body: o.body}
		if o.kind == opDelete {
			rec.Op, rec.TTL, rec.Body = segment.OpDelete, 0, nil
		}
		n := len(plain)
		plain = segment.AppendRecord(plain, &rec)
		r.recs = append(r.recs, rec)
		r.sizes = append(r.sizes, len(plain)-n)
	}
	return plain, nil
}

// checkLocked applies the preconditions of one op; c.mu is held.
func (c *Container) checkLocked(o op, now int64) error {
	s, live := c.idx.Lookup(o.id, now)
	switch {
	case o.kind == opCreate && live:
		return fmt.Errorf("%w: item %s already exists in container %q", ErrConflict, showItem(o.id), c.id)
	case (o.kind == opReplace || o.kind == opDelete) && !live:
		return fmt.Errorf("%w: item %s in container %q", ErrNotFound, showItem(o.id), c.id)
	case o.ifMatch != "" && !live:
		return fmt.Errorf("%w: item %s in container %q does not exist, so etag %s cannot match", ErrPreconditionFailed, showItem(o.id), c.id, o.ifMatch)
	case o.ifMatch != "" && docfmt.CachedETag(s.Seq) != o.ifMatch:
		return fmt.Errorf("%w: item %s in container %q has etag %s, not %s", ErrPreconditionFailed, showItem(o.id), c.id, docfmt.CachedETag(s.Seq), o.ifMatch)
	}
	return nil
}

// apply makes r's journaled records visible.
func (c *Container) apply(r *commitReq) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deleted {
		return
	}
	defer c.feed.notify()
	r.items = make([]Item, len(r.recs))
	for i := range r.recs {
		rec := &r.recs[i]
		c.applyRecordLocked(*rec, r.sizes[i])
		if rec.Op == segment.OpPut {
			c.queuePutLocked(rec)
			// ETag and Body are added by renderItems, outside the lock.
			id, pk := splitItemKey(rec.ID)
			r.items[i] = Item{ID: id, PartitionKey: pk, TS: rec.TS, ExpiresAt: itemExpiry(c.history.ExpiresAt(rec.TS, rec.TTL))}
		}
	}
}

// applyRecordLocked adds one journaled record to the memtable and index;
// c.mu is held for writing. Recovery replays the journal through it too.
func (c *Container) applyRecordLocked(rec segment.Record, size int) {
	c.db.memBytes.Add(int64(size))
	if rec.Op == segment.OpDelete {
		existed := c.idx.Delete(rec.ID)
		c.mem.add(rec, size, existed)
		return
	}
	loc := c.mem.nextLoc()
	expire, replaced := c.idx.Put(index.Slot{ID: rec.ID, Loc: loc, Seq: rec.Seq, TS: rec.TS, TTL: rec.TTL, Size: uint32(size)})
	c.mem.add(rec, size, replaced)
	c.noteExpiryLocked(expire)
}
