package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/ebbdb/ebb/engine/vfs"
)

// clock is the engine's notion of now, in whole unix seconds. It is the
// maximum of the wall clock and the highest time already observed or
// persisted, so it never runs backwards: a wall clock that jumps back
// neither un-expires an item nor gives a write a _ts older than an earlier
// write's.
type clock struct {
	wall func() time.Time
	high atomic.Int64
}

func newClock(wall func() time.Time, floor int64) *clock {
	c := &clock{wall: wall}
	c.high.Store(floor)
	return c
}

// now returns the current second and raises the high mark to it.
func (c *clock) now() int64 {
	w := c.wall().Unix()
	for {
		h := c.high.Load()
		if w <= h {
			return h
		}
		if c.high.CompareAndSwap(h, w) {
			return w
		}
	}
}

// observe raises the high mark to t (a _ts found on disk, say).
func (c *clock) observe(t int64) {
	for {
		h := c.high.Load()
		if t <= h || c.high.CompareAndSwap(h, t) {
			return
		}
	}
}

// highest is the high mark without reading the wall clock.
func (c *clock) highest() int64 { return c.high.Load() }

// The CLOCK file holds the clock's high mark between manifest writes: 8
// bytes of unix seconds, little endian, then their crc32c. It is written
// once a second when the mark moved, and at once before any answer that
// relies on an item having expired later than the mark already durable
// (observeExpiry), so a crash can lose observed time but never time in
// which something was seen to expire.
const clockName = "CLOCK"

// persistClock writes the high mark to the CLOCK file if it moved.
func (db *DB) persistClock() error {
	db.clockMu.Lock()
	defer db.clockMu.Unlock()
	h := db.clock.highest()
	if h <= db.clockInFile.Load() {
		return nil
	}
	var b [12]byte
	binary.LittleEndian.PutUint64(b[:], uint64(h))
	binary.LittleEndian.PutUint32(b[8:], crc32.Checksum(b[:8], castagnoli))
	if err := writeFileAtomic(db.fs, db.dir, clockName, b[:]); err != nil {
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

// readClockFile returns the high mark in dir's CLOCK file, or 0 if there is
// none, it is damaged or it cannot be read (the manifest and the records'
// _ts still bound the clock from below). The offline tools use it.
func readClockFile(dir string) int64 {
	h, _ := loadClockFile(vfs.OS, dir)
	return h
}

// loadClockFile returns the high mark in dir's CLOCK file, or 0 if there is
// none or it is damaged. An error reading it is returned: Open must not
// lower the clock's floor because of a passing I/O error.
func loadClockFile(fsys vfs.FS, dir string) (int64, error) {
	path := filepath.Join(dir, clockName)
	b, err := fsys.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("ebb: read %s: %w", path, err)
	}
	if len(b) != 12 || crc32.Checksum(b[:8], castagnoli) != binary.LittleEndian.Uint32(b[8:]) {
		return 0, nil
	}
	return int64(binary.LittleEndian.Uint64(b)), nil
}
