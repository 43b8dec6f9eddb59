package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"

	"github.com/ebbdb/ebb/compactor"
	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/vfs"
	"github.com/ebbdb/ebb/index"
	"github.com/ebbdb/ebb/segment"
)

// maxCompactedFileBytes bounds one file written by compaction.
const maxCompactedFileBytes = 64 << 20

// relocateChunk bounds how many index updates one hold of the container's
// lock makes when compaction swaps files in, so readers and writers never
// wait long behind it.
const relocateChunk = 4096

// Compact runs the physical-deletion pass on the container now and returns
// when it is done: every expired, deleted and superseded record of the
// container is gone from disk. It first seals the journal, so that all
// records are in segment files. Files with no live record are deleted
// without being read; files whose every record is live are read through
// (a damaged one is reported, ErrCorrupt) and left as they are; the others
// are rewritten with their live records only. It reads at most
// Options.CompactionRate bytes a second. Readers and
// writers are not blocked while it runs, and what they see never changes
// because of it.
func (c *Container) Compact(ctx context.Context) error { return c.compact(ctx, true) }

// compact is Compact; forFeed false drops what the change feed's retention
// would keep too (ResetClock: no expired version may stay on disk).
func (c *Container) compact(ctx context.Context, forFeed bool) error {
	db := c.db
	if err := db.writable(); err != nil {
		return err
	}
	clean, err := c.compactDirty(ctx, forFeed)
	if err != nil {
		return err
	}
	// A clean file (every record a live, newest put) has nothing to remove
	// and is left as it is: rewriting it would only cost the foreground
	// CPU and I/O. It is still read through, as a rewrite would read it, so
	// that Compact reports damage in it; db.sealMu is not held meanwhile,
	// so seals and the background compactor go on.
	err = c.readThrough(ctx, clean, newBudget(db.opts.CompactionRate).wait)
	for _, f := range clean {
		f.release()
	}
	if err != nil {
		return err
	}
	db.waitRemovals() // the space is back when Compact returns
	return nil
}

// compactDirty is Compact's pass over the files that hold something dead:
// it seals the journal and rewrites them all in one group, keeping what
// the change feed's retention needs unless forFeed is false. It returns
// the clean files, which it leaves out, each with a reference to release.
func (c *Container) compactDirty(ctx context.Context, forFeed bool) (clean []*segFile, err error) {
	db := c.db
	db.sealMu.Lock()
	defer db.sealMu.Unlock()
	err = db.sealNowLocked(ctx)
	db.roomMade(err)
	if err != nil {
		return nil, fmt.Errorf("ebb: compact container %q: seal: %w", c.ID(), err)
	}
	var keep *feedKeep
	if forFeed {
		if keep, err = c.feedNeeded(ctx); err != nil {
			return nil, fmt.Errorf("ebb: compact container %q: change feed retention: %w", c.ID(), err)
		}
	}
	now := db.clock.now()
	c.advanceInSteps(now)
	c.mu.Lock()
	if c.deleted {
		c.mu.Unlock()
		return nil, c.notFound()
	}
	c.advanceLocked(now)
	var dirty []uint32
	for n, f := range c.files {
		// With the change feed's retention on, every file goes through the
		// rewrite, which keeps what the feed needs (feedKeep).
		if keep == nil && c.cleanLocked(f) {
			f.acquire()
			clean = append(clean, f)
		} else {
			dirty = append(dirty, n)
		}
	}
	c.mu.Unlock()
	// A clean file holds no older version of anything, so with every
	// other file in one rewrite no tombstone is needed and none is kept.
	// The rewrite reads at the background compactor's rate
	// (Options.CompactionRate), so that a Compact called while the store
	// serves requests does not crowd them out: it takes longer instead.
	if err := c.rewriteLocked(ctx, dirty, keep, newBudget(db.opts.CompactionRate).wait); err != nil {
		for _, f := range clean {
			f.release()
		}
		return nil, err
	}
	return clean, nil
}

// readThrough reads and checks every block and record of files
// (segment.Reader.VerifyEach, which reuses one buffer for every block, so
// that the pass makes no garbage for the collector to chase), paced by
// throttle.
func (c *Container) readThrough(ctx context.Context, files []*segFile, throttle func(context.Context, int) error) error {
	for _, f := range files {
		err := f.r.VerifyEach(func(ra *segment.RecordAt) error {
			return throttle(ctx, segment.RecordSize(&ra.Record))
		})
		if err != nil {
			return fmt.Errorf("ebb: compact container %q: read %s: %w", c.ID(), f.r.Path(), err)
		}
	}
	return nil
}

// dropFilesLocked deletes files that hold no live record, nothing the
// change feed needs (keep, nil without retention) and hide nothing,
// without reading them; db.sealMu is held.
func (c *Container) dropFilesLocked(nums []uint32, keep *feedKeep) error {
	if len(nums) == 0 {
		return nil
	}
	now := c.db.clock.now()
	c.advanceInSteps(now)
	c.mu.Lock()
	if c.deleted {
		c.mu.Unlock()
		return c.notFound()
	}
	c.advanceLocked(now)
	gone := make(map[uint32]bool, len(nums))
	var dropped []*segFile
	for _, n := range nums {
		f := c.files[n]
		// Re-checked under the lock: records only ever die, but be exact.
		if f == nil || c.idx.Usage(n).Records > 0 || keep.holds(n) || f.hidesAny(c.files) {
			continue
		}
		gone[n] = true
		dropped = append(dropped, f)
	}
	for n := range gone {
		delete(c.files, n)
	}
	c.mu.Unlock()
	if len(dropped) == 0 {
		return nil
	}
	err := c.db.journalDurable() // what made the records dead must outlive them
	if err == nil {
		err = c.db.saveContainer(c)
	}
	if err != nil {
		c.mu.Lock()
		for _, f := range dropped {
			c.files[f.num] = f // still on disk, and nothing was forgotten
		}
		c.mu.Unlock()
		return fmt.Errorf("ebb: drop files of container %q: %w", c.ID(), err)
	}
	c.purgeInSteps(gone)
	var bytes int64
	for _, f := range dropped {
		bytes += f.r.Stats().FileBytes
	}
	c.db.removeLater(dropped...)
	c.stats.filesDropped.Add(int64(len(dropped)))
	c.stats.bytesDropped.Add(bytes)
	c.db.log.Debug("ebb: dropped dead segment files unread", "container", c.ID(), "files", len(dropped), "bytes", bytes)
	return nil
}

// cleanLocked reports whether every record of f is the live, newest version
// of its item (no tombstone, nothing superseded or expired). Such a file
// has nothing for a compaction to remove, and holds no version older than
// a record of any other file: a newer version of one of its items would
// have superseded it. c.mu is held, expiries are marked up to now, and
// db.sealMu is held, so that no seal or compaction is moving records.
func (c *Container) cleanLocked(f *segFile) bool {
	st := f.r.Stats()
	return st.Records > 0 && st.Records == st.Puts && c.idx.Usage(f.num).Records == st.Records
}

// rewriteLocked replaces the files nums with new files holding only what is
// still needed: the live, newest version of each item, the versions the
// change feed needs (keep, nil without retention), and a tombstone for a
// dead record whose id may have an older version in a file outside nums.
// db.sealMu is held. throttle, if not nil, paces the reads.
func (c *Container) rewriteLocked(ctx context.Context, nums []uint32, keep *feedKeep, throttle func(context.Context, int) error) error {
	db := c.db
	now := db.clock.now()
	c.advanceInSteps(now)
	c.mu.Lock()
	if c.deleted {
		c.mu.Unlock()
		return c.notFound()
	}
	c.advanceLocked(now)
	inputs := make([]*segFile, 0, len(nums))
	inGroup := make(map[uint32]bool, len(nums))
	var srcs []*segment.Reader
	for _, n := range nums {
		if f := c.files[n]; f != nil {
			f.acquire()
			inputs = append(inputs, f)
			inGroup[n] = true
		}
	}
	// The files outside the group that may hold an older version of one of
	// its records. A clean file cannot (see cleanLocked), so without the
	// change feed's retention it is left out exactly, not by its id
	// filter, whose false positives would keep tombstones that hide
	// nothing.
	outside := make(map[uint32]*segFile, len(c.files))
	for n, f := range c.files {
		if !inGroup[n] && (keep != nil || !c.cleanLocked(f)) {
			outside[n] = f
		}
	}
	for _, f := range inputs {
		// A file with no live record that hides nothing outside the group
		// is dropped unread.
		if c.idx.Usage(f.num).Records > 0 || keep.holds(f.num) || f.hidesAny(outside) {
			srcs = append(srcs, f.r)
		}
	}
	c.mu.Unlock()
	defer func() {
		for _, f := range inputs {
			f.release()
		}
	}()
	if len(inputs) == 0 {
		return nil
	}

	decide := func(r *segment.Record) compactor.Decision {
		if keep.needs(r.ID, r.Seq) {
			return compactor.Keep // as it is: the change feed derives changes from it
		}
		c.mu.RLock()
		defer c.mu.RUnlock()
		if s, ok := c.idx.Get(r.ID); ok && s.Seq > r.Seq && r.Op == segment.OpPut {
			// A superseded put: the newer version hides it, and hides
			// whatever older versions it superseded itself. A superseded
			// tombstone is not dropped this freely: the newer version may
			// have been written while the id was absent, and then hides
			// nothing on disk, trusting this tombstone to do so.
			return compactor.Drop
		}
		if r.Op == segment.OpPut && c.idx.IsCurrent(r.ID, r.Seq, now) {
			return compactor.Keep
		}
		// Dead (deleted or expired) and possibly the newest version: it
		// must keep hiding any older version still on disk elsewhere.
		for _, g := range outside {
			if g.mayHoldOlder(r.ID, r.Seq) {
				return compactor.KeepTombstone
			}
		}
		return compactor.Drop
	}
	res, err := compactor.Rewrite(ctx, srcs, decide, compactor.Output{
		Create: func() (*segment.Writer, uint32, string, error) {
			num := db.allocFile()
			w, err := db.createSegment(num, c.num, true)
			return w, num, db.segmentPath(num), err
		},
		Remove:       db.fs.Remove,
		MaxFileBytes: maxCompactedFileBytes,
		Throttle:     throttle,
	})
	if err != nil {
		return fmt.Errorf("ebb: compact container %q: %w", c.ID(), err)
	}
	outputs, err := c.openOutputs(res, outside)
	if err != nil {
		return fmt.Errorf("ebb: compact container %q: %w", c.ID(), err)
	}

	c.mu.Lock()
	if c.deleted {
		c.mu.Unlock()
		for _, o := range outputs {
			o.remove()
		}
		return c.notFound()
	}
	// The new files are registered first: once a record is relocated, a
	// reader may be sent to its new file at any moment.
	for _, o := range outputs {
		c.files[o.num] = o
	}
	for i, m := range res.Moved {
		if i > 0 && i%relocateChunk == 0 {
			// Both the old and the new file are open and valid: a reader
			// may find either version's place until the swap is complete.
			c.mu.Unlock()
			runtime.Gosched() // see advanceChunk
			c.mu.Lock()
			if c.deleted {
				c.mu.Unlock()
				return c.notFound() // DeleteContainer removed every file
			}
		}
		if m.Op == segment.OpPut {
			c.idx.Relocate(m.ID, m.Seq, index.Loc{File: m.File, Block: m.Handle.Block, Off: m.Handle.Off})
		}
	}
	for n := range inGroup {
		delete(c.files, n)
	}
	c.mu.Unlock()

	// The manifest makes the swap durable; until it is written a crash
	// reopens the old files and discards the new ones as orphans. What made
	// the dropped records dead must be durable before they are gone.
	err = db.journalDurable()
	if err == nil {
		err = db.saveContainer(c)
	}
	if err != nil {
		for _, f := range inputs {
			f.release() // the container's reference; the next open removes them
		}
		return fmt.Errorf("ebb: compact container %q: %w", c.ID(), err)
	}
	c.db.removeLater(inputs...)
	c.purgeInSteps(inGroup)
	c.stats.filesRewritten.Add(int64(len(inputs)))
	c.stats.compactRead.Add(res.ReadBytes)
	c.stats.compactWritten.Add(res.Written)
	db.log.Debug("ebb: compacted", "container", c.ID(), "inputs", len(inputs), "read", len(srcs),
		"outputs", len(res.Files), "records", len(res.Moved), "tombstones", res.Tombstones,
		"readBytes", res.ReadBytes, "written", res.Written)
	return nil
}

// openOutputs opens the files a rewrite wrote, with their id filters and
// the outside files they may hide, and fsyncs the segment directory.
func (c *Container) openOutputs(res compactor.Result, outside map[uint32]*segFile) (map[uint32]*segFile, error) {
	db := c.db
	outputs := make(map[uint32]*segFile, len(res.Files))
	fail := func(err error) (map[uint32]*segFile, error) {
		for _, o := range outputs {
			o.remove()
		}
		return nil, err
	}
	for _, num := range res.Files {
		f, err := db.openSegment(num)
		if err != nil {
			return fail(fmt.Errorf("reopen output: %w", err))
		}
		f.ids = compactor.NewIDFilter(int(f.r.Stats().Records))
		outputs[num] = f
	}
	c.mu.RLock()
	for _, m := range res.Moved {
		o := outputs[m.File]
		o.ids.Add(m.ID)
		o.noteHidden(m.ID, m.Seq, outside)
	}
	c.mu.RUnlock()
	if err := vfs.SyncDir(db.fs, filepath.Join(db.dir, dbfile.SegmentDir)); err != nil {
		return fail(err)
	}
	return outputs, nil
}
