package engine

import (
	"fmt"
	"math"
	"strings"

	"github.com/ebbdb/ebb/segment"
)

// Bounds of the Options fields that have them beyond "0 means the
// default". They keep every later step within what it can do: a block
// that the segment format can hold, a batch whose journal entry stays
// under segment.MaxPayloadSize, a journal file tidwall/wal can hold in
// memory, memtables whose limit (four times SealThreshold) is a number.
const (
	maxJournalSegmentSize = 1 << 30
	maxSealThreshold      = 1 << 40
	maxBatchOperations    = 100_000
	maxBatchBytes         = 256 << 20
)

// optionsError is the error of Options that break their rules: every bad
// field, each with its value and what it allows.
type optionsError struct{ problems []string }

func (e *optionsError) Error() string {
	return "ebb: invalid options: " + strings.Join(e.problems, "; ")
}

func (e *optionsError) Unwrap() error { return ErrInvalidOptions }

// check reports every field of o (before withDefaults) whose value is
// outside what the field allows, as one error wrapping ErrInvalidOptions,
// or nil. A zero field is always valid: it means the default.
func (o *Options) check() error {
	if o == nil {
		return nil
	}
	var e optionsError
	bad := func(format string, args ...any) { e.problems = append(e.problems, fmt.Sprintf(format, args...)) }
	inRange := func(name string, v, hi int64) {
		if v < 0 || v > hi {
			bad("%s %d is not in 0..%d (0: the default)", name, v, hi)
		}
	}
	inRange("JournalSegmentSize", int64(o.JournalSegmentSize), maxJournalSegmentSize)
	inRange("SealThreshold", o.SealThreshold, maxSealThreshold)
	inRange("BlockSize", int64(o.BlockSize), segment.MaxBlockSize)
	inRange("BlockCacheSize", o.BlockCacheSize, math.MaxInt64)
	inRange("CompactionRate", o.CompactionRate, math.MaxInt64)
	inRange("MaxBatchOperations", int64(o.MaxBatchOperations), maxBatchOperations)
	inRange("MaxBatchBytes", int64(o.MaxBatchBytes), maxBatchBytes)
	if r := o.RewriteThreshold; !(r >= 0 && r <= 1) { // NaN fails both
		bad("RewriteThreshold %v is not in 0..1 (0: the default, 0.5)", r)
	}
	if o.Compression > CompressionNone {
		bad("Compression %d is not one of CompressionDefault, CompressionZstd, CompressionS2, CompressionNone", o.Compression)
	}
	if len(e.problems) == 0 {
		return nil
	}
	return &e
}
