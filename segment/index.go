package segment

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// IndexEntry is what Open-time recovery needs about one record, without
// reading its block.
type IndexEntry struct {
	Op     Op
	Seq    uint64
	TS     int64
	TTL    int32
	ID     string
	Handle Handle
	Size   uint32 // encoded record size
}

// The index block holds one entry per record, in file order:
//
//	flags u8        op in the low 7 bits; 0x80 when the record starts a new block
//	seq   uvarint
//	ts    varint
//	ttl   varint
//	id    uvarint length + bytes
//	size  uvarint   encoded record size
//
// Handles are not stored: records fill blocks back to back, so a record's
// offset is the previous record's offset plus its size, or 0 when it starts
// a new block. The entry count is the footer's Records.

// minIndexEntry is the length of the shortest index entry.
const minIndexEntry = 6

// maxIndexEntryFixed bounds an entry's length apart from its id bytes.
const maxIndexEntryFixed = 1 + binary.MaxVarintLen64*2 + binary.MaxVarintLen32*3

const newBlockFlag = 0x80

func appendIndexEntry(dst []byte, r *Record, newBlock bool, size uint32) []byte {
	flags := byte(r.Op)
	if newBlock {
		flags |= newBlockFlag
	}
	dst = append(dst, flags)
	dst = binary.AppendUvarint(dst, r.Seq)
	dst = binary.AppendVarint(dst, r.TS)
	dst = binary.AppendVarint(dst, int64(r.TTL))
	dst = binary.AppendUvarint(dst, uint64(len(r.ID)))
	dst = append(dst, r.ID...)
	return binary.AppendUvarint(dst, uint64(size))
}

// maxIndexRaw bounds the uncompressed index block of a segment with stats s.
func maxIndexRaw(s *Stats) int {
	// Ids are part of the records, so RawBytes bounds their total length.
	if s.Records > maxRawBlock/maxIndexEntryFixed || s.RawBytes > maxRawBlock {
		return maxRawBlock
	}
	return int(min(s.Records*maxIndexEntryFixed+s.RawBytes, maxRawBlock))
}

// entryError is decodeIndex's error about one entry. It wraps ErrCorrupt.
type entryError struct {
	entry int
	what  string
}

func (e *entryError) Error() string { return e.what + ": " + ErrCorrupt.Error() }
func (e *entryError) Unwrap() error { return ErrCorrupt }

// decodeIndex decodes the uncompressed index block b of a segment whose
// footer holds s, checking that the entries agree with s, and appends them
// to dst. The entries' ids are substrings of one string, held in arena (or
// allocated, when arena is nil); bb lends the buffers that gather them.
func decodeIndex(dst []IndexEntry, b []byte, s *Stats, bb *blockBuf, arena *IDArena) ([]IndexEntry, error) {
	if s.Records > int64(len(b)/minIndexEntry) {
		return nil, fmt.Errorf("%d entries cannot fit %d bytes: %w", s.Records, len(b), ErrCorrupt)
	}
	all := slices.Grow(dst, int(s.Records))[:len(dst)+int(s.Records)]
	entries := all[len(dst):]
	ids, ends := bb.ids[:0], bb.idEnds[:0]
	defer func() { bb.ids, bb.idEnds = ids[:0], ends[:0] }()
	var (
		i        int
		blk      int64 = -1
		off      uint64
		prevSize uint64
		raw      int64
	)
	bad := func(n int, what string) ([]IndexEntry, error) {
		return nil, &entryError{entry: n, what: fmt.Sprintf("entry %d at byte %d: %s", n, i, what)}
	}
	uvarint := func() (uint64, bool) {
		v, n := binary.Uvarint(b[min(i, len(b)):])
		if n <= 0 {
			return 0, false
		}
		i += n
		return v, true
	}
	varint := func() (int64, bool) {
		v, n := binary.Varint(b[min(i, len(b)):])
		if n <= 0 {
			return 0, false
		}
		i += n
		return v, true
	}
	for n := range entries {
		e := &entries[n]
		if i >= len(b) {
			return bad(n, "truncated")
		}
		flags := b[i]
		i++
		e.Op = Op(flags &^ newBlockFlag)
		if !e.Op.valid() {
			return bad(n, "invalid op "+e.Op.String())
		}
		var ok bool
		if e.Seq, ok = uvarint(); !ok {
			return bad(n, "bad seq")
		}
		if e.TS, ok = varint(); !ok {
			return bad(n, "bad ts")
		}
		ttl, ok := varint()
		if !ok || ttl < math.MinInt32 || ttl > math.MaxInt32 {
			return bad(n, "bad ttl")
		}
		e.TTL = int32(ttl)
		idLen, ok := uvarint()
		if !ok || idLen > uint64(len(b)-i) {
			return bad(n, "bad id length")
		}
		ids = append(ids, b[i:i+int(idLen)]...)
		ends = append(ends, uint32(len(ids)))
		i += int(idLen)
		size, ok := uvarint()
		if !ok || size < minRecordSize || size > MaxBlockSize {
			return bad(n, "bad record size")
		}
		if flags&newBlockFlag != 0 {
			blk, off = blk+1, 0
		} else if blk < 0 {
			return bad(n, "first entry does not start a block")
		} else {
			off += prevSize
		}
		if off+size > MaxBlockSize || blk >= s.Blocks {
			return bad(n, "record does not fit its block")
		}
		e.Handle = Handle{Block: uint32(blk), Off: uint32(off)}
		e.Size = uint32(size)
		prevSize = size
		raw += int64(size)
	}
	switch {
	case i != len(b):
		return nil, fmt.Errorf("%d trailing bytes after %d entries: %w", len(b)-i, s.Records, ErrCorrupt)
	case blk+1 != s.Blocks:
		return nil, fmt.Errorf("entries span %d blocks, footer says %d: %w", blk+1, s.Blocks, ErrCorrupt)
	case raw != s.RawBytes:
		return nil, fmt.Errorf("entries sum to %d raw bytes, footer says %d: %w", raw, s.RawBytes, ErrCorrupt)
	}
	var str string
	if arena != nil {
		str = arena.strings(ids, len(entries))
	} else {
		str = string(ids)
	}
	var from uint32
	for n, end := range ends {
		entries[n].ID = str[from:end]
		from = end
	}
	return all, nil
}
