package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/ebbdb/ebb/compactor"
	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/journal"
	"github.com/ebbdb/ebb/engine/vfs"
	"github.com/ebbdb/ebb/index"
	"github.com/ebbdb/ebb/segment"
)

// Sealing turns the journal's records into segment files. When the
// memtables outgrow Options.SealThreshold, the commit leader freezes every
// container's memtable at one journal position; each frozen memtable is
// written, newest version per id, to a segment file of its container; the
// index is pointed at the new files; the manifest records them and moves the
// journal's replay start past that position; and the journal is truncated.
// A crash at any step leaves either the journal or the segment (or both)
// holding every record: files not named by the manifest are removed at open.

// sealLoop seals in the background when the apply loop asks (the
// memtables outgrew SealThreshold), and persists the clock's high mark once
// a second when it has moved (a failed write of the CLOCK file is retried at
// the next tick). After a failed seal it
// retries on its own, waiting longer after each failure (sealRetryMin
// doubling up to sealRetryMax), and ignores the apply loop's requests
// meanwhile, so that a failing disk is not hammered by every commit group.
func (db *DB) sealLoop() {
	defer db.workers.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	kick := db.sealKick
	var retry <-chan time.Time
	var backoff time.Duration
	for {
		select {
		case <-db.quit:
			return
		case <-kick:
		case <-retry:
		case <-tick.C:
			if err := db.persistClock(); err != nil {
				db.log.Warn("ebb: persist clock; will retry", "err", err)
			}
			continue
		}
		db.sealMu.Lock()
		err := db.sealNowLocked(context.Background())
		db.sealMu.Unlock()
		db.roomMade(err)
		kick, retry = db.sealKick, nil
		switch {
		case err == nil:
			backoff = 0
		case errors.Is(err, ErrClosed) || errors.Is(err, ErrReadOnly):
		default:
			backoff = min(max(2*backoff, sealRetryMin), sealRetryMax)
			db.log.Error("ebb: seal failed; records stay in the journal and memtables, will retry", "in", backoff, "err", err)
			kick, retry = nil, time.After(backoff)
		}
	}
}

// The wait before sealing again after a failed seal.
const (
	sealRetryMin = 10 * time.Millisecond
	sealRetryMax = 2 * time.Second
)

// memLimit is how many bytes memtables may hold before writers wait for a
// seal: a few seals' worth, so that a slow disk slows writers down instead
// of letting memory grow without bound.
func (db *DB) memLimit() int64 { return 4 * db.opts.SealThreshold }

// waitForRoom blocks a writer while the memtables are over memLimit. If
// the last seal failed, it refuses the write instead of waiting forever.
func (db *DB) waitForRoom(ctx context.Context) error {
	for db.memBytes.Load() > db.memLimit() {
		db.room.Lock()
		ch, serr := db.room.ch, db.room.sealErr
		db.room.Unlock()
		if serr != nil {
			return fmt.Errorf("ebb: write refused: %d bytes wait to be sealed and sealing failed: %w", db.memBytes.Load(), serr)
		}
		db.kickSeal()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-db.quit:
			return ErrClosed
		}
	}
	return nil
}

// kickSeal asks the sealer for a seal, unless one is already asked for.
func (db *DB) kickSeal() {
	select {
	case db.sealKick <- struct{}{}:
	default:
	}
}

// roomMade wakes writers waiting for room after a seal attempt.
func (db *DB) roomMade(err error) {
	db.room.Lock()
	defer db.room.Unlock()
	db.room.sealErr = err
	close(db.room.ch)
	db.room.ch = make(chan struct{})
}

// sealNowLocked seals every container's memtable; db.sealMu is held.
func (db *DB) sealNowLocked(ctx context.Context) error {
	if err := db.writable(); err != nil {
		return err
	}
	// A memtable frozen by a seal that failed is sealed first.
	sealed, err := db.sealFrozen(nil)
	if err != nil {
		return err
	}
	var through uint64
	var frozen int
	err = db.control(ctx, func(int64) error {
		db.memGen++
		db.mu.RLock()
		defer db.mu.RUnlock()
		for _, c := range db.mu.byNum {
			c.mu.Lock()
			if len(c.mem.recs) > 0 {
				c.frozen, c.mem = c.mem, newMemtable(db.memGen, len(c.mem.recs))
				frozen++
			}
			c.mu.Unlock()
		}
		if frozen > 0 {
			db.cycleJournal()
		}
		through = db.nextSeq() - 1
		db.memBytes.Store(0)
		return nil
	})
	if err != nil || frozen == 0 {
		return err
	}
	if sealed, err = db.sealFrozen(sealed); err != nil {
		return err
	}
	// The manifest is about to say that the journal reaches past through.
	if err := db.journalDurable(); err != nil {
		return err
	}
	db.man.Lock()
	db.man.journalFrom = through + 1
	db.man.Unlock()
	// One edit names the files of every container sealed and moves the
	// replay start past through, at a cost that grows with the containers
	// written to, not with all there are.
	db.mu.RLock()
	err = db.logEditFromLocked(sealed, nil, through+1)
	db.mu.RUnlock()
	if err != nil {
		return err
	}
	db.compactManifest()
	if err := db.jnl.TruncateFront(through + 1); err != nil {
		return fmt.Errorf("ebb: truncate journal: %w", err)
	}
	return nil
}

// cycleJournal starts a new journal file for the entries that follow a
// seal, so that the seal's TruncateFront removes every file of sealed
// entries: the journal then keeps no sealed record on disk past a seal,
// instead of up to a whole file of them (JournalSegmentSize) that could
// hold items long expired. It runs in the commit queue, between groups. A
// file that cannot be created only delays the space (the next seal tries
// again); a journal failure makes the DB read-only, as a failed append
// does.
func (db *DB) cycleJournal() {
	err := db.jnl.Cycle()
	switch {
	case err == nil:
	case errors.Is(err, journal.ErrFailed):
		db.fail(err)
	default:
		db.log.Warn("ebb: could not start a new journal file after a seal; sealed entries stay on disk until the next seal", "err", err)
	}
}

// journalDurable makes the journal entry of every write applied so far
// durable. With Options.NoSync writes are acknowledged before their entries
// are written (commit_journal.go), let alone durable, so a seal or a
// compaction calls it before its manifest write relies on them: a seal
// moves the replay start past them (a power loss would otherwise leave a
// journal that ends before it), and a compaction deletes the older versions
// they supersede (a power loss would otherwise lose both the newer version
// and the older one, leaving a state that never was).
func (db *DB) journalDurable() error {
	if !db.opts.NoSync {
		return nil
	}
	db.drainJournal()
	if err := db.jnl.Sync(); err != nil {
		return fmt.Errorf("ebb: sync journal: %w", err)
	}
	return nil
}

// sealFrozen seals every frozen memtable, and returns sealed with the
// containers that had one added.
func (db *DB) sealFrozen(sealed []*Container) ([]*Container, error) {
	for _, c := range db.containerList() {
		did, err := c.sealFrozen()
		if err != nil {
			return sealed, err
		}
		if did && !slices.Contains(sealed, c) {
			sealed = append(sealed, c)
		}
	}
	return sealed, nil
}

// sealFrozen writes the container's frozen memtable to new segment files
// and points the index at them. Records are placed by when they will die
// (compactor.Place): tombstones, never-expiring items, and the rest ordered
// by expiry in files that each cover a narrow window, so that most files
// later die whole and are dropped without being read. It reports whether
// there was a frozen memtable to seal.
func (c *Container) sealFrozen() (bool, error) {
	// What the seal needs of the container is copied under the lock; the
	// frozen memtable is immutable, so the work over its records runs
	// without it (a writer waiting for the lock would otherwise hold up
	// every reader behind it for as long).
	c.mu.RLock()
	fr, deleted := c.frozen, c.deleted
	if fr == nil || deleted {
		c.mu.RUnlock()
		return false, nil
	}
	now := c.db.clock.now()
	history := slices.Clone(c.history)
	feed := c.props.ChangeFeedRetention > 0
	older := make(map[uint32]*segFile, len(c.files))
	for n, f := range c.files {
		older[n] = f
	}
	c.mu.RUnlock()

	// An item expired by now under this history stays expired whatever
	// the policy becomes: a DefaultTTL change marks every item expired by
	// its instant before it takes effect.
	var keep []int
	var placed []compactor.Placed
	var total int64
	newest, hides := newestPerID(fr.recs, fr.replaced)
	if feed {
		// The change feed's retention keeps every version; the compactor
		// drops them once the feed no longer needs them.
		newest = allRecords(len(fr.recs))
	}
	for _, i := range newest {
		r := &fr.recs[i]
		p := compactor.Placed{Expire: index.Never, Tombstone: r.Op == segment.OpDelete, Size: segment.RecordSize(r)}
		if r.Op == segment.OpPut {
			p.Expire = history.ExpiresAt(r.TS, r.TTL)
			if p.Expire <= now && !hides[i] && !feed {
				continue // expired already and hides nothing: never written
			}
		}
		keep = append(keep, i)
		placed = append(placed, p)
		total += int64(p.Size)
	}

	db := c.db
	var made []*segFile
	fail := func(err error) (bool, error) {
		for _, f := range made {
			f.remove()
		}
		return true, fmt.Errorf("ebb: seal container %q: %w", c.ID(), err)
	}
	handles := make([]index.Loc, len(fr.recs))
	for _, group := range compactor.Place(placed, max(minSealFileBytes, total/sealFilesPerSeal)) {
		f, err := c.writeSealFile(fr, keep, group, hides, handles, older)
		if err != nil {
			return fail(err)
		}
		for _, j := range group {
			f.expiresBy = max(f.expiresBy, placed[j].Expire)
		}
		made = append(made, f)
	}
	if err := vfs.SyncDir(db.fs, filepath.Join(db.dir, dbfile.SegmentDir)); err != nil {
		return fail(err)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deleted {
		for _, f := range made {
			f.remove()
		}
		return false, nil
	}
	for _, f := range made {
		c.files[f.num] = f
		c.stats.sealedBytes.Add(f.r.Stats().FileBytes)
	}
	for k, i := range keep {
		if k > 0 && k%relocateChunk == 0 {
			// Let readers and writers in: every record is readable from
			// the frozen memtable and from its new file alike.
			c.mu.Unlock()
			c.mu.Lock()
		}
		if r := &fr.recs[i]; r.Op == segment.OpPut {
			c.idx.Relocate(r.ID, r.Seq, handles[i])
		}
	}
	c.frozen = nil
	c.mu.Unlock()
	// Items that expired in the memtable and were not written are gone.
	c.advanceInSteps(now)
	c.purgeInSteps(map[uint32]bool{index.MemFile | fr.gen: true})
	c.mu.Lock() // for the deferred unlock
	return true, nil
}

// allRecords is 0, 1, ..., n-1.
func allRecords(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// Seal file sizing: a seal is cut into about sealFilesPerSeal files by
// expiry, none smaller than minSealFileBytes of records.
const (
	sealFilesPerSeal = 8
	minSealFileBytes = 2 << 20
)

// writeSealFile writes the records keep[j] for j in group to a new segment
// file, noting each record's new place in locs, and returns it open, with
// its id filter and the older files it may hide.
func (c *Container) writeSealFile(fr *memtable, keep, group []int, hides map[int]bool, locs []index.Loc, older map[uint32]*segFile) (*segFile, error) {
	db := c.db
	num := db.allocFile()
	w, err := db.createSegment(num, c.num, false)
	if err != nil {
		return nil, err
	}
	for _, j := range group {
		i := keep[j]
		h, err := w.Add(&fr.recs[i])
		if err != nil {
			w.Abort()
			return nil, err
		}
		locs[i] = index.Loc{File: num, Block: h.Block, Off: h.Off}
	}
	if _, err := w.Finish(); err != nil {
		w.Abort()
		return nil, err
	}
	f, err := db.openSegment(num)
	if err != nil {
		db.fs.Remove(db.segmentPath(num))
		return nil, err
	}
	f.ids = compactor.NewIDFilter(len(group))
	for _, j := range group {
		i := keep[j]
		r := &fr.recs[i]
		f.ids.Add(r.ID)
		if hides[i] {
			// Only a record that superseded an indexed version can hide
			// one on disk; the older files' filters say which may hold it.
			f.noteHidden(r.ID, r.Seq, older)
		}
	}
	return f, nil
}

// newestPerID returns the positions of the last record of each id in recs,
// in journal order: older versions within one memtable are never needed.
// hides[i], for each kept i, says whether that record may hide an older
// version on disk: whether any version of its id in the memtable superseded
// an indexed one. (A delete then re-create in one memtable leaves only the
// new put, and it must keep hiding what the dropped tombstone hid.)
func newestPerID(recs []segment.Record, replaced []bool) (keep []int, hides map[int]bool) {
	last := make(map[string]int, len(recs))
	hides = make(map[int]bool)
	for i := range recs {
		id := recs[i].ID
		prev, seen := last[id]
		last[id] = i
		if replaced[i] || (seen && hides[prev]) {
			hides[i] = true
		}
		if seen {
			delete(hides, prev)
		}
	}
	keep = make([]int, 0, len(last))
	for _, i := range last {
		keep = append(keep, i)
	}
	slices.Sort(keep)
	return keep, hides
}

// writerOptions are the options of a new segment file of container; cold
// is true for files that compaction rewrites, false for files sealed from
// the memtable (see Options.Compression).
func (db *DB) writerOptions(container uint32, cold bool) segment.WriterOptions {
	return segment.WriterOptions{BlockSize: db.opts.BlockSize, Compression: db.opts.Compression.segment(cold), Container: container,
		SyncEvery: segmentSyncEvery}
}

// segmentSyncEvery is how many bytes a seal or a compaction writes to a
// segment file between two fsyncs of it: each flush stays short, so a
// writer's journal fsync never waits behind tens of MB of a new file.
const segmentSyncEvery = 1 << 20

// createSegment creates segment file num, of container, for writing; the
// Writer's Abort removes it. cold is as for writerOptions.
func (db *DB) createSegment(num, container uint32, cold bool) (*segment.Writer, error) {
	path := db.segmentPath(num)
	f, err := vfs.CreateExcl(db.fs, path)
	if err != nil {
		return nil, fmt.Errorf("segment: %w", err)
	}
	opts := db.writerOptions(container, cold)
	opts.Cache, opts.FileNum = db.cache, uint64(num) // read from memory until evicted
	return segment.NewWriter(f, path, opts, func() error { return db.fs.Remove(path) })
}

// openSegment opens segment file num for reading.
func (db *DB) openSegment(num uint32) (*segFile, error) {
	r, err := openSegmentFile(db.fs, db.segmentPath(num), segment.ReaderOptions{Cache: db.cache, FileNum: uint64(num)})
	if err != nil {
		return nil, err
	}
	return newSegFile(db.fs, num, r), nil
}
