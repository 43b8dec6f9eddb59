package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/journal"
	"github.com/ebbdb/ebb/engine/query"
	"github.com/ebbdb/ebb/engine/vfs"
	"github.com/ebbdb/ebb/policy"
	"github.com/ebbdb/ebb/segment"
)

// DB is an open ebb database: a directory of containers. It is safe for
// concurrent use. Only one DB may have a directory open at a time.
//
// # Locks
//
// State guarded by a mutex sits in a struct with it (mu, man, commit,
// progress, room); the mutexes that guard no state but serialize an
// operation (closeMu, submitMu, sealMu, clockMu) say what they serialize,
// and state read without a lock is atomic. A goroutine that holds several
// locks takes them in this order, never the other way round:
//
//	closeMu → submitMu → commit
//	sealMu → the commit queue (a control runs in its leader) → mu → Container.mu
//	mu → man
//
// man is taken after mu or alone, never with a Container.mu to follow;
// commit, progress, room, clockMu and the journal queue's are leaves: no
// other lock is taken while one is held. A method named fooLocked requires
// its caller to hold exactly the locks its doc comment names, and takes
// none that comes before them in the order.
type DB struct {
	dir   string
	opts  Options
	fs    vfs.FS
	log   *slog.Logger
	lock  *dirLock
	clock *clock
	jnl   *journal.Journal
	// jq writes the journal for the commit leader with Options.NoSync
	// (commit_journal.go); nil without.
	jq    *journalQueue
	cache *segment.Cache
	// parsed holds the query texts parsed lately (parse).
	parsed *lru.Cache[string, *query.Query]

	// mu guards the set of containers. Taken for reading by every call
	// that looks a container up, for writing to create or delete one.
	mu struct {
		sync.RWMutex
		containers map[string]*Container
		byNum      map[uint32]*Container
	}

	// man guards the MANIFEST's state outside the containers, and
	// serializes MANIFEST writes.
	man struct {
		sync.Mutex
		log           manifestLog // the MANIFEST's edit log (manifest_log.go)
		nextFile      uint32
		nextContainer uint32
		journalFrom   uint64 // first journal seq not sealed into segments
	}

	// The clock's persistence (clock.go). clockMu serializes CLOCK file
	// writes; the marks are atomic, read without it.
	clockMu        sync.Mutex
	clockPersisted atomic.Int64 // highest clock durable in the CLOCK file or MANIFEST
	clockInFile    atomic.Int64 // the clock the CLOCK file holds
	// clockResetSeq: records up to this seq do not raise the clock's floor
	// at Open (see ResetClock).
	clockResetSeq atomic.Uint64

	segList segListing // what seg/ holds besides segment files, for the disk figures

	// commit guards the commit queue (commit_queue.go): requests wait in
	// queue for the writer that leads it (leading); idle is signalled when
	// the lead lapses.
	commit struct {
		sync.Mutex
		idle    sync.Cond
		queue   []*commitReq
		leading bool
	}
	// pipe belongs to the writer leading the commit queue and is handed on
	// with the lead; only the leader touches it, without a lock.
	pipe pipeline
	// removals holds segment files no MANIFEST names, for the removal
	// loop to unlink (remove.go).
	removals chan removal
	// The commit pipeline (commit.go, commit_apply.go): groups the commit
	// leader wrote wait in written for the apply loop.
	written chan *commitGroup
	// progress guards how far the apply loop got: taken is the last seq of
	// the groups it took from written, applied the last seq it applied;
	// cond signals both.
	progress struct {
		sync.Mutex
		cond    sync.Cond
		taken   uint64
		applied uint64
	}
	quit     chan struct{}
	workers  sync.WaitGroup
	warmed   chan struct{} // closed when warmCache ends
	closed   atomic.Bool
	closeMu  sync.Mutex            // serializes Close
	submitMu sync.RWMutex          // orders submits before Close's closed flag: see submit
	failure  atomic.Pointer[error] // set when a journal write failed
	memBytes atomic.Int64          // bytes in active memtables
	memGen   uint32                // changed only by controls, which the commit leader runs
	sealMu   sync.Mutex            // serializes seals and compactions
	sealKick chan struct{}
	// indexKick wakes the index loop (queued terms, index builds).
	indexKick chan struct{}
	// indexHold is held by the index loop while it works on a container;
	// tests hold it to keep the loop from setting terms.
	indexHold sync.Mutex

	// Backpressure: writers wait while memtables hold more than memLimit
	// bytes, until a seal makes room. room guards ch, closed and replaced
	// after every seal attempt, and sealErr, that attempt's outcome.
	room struct {
		sync.Mutex
		ch      chan struct{}
		sealErr error
	}
}

// Open opens the database in dir, creating it if it does not exist. A nil
// opts means the defaults. Open repairs a torn journal tail (keeping a copy
// of what it cut under dir/broken), rebuilds the index from segment indexes
// and the journal, and takes an exclusive lock on dir: a second Open of the
// same directory fails with ErrLocked until Close. dir must not be empty,
// and must not exist, be empty, or hold an ebb database: Open refuses with
// ErrNoDatabase, writing nothing, a directory holding files ebb did not
// create. Options with a field out of its range are refused with
// ErrInvalidOptions, naming every such field.
func Open(dir string, opts *Options) (*DB, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	if err := checkOpenDir(o.FS, dir); err != nil {
		return nil, err
	}
	if err := o.FS.MkdirAll(filepath.Join(dir, dbfile.SegmentDir), 0o755); err != nil {
		return nil, fmt.Errorf("ebb: create %s: %w", dir, err)
	}
	lock, err := lockDir(o.FS, dir)
	if err != nil {
		return nil, err
	}
	db := &DB{
		dir:       dir,
		opts:      o,
		fs:        o.FS,
		log:       o.Logger,
		lock:      lock,
		cache:     segment.NewCache(o.BlockCacheSize, o.BlockSize),
		parsed:    newParseCache(),
		removals:  make(chan removal, removeQueue),
		written:   make(chan *commitGroup, writtenQueue),
		quit:      make(chan struct{}),
		warmed:    make(chan struct{}),
		sealKick:  make(chan struct{}, 1),
		indexKick: make(chan struct{}, 1),
		memGen:    1,
	}
	db.mu.containers = make(map[string]*Container)
	db.mu.byNum = make(map[uint32]*Container)
	db.room.ch = make(chan struct{})
	if err := db.recover(); err != nil {
		if db.jnl != nil {
			db.jnl.Close()
		}
		db.closeFiles()
		db.cache.Close()
		lock.release()
		return nil, err
	}
	db.clock.checkBehind()
	for _, c := range db.mu.byNum {
		c.mu.Lock()
		c.setIndexingLocked(c.props)
		c.deferBuildLocked() // rebuilt in the background once first queried
		c.mu.Unlock()
	}
	db.progress.cond.L = &db.progress.Mutex
	db.commit.idle.L = &db.commit.Mutex
	db.pipe.inflight = make(map[itemKey]uint64)
	db.progress.applied = db.jnl.NextSeq() - 1
	db.progress.taken = db.progress.applied
	if o.NoSync {
		db.jq = newJournalQueue(db.jnl, db.fail)
	}
	db.workers.Add(6)
	go db.applyLoop()
	go db.removeLoop()
	go db.sealLoop()
	go db.compactLoop()
	go db.indexLoop()
	go db.warmCache()
	return db, nil
}

// Close stops background work, persists the highest time seen (so that a
// clock found behind on the next Open cannot bring an expired item back),
// closes the files and releases the directory. Calls after the first return
// nil. After Close every call that returns an error returns ErrClosed
// (iterators yield it once); Stats, Metrics and Containers, which return
// no error, return their zero value; Container.ID, Properties and NewBatch
// keep answering (they describe the handle or build a value). After a journal failure
// (ErrReadOnly) Close still releases everything, and returns the journal's
// error.
func (db *DB) Close() error {
	db.closeMu.Lock()
	defer db.closeMu.Unlock()
	if db.closed.Load() {
		return nil
	}
	db.submitMu.Lock()
	db.closed.Store(true)
	db.submitMu.Unlock()
	// Every request accepted before runs; then the apply loop, once it has
	// applied them, ends.
	db.waitQueueIdle()
	close(db.written)
	close(db.quit)
	db.workers.Wait()
	db.removeWaiting()
	if db.jq != nil {
		db.jq.close() // before the manifest and the journal's last fsync
	}
	var errs []error
	if db.failure.Load() == nil {
		errs = append(errs, db.saveManifest())
	}
	errs = append(errs, db.jnl.Close())
	db.closeFiles()
	db.cache.Close()
	db.man.Lock() // a MANIFEST compaction's last step is done or gives up
	db.man.Unlock()
	errs = append(errs, db.lock.release())
	return errors.Join(errs...)
}

func (db *DB) closeFiles() {
	for _, c := range db.mu.byNum {
		c.closeFiles()
	}
}

// usable returns ErrClosed when the DB cannot serve reads.
func (db *DB) usable() error {
	if db.closed.Load() {
		return ErrClosed
	}
	return nil
}

// writable returns ErrClosed when the DB is closed, and ErrReadOnly (with
// the journal's error) after a journal write failed.
func (db *DB) writable() error {
	if db.closed.Load() {
		return ErrClosed
	}
	if f := db.failure.Load(); f != nil {
		return fmt.Errorf("%w (after: %w)", ErrReadOnly, *f)
	}
	return nil
}

// fail makes the DB read-only after an I/O error that left the journal in
// an unknown state. Reopening recovers everything acknowledged (with
// NoSync, everything the journal queue wrote).
func (db *DB) fail(err error) {
	if db.failure.CompareAndSwap(nil, &err) {
		db.log.Error("ebb: journal write failed; writes are refused until the database is reopened", "err", err)
	}
}

// CreateContainer creates a container. It fails with ErrConflict when the
// id is in use and ErrInvalidProperties when props break a rule.
func (db *DB) CreateContainer(ctx context.Context, props ContainerProperties) (*Container, error) {
	if err := props.validate(); err != nil {
		return nil, err
	}
	props = props.clone()
	var c *Container
	err := db.control(ctx, func(now int64) error {
		db.mu.Lock()
		defer db.mu.Unlock()
		if _, ok := db.mu.containers[props.ID]; ok {
			return fmt.Errorf("%w: container %q already exists", ErrConflict, props.ID)
		}
		db.man.Lock()
		num := db.man.nextContainer
		db.man.nextContainer++
		db.man.Unlock()
		c = newContainer(db, num, props, policy.History{}.With(now, props.DefaultTTL))
		db.mu.containers[props.ID] = c
		db.mu.byNum[num] = c
		if err := db.logEditLocked([]*Container{c}, nil); err != nil {
			delete(db.mu.containers, props.ID)
			delete(db.mu.byNum, num)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	db.compactManifest()
	return c, nil
}

// Container returns the container id, or ErrNotFound.
func (db *DB) Container(id string) (*Container, error) {
	if err := db.usable(); err != nil {
		return nil, err
	}
	db.mu.RLock()
	c, ok := db.mu.containers[id]
	db.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: container %q", ErrNotFound, id)
	}
	return c, nil
}

// Containers returns the ids of all containers, sorted; nil after Close.
func (db *DB) Containers() []string {
	if db.usable() != nil {
		return nil
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	ids := make([]string, 0, len(db.mu.containers))
	for id := range db.mu.containers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// DeleteContainer deletes a container and all its items. Its files are
// removed at once; handles to it answer ErrNotFound from then on.
func (db *DB) DeleteContainer(ctx context.Context, id string) error {
	defer db.compactManifest()
	return db.control(ctx, func(now int64) error {
		db.mu.Lock()
		c, ok := db.mu.containers[id]
		if !ok {
			db.mu.Unlock()
			return fmt.Errorf("%w: container %q", ErrNotFound, id)
		}
		delete(db.mu.containers, id)
		delete(db.mu.byNum, c.num)
		err := db.logEditLocked(nil, []uint32{c.num})
		if err != nil {
			db.mu.containers[id] = c
			db.mu.byNum[c.num] = c
			db.mu.Unlock()
			return err
		}
		db.mu.Unlock()
		c.mu.Lock()
		c.deleted = true
		c.memBytesRelease()
		files := c.files
		c.files = map[uint32]*segFile{}
		c.idx = c.newIndex()
		c.mem, c.frozen = nil, nil
		c.mu.Unlock()
		c.feed.notify() // followers end with ErrNotFound
		for _, f := range files {
			db.removeLater(f)
		}
		return nil
	})
}

// containerList returns the open containers, in no order.
func (db *DB) containerList() []*Container {
	db.mu.RLock()
	defer db.mu.RUnlock()
	cs := make([]*Container, 0, len(db.mu.byNum))
	for _, c := range db.mu.byNum {
		cs = append(cs, c)
	}
	return cs
}

// saveManifest writes the manifest from the current state.
func (db *DB) saveManifest() error {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.saveManifestLocked()
}

// saveManifestLocked writes the manifest; db.mu is held (read or write).
func (db *DB) saveManifestLocked() error {
	db.man.Lock()
	defer db.man.Unlock()
	return db.rewriteManifestLocked()
}

// rewriteManifestLocked writes the whole manifest, a snapshot without
// edits; db.mu and db.man are held.
func (db *DB) rewriteManifestLocked() error {
	m := db.manifestLocked()
	b, err := dbfile.EncodeManifest(m)
	if err != nil {
		return fmt.Errorf("ebb: encode manifest: %w", err)
	}
	if err := vfs.WriteFileAtomic(db.fs, db.dir, dbfile.ManifestName, b); err != nil {
		// The rename may have happened without being durable: append
		// nothing to this file until a rewrite succeeds.
		db.man.log.rewrite = true
		return fmt.Errorf("ebb: write manifest: %w", err)
	}
	db.man.log.rewrote(int64(len(b)), m.NeededVersion())
	db.notePersistedClock(m.Clock)
	return nil
}

// manifestLocked is the manifest of the current state; db.mu and db.man
// are held.
func (db *DB) manifestLocked() *dbfile.Manifest {
	m := &dbfile.Manifest{
		NextFile:      db.man.nextFile,
		NextContainer: db.man.nextContainer,
		JournalFrom:   db.man.journalFrom,
		Clock:         db.clock.highest(),
	}
	nums := make([]uint32, 0, len(db.mu.byNum))
	for n := range db.mu.byNum {
		nums = append(nums, n)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	for _, n := range nums {
		m.Containers = append(m.Containers, db.mu.byNum[n].metaLocked())
	}
	return m
}

func (db *DB) segmentPath(num uint32) string {
	return filepath.Join(db.dir, dbfile.SegmentDir, dbfile.SegmentFileName(num))
}

// allocFile reserves a segment file number.
func (db *DB) allocFile() uint32 {
	db.man.Lock()
	defer db.man.Unlock()
	n := db.man.nextFile
	db.man.nextFile++
	return n
}
