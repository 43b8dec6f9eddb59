package engine

import (
	"context"
	"fmt"

	"github.com/ebbdb/ebb/compactor"
	"github.com/ebbdb/ebb/index"
	"github.com/ebbdb/ebb/segment"
)

// maxCompactedFileBytes bounds one file written by compaction.
const maxCompactedFileBytes = 64 << 20

// Compact runs the physical-deletion pass on the container now and returns
// when it is done: every expired, deleted and superseded record of the
// container is gone from disk. It first seals the journal, so that all
// records are in segment files. Files with no live record are deleted
// without being read; the others are rewritten with their live records
// only. Readers and writers are not blocked while it runs, and what they see
// never changes because of it.
func (c *Container) Compact(ctx context.Context) error {
	db := c.db
	if err := db.usable(); err != nil {
		return err
	}
	db.sealMu.Lock()
	defer db.sealMu.Unlock()
	err := db.sealNowLocked(ctx)
	db.roomMade(err)
	if err != nil {
		return fmt.Errorf("ebb: compact container %q: seal: %w", c.ID(), err)
	}
	return c.compactAll(ctx)
}

// compactAll rewrites all of the container's segment files; db.sealMu is
// held, so no seal adds files meanwhile. Dropping every tombstone is safe
// because every older version a tombstone could hide is in these files and
// is dropped with it.
func (c *Container) compactAll(ctx context.Context) error {
	db := c.db
	now := db.clock.now()
	c.mu.Lock()
	if c.deleted {
		c.mu.Unlock()
		return c.notFound()
	}
	c.advanceLocked(now)
	inputs := make([]*segFile, 0, len(c.files))
	var srcs []*segment.Reader
	for _, f := range c.files {
		f.acquire()
		inputs = append(inputs, f)
		if c.idx.Usage(f.num).Records > 0 {
			srcs = append(srcs, f.r) // others are all dead: dropped unread
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

	keep := func(r *segment.Record) bool {
		if r.Op != segment.OpPut {
			return false
		}
		c.mu.RLock()
		defer c.mu.RUnlock()
		return c.idx.IsCurrent(r.ID, r.Seq, now)
	}
	res, err := compactor.Rewrite(ctx, srcs, keep, compactor.Output{
		Create: func() (*segment.Writer, uint32, string, error) {
			num := db.allocFile()
			path := db.segmentPath(num)
			w, err := segment.Create(path, db.writerOptions(c.num))
			return w, num, path, err
		},
		MaxFileBytes: maxCompactedFileBytes,
	})
	if err != nil {
		return fmt.Errorf("ebb: compact container %q: %w", c.ID(), err)
	}
	outputs := make(map[uint32]*segFile, len(res.Files))
	for _, num := range res.Files {
		f, err := db.openSegment(num)
		if err != nil {
			for _, o := range outputs {
				o.remove()
			}
			return fmt.Errorf("ebb: compact container %q: reopen output: %w", c.ID(), err)
		}
		outputs[num] = f
	}
	if err := syncDir(db.dir + "/" + segmentDir); err != nil {
		return fmt.Errorf("ebb: compact container %q: %w", c.ID(), err)
	}

	gone := make(map[uint32]bool, len(inputs))
	for _, f := range inputs {
		gone[f.num] = true
	}
	c.mu.Lock()
	if c.deleted {
		c.mu.Unlock()
		for _, o := range outputs {
			o.remove()
		}
		return c.notFound()
	}
	for _, m := range res.Moved {
		c.idx.Relocate(m.ID, m.Seq, index.Loc{File: m.File, Block: m.Handle.Block, Off: m.Handle.Off})
	}
	c.idx.PurgeExpired(func(file uint32) bool { return gone[file] })
	for num := range gone {
		delete(c.files, num)
	}
	for num, o := range outputs {
		c.files[num] = o
	}
	c.mu.Unlock()

	// The manifest makes the swap durable; until it is written a crash
	// reopens the old files and discards the new ones as orphans.
	if err := db.saveManifest(); err != nil {
		for _, f := range inputs {
			f.release() // the container's reference; the next open removes them
		}
		return fmt.Errorf("ebb: compact container %q: %w", c.ID(), err)
	}
	for _, f := range inputs {
		f.remove()
	}
	db.log.Debug("ebb: compacted", "container", c.ID(), "inputs", len(inputs), "read", len(srcs),
		"outputs", len(res.Files), "kept", len(res.Moved), "readBytes", res.ReadBytes, "written", res.Written)
	return nil
}
