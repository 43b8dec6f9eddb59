package engine

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/vfs"
)

// clock is the engine's notion of now, in whole unix seconds: the larger of
// the wall clock and the floor (the highest time already observed or
// persisted) advanced by the real time elapsed since the floor was set.
//
// So now never runs backwards: a wall clock that jumps back neither
// un-expires an item nor gives a write a _ts older than an earlier write's.
// And a wall clock that was once far ahead (a fake clock in a test, one bad
// NTP step) does not freeze expiry: once the wall clock is found behind the
// floor, time goes on from the floor at its real rate.
//
// The real time elapsed is t.Sub(anchor) of two wall readings: measured by
// the monotonic clock when both carry a monotonic reading (as time.Now's
// do), so that a wall clock stepped while it is behind moves nothing; and
// by the difference of the wall readings otherwise (an injected clock, as
// in tests), so that such a clock drives now deterministically.
//
// Reading now takes no lock. The high mark is loaded before the wall is
// read, so the reading that set the mark came before this one: a reading
// found behind the mark is a wall clock that went back (or a floor raised
// from disk at Open), never two readers racing across a second's boundary.
// It takes mu (which serializes every change of the anchor), reads again,
// and if still behind moves the anchor to that reading and the mark, from
// where time goes on. So racing readers never push now ahead of the time
// elapsed. The anchor is loaded before the wall is read, so a reading is
// never measured from an anchor set after it.
type clock struct {
	wall func() time.Time
	log  *slog.Logger

	high   atomic.Int64           // the highest now returned or observed
	anchor atomic.Pointer[anchor] // replaced under mu

	mu     sync.Mutex // serializes re-anchoring, resetTo and warnings
	warnAt int64      // the now of the last warning; rate limits them
	warned bool
}

// anchor is a wall reading t at which the engine's now was at: from it, now
// is at least at plus the time elapsed since t.
type anchor struct {
	t  time.Time
	at int64
}

// clockWarnEvery rate-limits the warnings of a wall clock found behind, in
// seconds of the engine's now.
const clockWarnEvery = 60

func newClock(wall func() time.Time, floor int64, log *slog.Logger) *clock {
	c := &clock{wall: wall, log: log}
	c.anchor.Store(&anchor{t: wall(), at: floor})
	c.high.Store(floor)
	return c
}

// read returns the now that a wall reading taken after loading a gives:
// the larger of the wall and a advanced by the time elapsed since it.
func (c *clock) read(a *anchor) (n, w int64, t time.Time) {
	t = c.wall()
	w = t.Unix()
	return max(w, a.at+elapsedSeconds(a.t, t)), w, t
}

// now returns the current second and raises the high mark to it. The mark
// is raised only from the value loaded before the anchor, so a reading
// measured from an anchor that resetTo replaced never undoes the reset.
func (c *clock) now() int64 {
	for {
		h := c.high.Load()
		n, _, _ := c.read(c.anchor.Load())
		switch {
		case n < h:
			return c.behind()
		case n == h || c.high.CompareAndSwap(h, n):
			return n
		}
		// The mark moved since it was loaded: read again.
	}
}

// behind is now for a reading found behind the high mark.
func (c *clock) behind() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.high.Load()
	n, w, t := c.read(c.anchor.Load())
	if n >= h {
		return c.raise(n) // a reader raced ahead across a second: no jump
	}
	// The wall clock went back (or the floor was raised from disk): time
	// goes on from the high mark at the rate the wall clock moves from here.
	c.anchor.Store(&anchor{t: t, at: h})
	c.warnBehindLocked(w, h)
	return c.raise(h)
}

// raise raises the high mark to n and returns it, or the mark if another
// reader raised it further meanwhile.
func (c *clock) raise(n int64) int64 {
	for {
		h := c.high.Load()
		if n <= h {
			return h
		}
		if c.high.CompareAndSwap(h, n) {
			return n
		}
	}
}

// warnBehindLocked logs, at most once a minute of the engine's now, that
// the wall clock w was found more than a few seconds behind now h; c.mu is
// held.
func (c *clock) warnBehindLocked(w, h int64) {
	if h-w <= dbfile.ClockWarnBehind || c.warned && h < c.warnAt+clockWarnEvery {
		return
	}
	c.warned, c.warnAt = true, h
	c.log.Warn("ebb: the wall clock is behind the database's clock; time goes on from the database's clock at the real rate (ebb clock reset brings it back)",
		"wall", time.Unix(w, 0).UTC(), "clock", time.Unix(h, 0).UTC(), "behind", time.Duration(h-w)*time.Second)
}

// checkBehind logs when the wall clock is found behind the high mark; Open
// calls it once the floor is known.
func (c *clock) checkBehind() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.warnBehindLocked(c.wall().Unix(), c.high.Load())
}

// elapsedSeconds is the whole seconds from a to b (negative when b is
// before a), by the monotonic clock when both readings carry one.
func elapsedSeconds(a, b time.Time) int64 {
	return int64(b.Sub(a) / time.Second)
}

// observe raises the high mark to t (a _ts found on disk, say). The next
// reading finds the wall behind it and anchors there.
func (c *clock) observe(t int64) { c.raise(t) }

// highest is the high mark without reading the wall clock.
func (c *clock) highest() int64 { return c.high.Load() }

// resetTo sets the clock to t, lower than its high mark: for ResetClock
// alone, which has made every expiry up to the old mark final first and
// runs it with no other reader of the clock but the background loops. The
// anchor goes first: a reader that loads the lowered mark then loads the
// new anchor.
func (c *clock) resetTo(t int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.anchor.Store(&anchor{t: c.wall(), at: t})
	c.high.Store(t)
}

// raisesFloor reports whether a record of seq stamped ts raises the floor of
// the clock at Open: not when a ResetClock took back the clock it was
// stamped by.
func (db *DB) raisesFloor(seq uint64) bool { return seq > db.clockResetSeq.Load() }

// persistClock writes the high mark to the CLOCK file if it moved.
func (db *DB) persistClock() error {
	db.clockMu.Lock()
	defer db.clockMu.Unlock()
	h := db.clock.highest()
	if h <= db.clockInFile.Load() {
		return nil
	}
	return db.writeClockFileLocked(h)
}

// writeClockFileLocked writes h to the CLOCK file; db.clockMu is held.
func (db *DB) writeClockFileLocked(h int64) error {
	b := dbfile.ClockFile{High: h, ResetSeq: db.clockResetSeq.Load()}.Encode()
	if err := vfs.WriteFileAtomic(db.fs, db.dir, dbfile.ClockName, b); err != nil {
		return err
	}
	db.clockInFile.Store(h)
	db.notePersistedClock(h)
	return nil
}

// notePersistedClock records that t is durable as a floor of the clock
// (in the CLOCK file or the MANIFEST).
func (db *DB) notePersistedClock(t int64) {
	for {
		p := db.clockPersisted.Load()
		if t <= p || db.clockPersisted.CompareAndSwap(p, t) {
			return
		}
	}
}

// observeExpiry is called before an answer that holds an item expired at
// instant t goes out: a read or a refused write that found it expired, a
// scan, query or count that left it out. Unless t is already durable as a
// floor of the clock, it writes the CLOCK file first, so that no crash and
// no wall clock found behind at the next Open can bring the item back. It
// costs a file write and fsync at most about once a second, and only when
// items expire; the background tick persists the clock the rest of the
// time. A failed write is logged and the answer still goes out.
func (db *DB) observeExpiry(t int64) {
	if t <= db.clockPersisted.Load() {
		return
	}
	if err := db.persistClock(); err != nil {
		db.log.Warn("ebb: persist clock before answering with an expired item left out", "err", err)
	}
}
