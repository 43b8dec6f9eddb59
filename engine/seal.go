package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/ebbdb/ebb/index"
	"github.com/ebbdb/ebb/segment"
)

// Sealing turns the journal's records into segment files. When the
// memtables outgrow Options.SealThreshold, the commit loop freezes every
// container's memtable at one journal position; each frozen memtable is
// written, newest version per id, to a segment file of its container; the
// index is pointed at the new files; the manifest records them and moves the
// journal's replay start past that position; and the journal is truncated.
// A crash at any step leaves either the journal or the segment (or both)
// holding every record: files not named by the manifest are removed at open.

// sealLoop seals in the background when the commit loop asks, and persists
// the clock's high mark once a second when it has moved.
func (db *DB) sealLoop() {
	defer db.workers.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-db.quit:
			return
		case <-db.sealKick:
			db.sealMu.Lock()
			err := db.sealNowLocked(context.Background())
			db.sealMu.Unlock()
			if err != nil && !errors.Is(err, ErrClosed) {
				db.log.Error("ebb: seal failed; records stay in the journal", "err", err)
			}
			db.roomMade(err)
		case <-tick.C:
			if err := db.persistClock(); err != nil {
				db.log.Warn("ebb: persist clock", "err", err)
			}
		}
	}
}

// memLimit is how many bytes memtables may hold before writers wait for a
// seal: a few seals' worth, so that a slow disk slows writers down instead
// of letting memory grow without bound.
func (db *DB) memLimit() int64 { return 4 * db.opts.SealThreshold }

// waitForRoom blocks a writer while the memtables are over memLimit. If
// the last seal failed, it refuses the write instead of waiting forever.
func (db *DB) waitForRoom(ctx context.Context) error {
	for db.memBytes.Load() > db.memLimit() {
		db.roomMu.Lock()
		ch, serr := db.roomCh, db.sealErr
		db.roomMu.Unlock()
		if serr != nil {
			return fmt.Errorf("ebb: write refused: %d bytes wait to be sealed and sealing failed: %w", db.memBytes.Load(), serr)
		}
		select {
		case db.sealKick <- struct{}{}:
		default:
		}
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

// roomMade wakes writers waiting for room after a seal attempt.
func (db *DB) roomMade(err error) {
	db.roomMu.Lock()
	defer db.roomMu.Unlock()
	db.sealErr = err
	close(db.roomCh)
	db.roomCh = make(chan struct{})
}

// sealNowLocked seals every container's memtable; db.sealMu is held.
func (db *DB) sealNowLocked(ctx context.Context) error {
	// A memtable frozen by a seal that failed is sealed first.
	if err := db.sealFrozen(); err != nil {
		return err
	}
	var through uint64
	var frozen int
	err := db.control(ctx, func(int64) error {
		db.memGen++
		db.mu.RLock()
		defer db.mu.RUnlock()
		for _, c := range db.byNum {
			c.mu.Lock()
			if len(c.mem.recs) > 0 {
				c.frozen, c.mem = c.mem, newMemtable(db.memGen)
				frozen++
			}
			c.mu.Unlock()
		}
		through = db.jnl.NextSeq() - 1
		db.memBytes.Store(0)
		return nil
	})
	if err != nil || frozen == 0 {
		return err
	}
	if err := db.sealFrozen(); err != nil {
		return err
	}
	db.manMu.Lock()
	db.journalFrom = through + 1
	db.manMu.Unlock()
	if err := db.saveManifest(); err != nil {
		return err
	}
	if err := db.jnl.TruncateFront(through + 1); err != nil {
		return fmt.Errorf("ebb: truncate journal: %w", err)
	}
	return nil
}

// sealFrozen seals every frozen memtable.
func (db *DB) sealFrozen() error {
	db.mu.RLock()
	cs := make([]*Container, 0, len(db.byNum))
	for _, c := range db.byNum {
		cs = append(cs, c)
	}
	db.mu.RUnlock()
	for _, c := range cs {
		if err := c.sealFrozen(); err != nil {
			return err
		}
	}
	return nil
}

// sealFrozen writes the container's frozen memtable to a new segment file
// and points the index at it.
func (c *Container) sealFrozen() error {
	c.mu.RLock()
	fr, deleted := c.frozen, c.deleted
	c.mu.RUnlock()
	if fr == nil || deleted {
		return nil
	}
	db := c.db
	num := db.allocFile()
	path := db.segmentPath(num)
	w, err := segment.Create(path, db.writerOptions(c.num))
	if err != nil {
		return fmt.Errorf("ebb: seal container %q: %w", c.ID(), err)
	}
	keep := newestPerID(fr.recs)
	handles := make([]segment.Handle, len(fr.recs))
	for _, i := range keep {
		if handles[i], err = w.Add(&fr.recs[i]); err != nil {
			w.Abort()
			return fmt.Errorf("ebb: seal container %q: %w", c.ID(), err)
		}
	}
	if _, err := w.Finish(); err != nil {
		w.Abort()
		return fmt.Errorf("ebb: seal container %q: %w", c.ID(), err)
	}
	f, err := db.openSegment(num)
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		if f != nil {
			f.remove()
		}
		return fmt.Errorf("ebb: seal container %q: %w", c.ID(), err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deleted {
		f.remove()
		return nil
	}
	c.files[num] = f
	for _, i := range keep {
		r := &fr.recs[i]
		if r.Op == segment.OpPut {
			c.idx.Relocate(r.ID, r.Seq, index.Loc{File: num, Block: handles[i].Block, Off: handles[i].Off})
		}
	}
	c.frozen = nil
	return nil
}

// newestPerID returns the positions of the last record of each id in recs,
// in journal order: older versions within one memtable are never needed.
func newestPerID(recs []segment.Record) []int {
	seen := make(map[string]struct{}, len(recs))
	keep := make([]int, 0, len(recs))
	for i := len(recs) - 1; i >= 0; i-- {
		if _, ok := seen[recs[i].ID]; ok {
			continue
		}
		seen[recs[i].ID] = struct{}{}
		keep = append(keep, i)
	}
	for i, j := 0, len(keep)-1; i < j; i, j = i+1, j-1 {
		keep[i], keep[j] = keep[j], keep[i]
	}
	return keep
}

func (db *DB) writerOptions(container uint32) segment.WriterOptions {
	return segment.WriterOptions{BlockSize: db.opts.BlockSize, Compression: db.opts.Compression.segment(), Container: container}
}

// openSegment opens segment file num for reading.
func (db *DB) openSegment(num uint32) (*segFile, error) {
	r, err := segment.Open(db.segmentPath(num), segment.ReaderOptions{Cache: db.cache, FileNum: uint64(num)})
	if err != nil {
		return nil, err
	}
	return newSegFile(num, r), nil
}
