package dbfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"

	"github.com/ebbdb/ebb/engine/vfs"
)

// ClockWarnBehind is how many seconds behind the clock's floor the wall
// clock must be found for the engine to warn (and Inspect to note it): less
// is the ordinary jitter of a stepped clock.
const ClockWarnBehind = 5

// The CLOCK file holds the clock's high mark between manifest writes. It is
// written once a second when the mark moved, and at once before any answer
// that relies on an item having expired later than the mark already
// durable (the engine's observeExpiry), so a crash can lose observed time but never time
// in which something was seen to expire.
//
// Its format is the high mark in unix seconds and a crc32c of what comes
// before it; after a ResetClock, the reset's seq sits between the two:
//
//	+-------------+--------+
//	| high (s)    | crc32c |                12 bytes
//	| i64 LE      | u32 LE |
//	+-------------+--------+
//	+-------------+-------------+--------+
//	| high (s)    | reset seq   | crc32c | 20 bytes, after a ResetClock
//	| i64 LE      | u64 LE      | u32 LE |
//	+-------------+-------------+--------+
//
// The reset seq is the highest record seq written before the reset: records
// up to it were stamped by the clock the reset took back, so they no longer
// raise the floor at Open.

// ClockFile is what a CLOCK file holds.
type ClockFile struct {
	High     int64  // the clock's high mark, unix seconds
	ResetSeq uint64 // the last seq stamped before a ResetClock; 0: no reset
}

// Encode is f in the CLOCK file's format.
func (f ClockFile) Encode() []byte {
	b := make([]byte, 8, 20)
	binary.LittleEndian.PutUint64(b, uint64(f.High))
	if f.ResetSeq != 0 {
		b = binary.LittleEndian.AppendUint64(b, f.ResetSeq)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, Castagnoli))
}

// DecodeClockFile decodes a CLOCK file; ok is false when it is damaged.
func DecodeClockFile(b []byte) (f ClockFile, ok bool) {
	if len(b) != 12 && len(b) != 20 {
		return ClockFile{}, false
	}
	n := len(b) - 4
	if crc32.Checksum(b[:n], Castagnoli) != binary.LittleEndian.Uint32(b[n:]) {
		return ClockFile{}, false
	}
	f.High = int64(binary.LittleEndian.Uint64(b))
	if n == 16 {
		f.ResetSeq = binary.LittleEndian.Uint64(b[8:])
	}
	return f, true
}

// ReadClockFile returns dir's CLOCK file, or a zero one if there is none,
// it is damaged or it cannot be read (the manifest and the records' _ts
// still bound the clock from below), read through vfs.OS, as the offline
// tools read.
func ReadClockFile(dir string) ClockFile {
	f, _, _ := LoadClockFile(vfs.OS, dir)
	return f
}

// LoadClockFile returns dir's CLOCK file, or a zero one if there is none or
// it is damaged (damaged then holds its size, for Open's warning; -1
// otherwise). An error reading it is returned: Open must not lower the
// clock's floor because of a passing I/O error.
func LoadClockFile(fsys vfs.FS, dir string) (f ClockFile, damaged int, err error) {
	path := filepath.Join(dir, ClockName)
	b, err := fsys.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ClockFile{}, -1, nil
	}
	if err != nil {
		return ClockFile{}, -1, fmt.Errorf("ebb: read %s: %w", path, err)
	}
	f, ok := DecodeClockFile(b)
	if !ok {
		return ClockFile{}, len(b), nil
	}
	return f, -1, nil
}
