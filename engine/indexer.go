package engine

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ebbdb/ebb/engine/internal/docfmt"
	"github.com/ebbdb/ebb/engine/query"
	"github.com/ebbdb/ebb/index"
	"github.com/ebbdb/ebb/segment"
)

// Secondary indexes: each item's terms (path = scalar value pairs, see
// query.Terms) are kept in the container's index as roaring bitmaps of
// slots, so that queries find candidates without reading documents. The
// apply of a put queues its terms, which are set off the commit's path
// (indexer_queue.go):
//
//   - IndexingConsistent: a query sets every queued put's terms before it
//     reads the index, so it sees every write applied before it, its own
//     among them.
//   - IndexingLazy: a query reads the index as it is. It may miss an item
//     written since (it is found once indexed) and may be handed a stale
//     candidate, which the re-check of every fetched document drops: it
//     never returns an item that does not match.
//   - IndexingNone: no terms; queries scan.
//
// Terms are not stored on disk. The index loop rebuilds them from the
// documents in the background: whenever the indexing policy changes, and
// after Open once the container is first queried (Query or Explain), so
// that a store used for point reads and writes alone spends nothing on an
// index it does not use. Until a build is done queries scan (still exact,
// only slower) and Explain says so. Expired items are never indexed by a build: they are
// invisible, and their slots are dropped by every query anyway.

// indexConfig is the indexing policy in force, immutable once published:
// writers read it without a lock. Every policy change publishes a new one,
// so a step that computed terms under one knows, by pointer, whether it
// still holds.
type indexConfig struct {
	mode  IndexingMode
	paths *query.PathMatcher // nil for IndexingNone
	// terms is false when no document path can be indexed (IndexingNone,
	// or a policy such as ExcludedPaths ["/*"]): writes then queue and
	// set no terms at all.
	terms bool
	// idTerms: terms at /id are kept too, in a container with a partition
	// key, whose primary index is keyed by (key value, id) and so cannot
	// answer c.id = 'x' across partitions.
	idTerms bool
	// The system properties whose terms are kept.
	tsTerms, etagTerms bool
}

// indexed reports whether terms at term path p are kept.
func (cfg *indexConfig) indexed(p string) bool {
	return cfg.paths != nil && cfg.paths.Indexed(p)
}

// indexState is a container's secondary-index upkeep; guarded by c.mu
// except cfg, which is published atomically.
type indexState struct {
	cfg   atomic.Pointer[indexConfig]
	ready bool // every live item's terms are set, or queued: queries may use them
	// queue holds the applied puts whose terms are not set yet, oldest
	// first; popped counts the puts ever taken off its front, so that a
	// step that computed terms outside the lock knows which of its puts
	// another step set meanwhile. queued is len(queue), for writers to read
	// without the lock.
	queue  []queuedPut
	popped uint64
	queued atomic.Int64
	// A build walks the slots once, from cursor on, while building; items
	// it could not read wait in retry for the index loop's next tick.
	// Items written meanwhile are queued like any other.
	building bool
	cursor   uint32
	retry    []string
	// deferred says that the build due after Open waits for the
	// container's first query. It is changed under c.mu, and read without
	// it by every query.
	deferred atomic.Bool
	// inflight counts the build ids an index step has taken and not yet
	// set: the index lags while it is not zero.
	inflight int
}

// indexLaggingLocked reports whether writes or a build wait to reach the
// secondary index as a query would see it: queued puts count in lazy mode
// only, since a consistent query sets them first. c.mu is held.
func (c *Container) indexLaggingLocked() bool {
	lazyQueue := len(c.ix.queue) > 0 && !c.settleLocked()
	return !c.ix.ready || lazyQueue || c.ix.building || len(c.ix.retry) > 0 || c.ix.inflight > 0
}

// indexBuildBatch is the most items a build step indexes: the container
// lock is taken once per step, so foreground requests never wait long on
// index upkeep.
const indexBuildBatch = 512

// indexRetry is how often the index loop retries a build that could not
// read some items.
const indexRetry = time.Second

// setIndexingLocked installs the indexing policy of props and starts a rebuild
// of every live item's terms; c.mu is held for writing.
func (c *Container) setIndexingLocked(props ContainerProperties) {
	cfg := &indexConfig{mode: props.Indexing, idTerms: props.PartitionKeyPath != ""}
	if props.Indexing != IndexingNone {
		m, err := props.pathPolicy().Compile()
		if err != nil {
			// validate() compiled the same paths: not reachable with
			// properties that were accepted.
			m = nil
		}
		cfg.paths = m
		// IndexedUnder("") is false only when every path is excluded.
		cfg.terms = m != nil && m.IndexedUnder("")
		cfg.tsTerms, cfg.etagTerms = cfg.indexed("/_ts"), cfg.indexed("/_etag")
	}
	c.ix.cfg.Store(cfg)
	c.idx.ClearTerms()
	c.dropQueueLocked()
	c.ix.retry, c.ix.cursor = nil, 0
	c.ix.deferred.Store(false)
	c.ix.building = cfg.terms && c.idx.Len() > 0
	c.ix.ready = !c.ix.building
	if c.ix.building {
		c.db.kickIndex()
	}
}

// deferBuildLocked puts off the build setIndexingLocked started until the
// container's first query (startDeferredBuild); Open calls it. c.mu is held
// for writing.
func (c *Container) deferBuildLocked() {
	if c.ix.building {
		c.ix.building = false
		c.ix.deferred.Store(true)
	}
}

// startDeferredBuild starts the build Open put off, if it still waits:
// every query calls it.
func (c *Container) startDeferredBuild() {
	if !c.ix.deferred.Load() {
		return
	}
	c.mu.Lock()
	if c.ix.deferred.Load() {
		c.ix.building = true
		c.ix.deferred.Store(false)
		c.db.kickIndex()
	}
	c.mu.Unlock()
}

// termLists pools the TermLists writers fill and the index takes: a list
// goes back once the index has its terms.
var termLists = sync.Pool{New: func() any { return new(index.TermList) }}

// maxPooledTermList bounds the memory a pooled TermList keeps.
const maxPooledTermList = 64 << 10

func getTermList() *index.TermList { return termLists.Get().(*index.TermList) }

// putTermList gives l back to the pool; l must not be used after.
func putTermList(l *index.TermList) {
	if l == nil || l.Bytes() > maxPooledTermList {
		return
	}
	l.Reset()
	termLists.Put(l)
}

// bodyTerms adds the terms of a stored body to l, read straight from its
// JSON. A body that does not decode (not reachable: it was validated) has
// no terms, and queries re-check documents, so the cost is a missed
// candidate, never a wrong one.
func bodyTerms(body []byte, cfg *indexConfig, l *index.TermList) {
	if !cfg.terms {
		return
	}
	_ = cfg.paths.EachTermJSON(body, func(path, key []byte) {
		// The primary index answers for ids (query_id.go).
		if cfg.idTerms || string(path) != idPath {
			l.Add(path, key)
		}
	})
}

// tsPath is the term path of _ts.
var tsPath = []byte("/_ts")

// systemTerms adds the terms of the system properties a write sets to l.
func systemTerms(cfg *indexConfig, ts int64, seq uint64, l *index.TermList) {
	if cfg.tsTerms {
		var b [9]byte
		if k, ok := query.AppendNumberKey(b[:0], float64(ts)); ok {
			l.Add(tsPath, k)
		}
	}
	if cfg.etagTerms {
		if k, ok := query.Key(query.StringValue(docfmt.CachedETag(seq))); ok {
			l.AddString("/_etag", k)
		}
	}
}

// termsOf computes the terms of a stored body written at ts as version
// seq: its documents' and its system properties'.
func termsOf(cfg *indexConfig, body []byte, ts int64, seq uint64) *index.TermList {
	l := getTermList()
	bodyTerms(body, cfg, l)
	systemTerms(cfg, ts, seq, l)
	return l
}

// indexStep does one step of index upkeep for c: queued puts first, then
// the running build, then (with retry, at the loop's tick) the items a
// build could not read. It reports whether work is left now.
func (c *Container) indexStep(retry bool) (more bool) {
	if set, more := c.setQueuedTerms(termStep); set > 0 || more {
		return true
	}
	c.mu.Lock()
	if c.deleted {
		c.mu.Unlock()
		return false
	}
	cfg := c.ix.cfg.Load()
	var build []string
	switch {
	case c.ix.building:
		var slots []index.Slot
		var done bool
		slots, c.ix.cursor, done = c.idx.LiveFrom(c.ix.cursor, indexBuildBatch, c.db.clock.now())
		c.ix.building = !done
		for i := range slots {
			build = append(build, slots[i].ID)
		}
	case retry:
		build, c.ix.retry = c.ix.retry, nil
	}
	c.ix.inflight += len(build)
	c.mu.Unlock()

	type update struct {
		id    string
		seq   uint64
		terms *index.TermList
	}
	var ups []update
	var rec segment.Record
	var failed []string
	var failure error
	for _, id := range build {
		if err := c.fetch(id, c.db.clock.now(), &rec); err != nil {
			if !isNotFound(err) {
				// Unreadable now (an I/O error, damage): the build must not
				// finish without it, or the index would miss a live item.
				failed, failure = append(failed, id), err
			}
			continue // gone or expired: nothing to index
		}
		ups = append(ups, update{id, rec.Seq, termsOf(cfg, rec.Body, rec.TS, rec.Seq)})
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() {
		for _, u := range ups {
			putTermList(u.terms)
		}
	}()
	c.ix.inflight -= len(build)
	if c.deleted || c.ix.cfg.Load() != cfg {
		return !c.deleted // the policy changed meanwhile: the new build starts over
	}
	for _, u := range ups {
		if seq, ok := c.idx.TermsSeq(u.id); ok && seq >= u.seq {
			continue // a newer write already set its terms
		}
		c.idx.SetTermList(u.id, u.seq, u.terms)
	}
	if len(failed) > 0 {
		// Retried at the index loop's next tick; queries scan meanwhile,
		// and meet the error themselves if the item is still unreadable.
		c.ix.retry = append(c.ix.retry, failed...)
		c.db.log.Warn("ebb: index build could not read items; will retry", "container", c.id, "items", len(failed), "err", failure)
	}
	if !c.ix.building && !c.ix.deferred.Load() && len(c.ix.retry) == 0 {
		c.ix.ready = true
	}
	return len(c.ix.queue) > 0 || c.ix.building
}

// indexUsableLocked reports whether queries may use the secondary index, and
// why not; c.mu is held.
func (c *Container) indexUsableLocked() (bool, string) {
	cfg := c.ix.cfg.Load()
	switch {
	case cfg == nil || cfg.mode == IndexingNone:
		return false, "indexing mode none"
	case c.ix.deferred.Load():
		return false, "index not built since Open: this query starts its build"
	case c.ix.building:
		return false, "index building"
	case !c.ix.ready:
		return false, "index building: " + strconv.Itoa(len(c.ix.retry)) + " unreadable items to retry"
	}
	return true, ""
}

// indexLoop does the index upkeep of every container: queued puts and
// builds, a batch per container in turn, until none is left.
func (db *DB) indexLoop() {
	defer db.workers.Done()
	retry := time.NewTicker(indexRetry)
	defer retry.Stop()
	for {
		tick := false
		select {
		case <-db.quit:
			return
		case <-db.indexKick:
		case <-retry.C: // builds that met unreadable items
			tick = true
		}
		for more := true; more; tick = false {
			more = false
			for _, c := range db.containerList() {
				select {
				case <-db.quit:
					return
				default:
				}
				db.indexHold.Lock()
				if c.indexStep(tick) {
					more = true
				}
				db.indexHold.Unlock()
			}
		}
	}
}

// kickIndex wakes the index loop.
func (db *DB) kickIndex() {
	select {
	case db.indexKick <- struct{}{}:
	default:
	}
}

// sameIndexing reports whether two properties index the same way.
func sameIndexing(a, b ContainerProperties) bool {
	return a.Indexing == b.Indexing && slices.Equal(a.IncludedPaths, b.IncludedPaths) && slices.Equal(a.ExcludedPaths, b.ExcludedPaths)
}

// pathPolicy is the include/exclude part of the indexing policy.
func (p ContainerProperties) pathPolicy() query.PathPolicy {
	return query.PathPolicy{Included: p.IncludedPaths, Excluded: p.ExcludedPaths}
}

// validatePaths checks the include/exclude paths of the indexing policy.
func (p ContainerProperties) validatePaths() error {
	if _, err := p.pathPolicy().Compile(); err != nil {
		return fmt.Errorf("%w: container %q: indexing policy: %w", ErrInvalidProperties, p.ID, err)
	}
	return nil
}
