package segment

import (
	"errors"
	"strconv"
	"strings"
)

// ErrCorrupt is returned, wrapped with the file, offset and what failed to
// check, whenever bytes read back from disk do not match what was written:
// a checksum mismatch, a truncated block, an impossible length. It is the one
// corruption sentinel of ebb: the engine and the journal re-export it, so
// errors.Is(err, engine.ErrCorrupt) holds for damage found at any layer.
var ErrCorrupt = errors.New("ebb: corrupt data")

// CorruptError is the error a Reader returns for damage found in a segment
// file: where it is and what is wrong. It wraps ErrCorrupt, so
// errors.Is(err, ErrCorrupt) holds; use errors.As to read the location.
//
// Its message is "segment PATH: REASON: ebb: corrupt data".
type CorruptError struct {
	// Path is the file's path (NewReader's name).
	Path string
	// Offset is the byte offset in the file of the part found damaged: a
	// data, index or table block, the footer, the file header (0), or a
	// read that came up short; -1 when it is not known.
	Offset int64
	// Block is the data block concerned, or -1 when the damage is not in
	// one data block.
	Block int
	// Record is the offset of the record concerned in its decompressed
	// block (the Off of its Handle), or -1 when the damage is not in one
	// record.
	Record int
	// Reason says what is wrong and where, as the message does, without
	// the path: "block 3 at offset 4096: checksum mismatch".
	Reason string

	part  part
	entry int // index entry concerned (part partIndex); -1 when none
}

// part is the part of a segment file that damage is in.
type part uint8

const (
	partUnknown part = iota // not one part, or not known
	partHeader
	partData
	partIndex
	partTable
	partFooter
)

// Error returns "segment PATH: REASON: ebb: corrupt data".
func (e *CorruptError) Error() string {
	return "segment " + e.Path + ": " + e.Reason + ": " + ErrCorrupt.Error()
}

// Unwrap returns ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// Where names the part of the file the damage is in: "file header",
// "footer", "table block", "index block", "index entry N", "index entry N,
// record B/O" (an entry that disagrees with its record), "block B", "record
// B/O", or "" when the damage is not in one part or the part is not known.
func (e *CorruptError) Where() string {
	handle := strconv.Itoa(e.Block) + "/" + strconv.Itoa(e.Record)
	switch {
	case e.part == partHeader:
		return "file header"
	case e.part == partFooter:
		return "footer"
	case e.part == partTable:
		return "table block"
	case e.part == partIndex && e.entry < 0:
		return "index block"
	case e.part == partIndex && e.Block >= 0 && e.Record >= 0:
		return "index entry " + strconv.Itoa(e.entry) + ", record " + handle
	case e.part == partIndex:
		return "index entry " + strconv.Itoa(e.entry)
	case e.Block >= 0 && e.Record >= 0:
		return "record " + handle
	case e.Block >= 0:
		return "block " + strconv.Itoa(e.Block)
	}
	return ""
}

// where locates damage for a CorruptError.
type where struct {
	part          part
	off           int64
	block, record int
	entry         int
}

func atUnknown(off int64) where        { return where{partUnknown, off, -1, -1, -1} }
func atHeader() where                  { return where{partHeader, 0, -1, -1, -1} }
func atFooter(size int64) where        { return where{partFooter, size - footerSize, -1, -1, -1} }
func atTable(off int64) where          { return where{partTable, off, -1, -1, -1} }
func atIndex(off int64) where          { return where{partIndex, off, -1, -1, -1} }
func atBlock(blk int, off int64) where { return where{partData, off, blk, -1, -1} }

func atRecord(blk int, off int64, rec int) where { return where{partData, off, blk, rec, -1} }

// corruptError returns the *CorruptError for damage at w in the file at
// path, with reason.
func corruptError(path string, w where, reason string) *CorruptError {
	return &CorruptError{Path: path, Offset: w.off, Block: w.block, Record: w.record, Reason: reason, part: w.part, entry: w.entry}
}

// reasonOf returns the message of err, an error wrapping ErrCorrupt,
// without the ": ebb: corrupt data" that ends it.
func reasonOf(err error) string {
	return strings.TrimSuffix(err.Error(), ": "+ErrCorrupt.Error())
}
