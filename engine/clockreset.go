package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ebbdb/ebb/policy"
)

// ClockReset says what ResetClock did.
type ClockReset struct {
	// From is the database's clock before the reset, in unix seconds: its
	// floor advanced by nothing, as Open found it.
	From int64
	// To is its clock after the reset: the wall clock. It equals From when
	// the wall clock was not behind, and nothing was changed.
	To int64
}

// ResetClock brings the clock of the database in dir back to the wall clock
// (opts.Clock, default time.Now) when the wall clock is behind it: after a
// clock that was once far ahead (a fake clock, one bad NTP step) stamped
// writes and raised the floor that the engine's now never goes below. Left
// alone, such a database goes on from its floor at the real rate, ahead of
// the wall clock by as much as the bad clock was. The database must not be
// open (ErrLocked otherwise); dir must hold one (ErrNoDatabase otherwise).
//
// Every expiry stays final. ResetClock opens the database at its own clock
// F and compacts every container, so that every version expired by F is
// removed from disk and cannot come back once now is lower. The items live
// at F keep their _ts and expiry instants: one written while the clock was
// ahead lives until its expiry instant comes on the wall clock. Then each
// container's DefaultTTL history starts over at the wall clock with the
// current DefaultTTL (so a new item follows it, not a change stamped by the
// bad clock), and the wall clock is written as the clock in the CLOCK file,
// with the seq of the last record written so far (those records' _ts no
// longer raise the floor at Open), and in the MANIFEST. A crash in between
// leaves the old clock in force, and ResetClock can be run again.
//
// The reset is logged at warning level with both clocks.
func ResetClock(dir string, opts *Options) (ClockReset, error) {
	if err := opts.check(); err != nil {
		return ClockReset{}, err
	}
	o := opts.withDefaults()
	if _, err := loadManifest(o.FS, dir, o.Logger); errors.Is(err, os.ErrNotExist) {
		return ClockReset{}, fmt.Errorf("%w: %s has no MANIFEST", ErrNoDatabase, dir)
	}
	o.CompactionInterval = -1 // nothing but the reset moves files
	db, err := Open(dir, &o)
	if err != nil {
		return ClockReset{}, err
	}
	res, err := db.resetClock()
	return res, errors.Join(err, db.Close())
}

// resetClock does ResetClock's work on the open database.
func (db *DB) resetClock() (ClockReset, error) {
	ctx := context.Background()
	from := db.clock.now()
	wall := db.opts.Clock().Unix()
	res := ClockReset{From: from, To: from}
	if wall >= from {
		return res, nil
	}
	for _, c := range db.containerList() {
		// Without what the change feed's retention keeps: the feed starts
		// over after a reset.
		if err := c.compact(ctx, false); err != nil {
			return res, fmt.Errorf("ebb: clock reset: %w", err)
		}
	}
	err := db.control(ctx, func(int64) error {
		db.mu.RLock()
		for _, c := range db.mu.byNum {
			c.mu.Lock()
			c.history = policy.History{}.With(wall, c.props.DefaultTTL)
			c.feed.marks = nil
			c.mu.Unlock()
		}
		db.mu.RUnlock()
		db.clockMu.Lock()
		db.clockResetSeq.Store(db.nextSeq() - 1)
		db.clock.resetTo(wall)
		db.clockPersisted.Store(wall)
		err := db.writeClockFileLocked(wall)
		db.clockMu.Unlock()
		if err != nil {
			return err
		}
		return db.saveManifest()
	})
	if err != nil {
		return res, fmt.Errorf("ebb: clock reset: %w", err)
	}
	res.To = wall
	db.log.Warn("ebb: clock reset: the database's clock is back at the wall clock; every version expired by the old clock was removed",
		"dir", db.dir, "from", time.Unix(from, 0).UTC(), "to", time.Unix(wall, 0).UTC())
	return res, nil
}
