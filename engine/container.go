package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/internal/docfmt"
	"github.com/ebbdb/ebb/index"
	"github.com/ebbdb/ebb/policy"
	"github.com/ebbdb/ebb/segment"
)

// Container is a handle to one container of items. It is safe for
// concurrent use. After DeleteContainer every call answers ErrNotFound.
type Container struct {
	db  *DB
	num uint32 // never reused, so records of a deleted container stay dead
	id  string // props.ID, which never changes: readable without the lock
	// kp is the partition key path, which never changes either; nil for a
	// container without one, whose item keys are plain ids.
	kp keyPath

	mu      sync.RWMutex // guards everything below
	props   ContainerProperties
	history policy.History
	idx     *index.Index
	mem     *memtable // active: takes new writes
	frozen  *memtable // being sealed, or nil
	files   map[uint32]*segFile
	deleted bool

	// nextDue is idx.NextDue() as of the last change, so that readers can
	// tell without the write lock whether expiries are waiting to be marked.
	nextDue atomic.Int64
	// markedUpTo bounds from above the expiry instants of the items marked
	// expired so far: an answer that leaves marked items out relies on the
	// clock having reached it (see DB.observeExpiry).
	markedUpTo atomic.Int64

	ix indexState // secondary-index upkeep, see indexer.go

	feed feedState // change feed: followers' wake-ups, DefaultTTL change marks (feed.go)

	stats counters
}

// counters accumulate what sealing and compaction did, for Metrics.
type counters struct {
	sealedBytes    atomic.Int64 // segment bytes written by seals
	compactRead    atomic.Int64 // record bytes compaction read
	compactWritten atomic.Int64 // segment bytes compaction wrote
	filesDropped   atomic.Int64 // files deleted whole, unread
	bytesDropped   atomic.Int64 // their bytes
	filesRewritten atomic.Int64 // files replaced by a rewrite
}

func newContainer(db *DB, num uint32, props ContainerProperties, h policy.History) *Container {
	if n := len(h); n > 0 && h[n-1].At <= db.clock.highest() {
		h = pruneHistory(h, feedCutoff(db.clock.highest(), props.ChangeFeedRetention)) // a long history written before pruning existed
	}
	c := &Container{
		db:      db,
		num:     num,
		id:      props.ID,
		kp:      mustKeyPath(props),
		props:   props,
		history: h,
		mem:     newMemtable(db.memGen, 0),
		files:   make(map[uint32]*segFile),
	}
	c.idx = c.newIndex()
	c.nextDue.Store(index.Never)
	c.setIndexingLocked(props)
	return c
}

// ID is the container's id. Like Properties, it describes the handle and
// answers after Close too.
func (c *Container) ID() string { return c.id }

// Properties returns the container's current properties (after Close, the
// last ones it had).
func (c *Container) Properties() ContainerProperties {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.props.clone()
}

// SetProperties changes the container's DefaultTTL and indexing mode; the
// id must stay the same. A new DefaultTTL applies at once and retroactively:
// items whose _ts plus the new TTL has passed expire now. Removing it turns
// TTL off, keeping items' own ttl values for when it is turned on again.
// Items that expired stay expired whatever the change (expiry is final).
func (c *Container) SetProperties(ctx context.Context, props ContainerProperties) error {
	if err := props.validate(); err != nil {
		return err
	}
	props = props.clone()
	defer c.db.compactManifest()
	return c.db.control(ctx, func(now int64) error {
		c.advanceInSteps(now) // a storm of expiries is marked a step at a time
		c.mu.Lock()
		if c.deleted {
			c.mu.Unlock()
			return c.notFound()
		}
		if props.ID != c.id {
			c.mu.Unlock()
			return fmt.Errorf("%w: container %q: SetProperties cannot change the id to %q", ErrInvalidProperties, c.id, props.ID)
		}
		if props.PartitionKeyPath != c.props.PartitionKeyPath {
			c.mu.Unlock()
			return fmt.Errorf("%w: container %q: SetProperties cannot change the partition key path from %q to %q", ErrInvalidProperties, c.id, c.props.PartitionKeyPath, props.PartitionKeyPath)
		}
		old, oldHistory, oldMarks, oldSince := c.props, c.history, c.feed.marks, c.feed.since
		ttlChanged := !sameTTL(old.DefaultTTL, props.DefaultTTL)
		if ttlChanged {
			c.advanceLocked(now) // what expired under the old policy stays expired
			// Pruning keeps the history (and so every expiry check and
			// the MANIFEST) a few entries long however many changes
			// came before. It answers differently only about instants
			// before now, and what expired by now is marked already.
			c.history = pruneHistory(c.history.With(now, props.DefaultTTL), feedCutoff(now, props.ChangeFeedRetention))
			// The expiry buckets follow the history at once, before the
			// manifest write lets go of the lock: a seal meanwhile leaves
			// out what the new history expires, and finds it filed, so
			// that its marking and purge forget the slot with the record.
			c.refileOnly()
		}
		c.feed.markTTLChange(ttlChanged, now, c.db.nextSeq(), feedCutoff(now, props.ChangeFeedRetention))
		c.feed.setRetention(old.ChangeFeedRetention, props.ChangeFeedRetention, now)
		c.props = props
		c.mu.Unlock()
		if testHookPolicyUnwritten != nil {
			testHookPolicyUnwritten(c)
		}
		// The manifest is written before the new policy's expiries are
		// marked; a failed write puts the old policy back. (Reads in
		// between already apply the new one.)
		c.db.mu.RLock()
		err := c.db.logEditLocked([]*Container{c}, nil)
		c.db.mu.RUnlock()
		if err != nil {
			c.mu.Lock()
			c.props, c.history, c.feed.marks, c.feed.since = old, oldHistory, oldMarks, oldSince
			if ttlChanged {
				c.refileOnly()
			}
			c.mu.Unlock()
			return err
		}
		defer c.feed.notify()
		c.mu.Lock()
		if ttlChanged {
			c.advanceLocked(now) // what the new policy expires at once
		}
		if !sameIndexing(old, props) {
			c.setIndexingLocked(props)
		}
		c.mu.Unlock()
		return nil
	})
}

// testHookPolicyUnwritten, when set by a test, runs in SetProperties
// between the new policy's taking effect in memory and the manifest write,
// without any lock held.
var testHookPolicyUnwritten func(c *Container)

func sameTTL(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// Read returns the item id, or ErrNotFound when it does not exist or has
// expired. On a container with a partition key path it fails with
// ErrInvalidPartitionKey: use Container.Partition(key).Read.
func (c *Container) Read(ctx context.Context, id string) (Item, error) {
	if c.kp != nil {
		return Item{}, c.needKey("Read")
	}
	return c.readID(ctx, id, id)
}

// ReadInto is Read for callers that read often: it renders the item's body
// into buf's storage (from buf[:0], grown when too small) instead of a new
// allocation, and Item.Body is that slice, with buf's capacity. Pass the
// last Item.Body back as buf and a read loop allocates nothing per read for
// bodies, which keeps the garbage collector, and the latency it adds to
// reads, out of it. The body is valid until the caller hands the same
// storage to another ReadInto; on an error buf is untouched and Body is
// nil. On a container with a partition key path it fails as Read does: use
// Container.Partition(key).ReadInto.
func (c *Container) ReadInto(ctx context.Context, id string, buf []byte) (Item, error) {
	if c.kp != nil {
		return Item{}, c.needKey("ReadInto")
	}
	return c.readIDInto(ctx, id, id, buf)
}

// readID is Read of the item whose id is id and whose item key is key.
func (c *Container) readID(ctx context.Context, id, key string) (Item, error) {
	return c.readIDInto(ctx, id, key, nil)
}

// readIDInto is readID rendering the body into buf's storage (nil: a new
// allocation of its own size), as ReadInto.
func (c *Container) readIDInto(ctx context.Context, id, key string, buf []byte) (Item, error) {
	if err := ctx.Err(); err != nil {
		return Item{}, err
	}
	if err := validateID(id); err != nil {
		return Item{}, fmt.Errorf("%w: %w", ErrInvalidDocument, err)
	}
	return c.readInto(key, c.db.clock.now(), buf)
}

func (c *Container) read(id string, now int64) (Item, error) { return c.readInto(id, now, nil) }

// readInto reads item key id at now, rendering its body into buf's storage;
// a nil buf gets a body of its own size.
func (c *Container) readInto(id string, now int64, buf []byte) (Item, error) {
	s := readScratches.Get().(*readScratch)
	defer s.release()
	if buf != nil {
		// Rendered straight from where the record lies, the cached block
		// or the memtable, into buf: one copy.
		var it Item
		_, _, err := c.fetchView(id, noSlotHint, now, &s.rec, func(rec *segment.Record, expires int64) {
			it, buf = appendItem(buf[:0], rec, expires)
		})
		if err != nil {
			return Item{}, err
		}
		it.Body = buf // all of buf's storage, its capacity kept for the next call
		return it, nil
	}
	// Read copies the stored body out first and renders it into an
	// allocation of its exact size outside the block cache's lock.
	s.body = s.body[:0]
	expires, err := c.fetchHinted(id, noSlotHint, now, &s.rec, &s.body)
	if err != nil {
		return Item{}, err
	}
	return makeItem(&s.rec, expires), nil
}

// readScratch is what a point read works in: the record it decodes, which
// the read path hands to callbacks the compiler cannot see through, and so
// would put on the heap at every read, and the buffer Read copies a stored
// body into before it renders it.
type readScratch struct {
	rec  segment.Record
	body []byte
}

var readScratches = sync.Pool{New: func() any { return new(readScratch) }}

// release returns s to readScratches holding nothing of the read, unless a
// large body grew its buffer.
func (s *readScratch) release() {
	s.rec = segment.Record{}
	if cap(s.body) <= 64<<10 {
		readScratches.Put(s)
	}
}

// fetch loads the newest record of item id into rec, if the item is live
// at now; otherwise it fails with ErrNotFound. Reads, scans and queries all
// come through here, so each checks expiry at the moment it reads.
func (c *Container) fetch(id string, now int64, rec *segment.Record) error {
	_, err := c.fetchAt(id, now, rec)
	return err
}

// fetchAt is fetch that also returns the item's expiry instant as the
// policy in force when it was read sets it (policy.Never: none).
func (c *Container) fetchAt(id string, now int64, rec *segment.Record) (expires int64, err error) {
	return c.fetchHinted(id, noSlotHint, now, rec, nil)
}

// noSlotHint is the slot hint of a read that knows none.
const noSlotHint = math.MaxUint32

// fetchHinted is fetchAt given the slot number id was collected at by a
// query (index.LookupHinted), or noSlotHint. With buf not nil, a body read
// from a segment file goes into *buf (reused: rec.Body is valid until the
// next use of buf), else into an allocation of its own.
func (c *Container) fetchHinted(id string, hint uint32, now int64, rec *segment.Record, buf *[]byte) (expires int64, err error) {
	expires, _, err = c.fetchView(id, hint, now, rec, func(rec *segment.Record, _ int64) {
		if buf != nil {
			start := len(*buf)
			*buf = append(*buf, rec.Body...)
			rec.Body = (*buf)[start:len(*buf):len(*buf)]
		} else {
			rec.Body = bytes.Clone(rec.Body)
		}
	})
	return expires, err
}

// fetchView is fetchHinted that hands the record, once found and checked,
// to fn in place (segment.Reader.View) with its expiry instant: a body read
// from a segment file is valid only until fn returns, unless fn copies it
// and points rec.Body at the copy; a memtable's body stays valid. fn must
// be quick, as it may run under a block cache shard's lock, and is not
// called when fetchView fails. It also reports whether it read the
// record's block from its file (not found in the block cache). now is the
// instant the item must be live at, or nowWhenNeeded.
func (c *Container) fetchView(id string, hint uint32, now int64, rec *segment.Record, fn func(rec *segment.Record, expires int64)) (expires int64, missed bool, err error) {
	if err := c.db.usable(); err != nil {
		return 0, false, err
	}
	c.mu.RLock()
	if c.deleted {
		c.mu.RUnlock()
		return 0, false, c.notFound()
	}
	lazy := now == nowWhenNeeded
	s, ok := c.idx.LookupHinted(id, hint, now) // lazy: only an item marked expired fails
	if ok {
		expires = c.idx.ExpiresAt(&s)
		if lazy && expires != policy.Never {
			now = c.db.clock.now()
			ok = !policy.Expired(expires, now)
		}
	}
	if !ok {
		if now == nowWhenNeeded {
			now = c.db.clock.now()
		}
		expired := c.expiredAtLocked(id, now)
		c.mu.RUnlock()
		c.db.observeExpiry(expired)
		return 0, false, &itemNotFound{id, c.id}
	}
	if r, ok := c.memRecordLocked(s.Loc); ok {
		*rec = *r
		c.mu.RUnlock()
		fn(rec, expires)
		return expires, false, nil
	}
	f := c.files[s.Loc.File]
	if f == nil {
		c.mu.RUnlock()
		return 0, false, fmt.Errorf("ebb: item %s: segment %d is not open: %w", showItem(id), s.Loc.File, ErrCorrupt)
	}
	f.acquire()
	c.mu.RUnlock()
	defer f.release()
	rec.ID = id // View keeps it when the record's id is the same: no copy
	h := segment.Handle{Block: s.Loc.Block, Off: s.Loc.Off}
	stale := false
	cached, err := f.r.View(h, rec, func(rec *segment.Record) {
		if stale = rec.ID != id || rec.Seq != s.Seq || rec.Op != segment.OpPut; !stale {
			fn(rec, expires)
		}
	})
	if err != nil {
		return 0, !cached, fmt.Errorf("ebb: read item %s: %w", showItem(id), err)
	}
	if stale {
		return 0, !cached, fmt.Errorf("ebb: item %s: segment %d block %d offset %d holds %s %q seq %d, index says seq %d: %w",
			showItem(id), s.Loc.File, s.Loc.Block, s.Loc.Off, rec.Op, rec.ID, rec.Seq, s.Seq, ErrCorrupt)
	}
	return expires, !cached, nil
}

// expiredAtLocked returns the expiry instant of item id if it is in the
// index but expired at now, else 0; c.mu is held.
func (c *Container) expiredAtLocked(id string, now int64) int64 {
	s, ok := c.idx.Get(id)
	if !ok {
		return 0
	}
	if e := c.idx.ExpiresAt(&s); e <= now {
		return e
	}
	return c.markedUpTo.Load() // marked expired under an earlier policy
}

// nowWhenNeeded, given to fetchView as now, has it read the clock only
// for an item that has an expiry instant, just after finding the item: an
// item that never expires is live whatever the time, and reading the clock
// costs more than the rest of the lookup.
const nowWhenNeeded = math.MinInt64

// memRecordLocked finds a record in the active or frozen memtable; c.mu is
// held.
func (c *Container) memRecordLocked(loc index.Loc) (*segment.Record, bool) {
	if !loc.InMem() {
		return nil, false
	}
	if r, ok := c.mem.at(loc); ok {
		return r, true
	}
	return c.frozen.at(loc)
}

// makeItem renders record r as an Item; expires is its expiry instant
// (policy.Never when it has none).
func makeItem(r *segment.Record, expires int64) Item {
	it, _ := appendItem(nil, r, expires)
	return it
}

// appendItem is makeItem rendering the body onto dst, which it returns
// grown; the Item's body is capped at its own length, so that appending to
// dst later cannot reach into it.
func appendItem(dst []byte, r *segment.Record, expires int64) (Item, []byte) {
	etag := docfmt.CachedETag(r.Seq)
	start := len(dst)
	dst = docfmt.Render(dst, r.Body, r.TS, etag)
	id, pk := splitItemKey(r.ID)
	return Item{ID: id, PartitionKey: pk, TS: r.TS, ETag: etag, ExpiresAt: itemExpiry(expires), Body: dst[start:len(dst):len(dst)]}, dst
}

// itemExpiry is Item.ExpiresAt for an expiry instant: 0 for policy.Never.
func itemExpiry(expires int64) int64 {
	if expires == policy.Never {
		return 0
	}
	return expires
}

// Items iterates over every live item in id order; in a container with a
// partition key path, in partition key order and then id order, the keys
// ordered as Cosmos DB orders values: None, null, false, true, numbers
// (ascending), strings (by their UTF-8 bytes). The set of items is taken
// when iteration starts; each item is read as it is yielded, so an item
// deleted or expired meanwhile is skipped and one written meanwhile is
// yielded in its newest version.
func (c *Container) Items(ctx context.Context) iter.Seq2[Item, error] {
	return c.items(ctx, scope{})
}

// items is Items over the items in scope sc (the zero scope: every item).
func (c *Container) items(ctx context.Context, sc scope) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		if err := c.db.usable(); err != nil {
			yield(Item{}, err)
			return
		}
		now := c.db.clock.now()
		c.advanceInSteps(now)
		// A partition's items come from the index of its key path.
		exclusive := false
		if sc.prefix == "" {
			c.mu.RLock()
		} else {
			exclusive = c.lockForQuery()
		}
		if c.deleted {
			c.unlockForQuery(exclusive)
			yield(Item{}, c.notFound())
			return
		}
		var snap []index.Slot
		if sc.prefix == "" {
			snap = c.idx.Live(now) // leaves out items expired by now, marked or not
		} else {
			snap = c.scopeSlotsLocked(sc, now)
		}
		c.unlockForQuery(exclusive)
		c.settleExpiries()
		for i := range snap {
			if err := ctx.Err(); err != nil {
				yield(Item{}, err)
				return
			}
			it, err := c.read(snap[i].ID, c.db.clock.now())
			if isNotFound(err) && !c.isDeleted() {
				continue
			}
			if !yield(it, err) || err != nil {
				return
			}
		}
	}
}

// Stats returns the container's statistics now. Expired items are left out
// at once, whether or not their records are still on disk. Once the DB is
// closed, or the container deleted, it returns the zero Stats.
func (c *Container) Stats() Stats {
	if c.db.usable() != nil {
		return Stats{}
	}
	now := c.db.clock.now()
	shared := c.db.sharedDiskBytes(c.num)
	c.advanceInSteps(now) // an expiry storm is marked a step at a time
	c.mu.Lock()
	if c.deleted {
		c.mu.Unlock()
		return Stats{}
	}
	c.advanceLocked(now)
	items, live := c.idx.Count()
	segs, _ := c.diskBytesLocked()
	st := Stats{Items: items, LiveBytes: live, DiskBytes: segs + shared, ExpiredPending: c.idx.ExpiredPending()}
	c.mu.Unlock()
	c.settleExpiries()
	return st
}

// diskBytesLocked is what the container holds on disk: its segment files'
// bytes, and its records waiting in the journal (the memtables); c.mu is held.
func (c *Container) diskBytesLocked() (segments, journal int64) {
	for _, f := range c.files {
		segments += f.r.Stats().FileBytes
	}
	for _, m := range []*memtable{c.mem, c.frozen} {
		if m != nil {
			journal += m.bytes
		}
	}
	return segments, journal
}

// advanceLocked marks the items that expired by now; c.mu is held for writing.
func (c *Container) advanceLocked(now int64) {
	if c.nextDue.Load() > now {
		return
	}
	c.noteMarked(c.idx.Advance(now), now)
	c.nextDue.Store(c.idx.NextDue())
}

// noteMarked raises markedUpTo to now when marking at now marked items.
func (c *Container) noteMarked(marked int, now int64) {
	if marked == 0 {
		return
	}
	for {
		m := c.markedUpTo.Load()
		if now <= m || c.markedUpTo.CompareAndSwap(m, now) {
			return
		}
	}
}

// settleExpiries makes the clock durable past every expiry an answer of
// this container may rely on; call it after advancing, before answering.
func (c *Container) settleExpiries() { c.db.observeExpiry(c.markedUpTo.Load()) }

// newIndex returns an empty index whose items expire by the container's
// policy history (read under c.mu, as every index call is).
func (c *Container) newIndex() *index.Index {
	return index.New(func(ts int64, ttl int32) int64 { return c.history.ExpiresAt(ts, ttl) })
}

// Step sizes for work that grows with the number of items that expire or
// are purged at once: the container's lock is released between steps, so
// an expiry storm never stalls readers and writers for long. Between two
// steps the goroutine also yields its processor (runtime.Gosched): a
// step loop never blocks, so without a yield the Go scheduler lets it run
// for up to 10 ms before a reader or writer woken meanwhile gets the
// processor, and on a machine with few cores that is a stall of its own.
const (
	advanceChunk = 1024
	purgeChunk   = 1024
)

// advanceInSteps marks the items expired by now, taking the lock for one
// step at a time. Afterwards advanceLocked has little or nothing left to do.
func (c *Container) advanceInSteps(now int64) {
	for done := false; !done; {
		c.mu.Lock()
		if c.nextDue.Load() > now {
			c.mu.Unlock()
			return
		}
		var marked int
		marked, done = c.idx.AdvanceN(now, advanceChunk)
		c.noteMarked(marked, now)
		c.nextDue.Store(c.idx.NextDue())
		c.mu.Unlock()
		if !done {
			runtime.Gosched() // see advanceChunk
		}
	}
}

// purgeInSteps forgets the expired items whose records were in the files
// gone, a step at a time.
func (c *Container) purgeInSteps(gone map[uint32]bool) {
	from := uint32(0)
	for done := false; !done; {
		c.mu.Lock()
		_, from, done = c.idx.PurgeExpiredN(func(file uint32) bool { return gone[file] }, purgeChunk, from)
		c.mu.Unlock()
		if !done {
			runtime.Gosched() // see advanceChunk
		}
	}
}

// refileOnly refiles every unexpired item by its expiry under the policy
// history, after a change of it, and marks none; c.mu is held for writing.
func (c *Container) refileOnly() {
	c.idx.Recompute()
	c.nextDue.Store(c.idx.NextDue())
}

// noteExpiryLocked lowers nextDue to an item's expiry just filed; c.mu is held.
func (c *Container) noteExpiryLocked(expire int64) {
	if expire < c.nextDue.Load() {
		c.nextDue.Store(expire)
	}
}

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

func (c *Container) isDeleted() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.deleted
}

func (c *Container) notFound() error {
	return fmt.Errorf("%w: container %q was deleted", ErrNotFound, c.id)
}

// metaLocked is the container's manifest entry; db.mu is held.
func (c *Container) metaLocked() dbfile.ContainerMeta {
	c.mu.RLock()
	defer c.mu.RUnlock()
	m := dbfile.ContainerMeta{Num: c.num, ID: c.id, Indexing: uint8(c.props.Indexing), History: dbfile.FromHistory(c.history),
		Included: c.props.IncludedPaths, Excluded: c.props.ExcludedPaths,
		FeedRetention: int64(c.props.ChangeFeedRetention), FeedMarks: c.feed.marksLocked(), FeedSince: c.feed.since,
		PartitionKey: c.props.PartitionKeyPath}
	for n, f := range c.files {
		m.Files = append(m.Files, n)
		for h := range f.hides {
			if c.files[h] == nil {
				continue // gone: it hides nothing any more
			}
			if m.Hides == nil {
				m.Hides = make(map[uint32][]uint32)
			}
			m.Hides[n] = append(m.Hides[n], h)
		}
	}
	slices.Sort(m.Files)
	for _, h := range m.Hides {
		slices.Sort(h)
	}
	return m
}

func (c *Container) memBytesRelease() {
	if c.mem != nil {
		c.db.memBytes.Add(-c.mem.bytes)
	}
}

func (c *Container) closeFiles() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n, f := range c.files {
		f.release()
		delete(c.files, n)
	}
}
