package journal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
)

// Frame layout; see the package documentation for the diagram.
const (
	crcSize         = 4
	seqSize         = 8
	frameHeaderSize = crcSize + seqSize
	// minFrameSize is the smallest valid frame: a header and a one-byte
	// payload (payloads are never empty).
	minFrameSize = frameHeaderSize + 1
	// tornSearchSeqs bounds how far ahead of the bad entry's seq a frame
	// found after it may be numbered to count as "a later valid frame".
	tornSearchSeqs = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CorruptError describes the first bad entry found in the journal. It wraps
// ErrCorrupt, so errors.Is(err, ErrCorrupt) holds; use errors.As to read the
// details.
type CorruptError struct {
	// File is the path of the segment file, or "" when unknown.
	File string
	// Offset is the byte offset of the bad entry in File, or -1 when unknown.
	Offset int64
	// Seq is the seq the bad entry should carry, or 0 when unknown.
	Seq uint64
	// Reason says what failed to check.
	Reason string
	// Torn reports that no valid frame follows the bad entry in its file: the
	// damage looks like a write cut short by a crash, which Open repairs when
	// it is found in the last segment file.
	Torn bool
}

// Error implements error.
func (e *CorruptError) Error() string {
	var b strings.Builder
	b.WriteString("journal: corrupt entry")
	if e.Seq != 0 {
		fmt.Fprintf(&b, " seq %d", e.Seq)
	}
	if e.File != "" {
		fmt.Fprintf(&b, " in %s", e.File)
	}
	if e.Offset >= 0 {
		fmt.Fprintf(&b, " at offset %d", e.Offset)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	if e.Torn {
		b.WriteString(" (nothing valid follows: a torn write)")
	}
	return b.String()
}

// Unwrap returns ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// appendFrame appends the frame of payload under seq to dst.
func appendFrame(dst []byte, seq uint64, payload []byte) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.LittleEndian.AppendUint64(dst, seq)
	dst = append(dst, payload...)
	binary.LittleEndian.PutUint32(dst[start:], crc32.Checksum(dst[start+crcSize:], castagnoli))
	return dst
}

// frameSize returns the bytes a payload of n bytes takes in a segment file:
// the tidwall length prefix and the frame.
func frameSize(n int) int {
	n += frameHeaderSize
	return uvarintLen(uint64(n)) + n
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// checkFrame verifies frame, the data of one tidwall entry, and returns the
// seq it carries and its payload. want is the seq the entry must carry, or 0
// to accept any seq but zero. On failure it returns a reason, and payload is
// nil.
func checkFrame(frame []byte, want uint64) (seq uint64, payload []byte, reason string) {
	if len(frame) == 0 {
		return 0, nil, "zero-length entry"
	}
	if len(frame) < minFrameSize {
		if allZero(frame) {
			return 0, nil, "all-zero entry"
		}
		return 0, nil, fmt.Sprintf("entry of %d bytes is shorter than a frame (%d)", len(frame), minFrameSize)
	}
	if binary.LittleEndian.Uint32(frame) != crc32.Checksum(frame[crcSize:], castagnoli) {
		if allZero(frame) {
			return 0, nil, "all-zero entry"
		}
		return 0, nil, "checksum mismatch"
	}
	seq = binary.LittleEndian.Uint64(frame[crcSize:])
	switch {
	case want != 0 && seq != want:
		return 0, nil, fmt.Sprintf("frame carries seq %d, want %d", seq, want)
	case seq == 0:
		return 0, nil, "frame carries seq 0"
	}
	return seq, frame[frameHeaderSize:], ""
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// fileDecoder walks the entries of one segment file held in memory.
type fileDecoder struct {
	data []byte
	off  int
	// base is the file offset of data[0]: offsets reported are base+off.
	base int64
	// seq is the seq the next entry must carry; 0 before the first entry of
	// a file whose name does not give its first seq.
	seq uint64
	// after is set once an entry of the file was decoded (here or, for a
	// decoder of the rest of a file, before it).
	after bool
}

// next decodes the entry at d.off. It returns ok=false at the end of the
// entries: the end of the data, or, after an entry, zeros to it (at most
// maxAhead of them: those the tail is written ahead with), where d.off then
// stays. It returns a *CorruptError (without File) at the first bad entry,
// after which it must not be called again.
func (d *fileDecoder) next() (e Entry, ok bool, cerr *CorruptError) {
	if d.off >= len(d.data) {
		return Entry{}, false, nil
	}
	rest := d.data[d.off:]
	if allZero(rest) {
		if d.after && len(rest) <= maxAhead {
			// The zeros the tail is written ahead with: the entries end
			// here (see Preallocation in the package documentation).
			return Entry{}, false, nil
		}
		return Entry{}, false, d.bad("zero-filled tail")
	}
	n, w := binary.Uvarint(rest)
	switch {
	case w == 0:
		return Entry{}, false, d.bad("entry length cut short")
	case w < 0:
		return Entry{}, false, d.bad("entry length overflows")
	case n > uint64(len(rest)-w):
		return Entry{}, false, d.bad(fmt.Sprintf("entry of %d bytes runs past the end of the file (%d bytes left)", n, len(rest)-w))
	}
	seq, payload, reason := checkFrame(rest[w:w+int(n)], d.seq)
	if reason != "" {
		return Entry{}, false, d.bad(reason)
	}
	e = Entry{Offset: d.base + int64(d.off), Seq: seq, Payload: payload}
	d.off += w + int(n)
	d.seq = seq + 1
	d.after = true
	return e, true, nil
}

// bad describes the bad entry at d.off, judging whether it is a torn tail.
func (d *fileDecoder) bad(reason string) *CorruptError {
	torn := false
	if d.seq == 0 {
		// Without the seq to look for, a later frame cannot be ruled out
		// cheaply: call it corruption rather than drop entries on a guess.
		reason += "; first seq unknown, cannot tell a torn tail"
	} else {
		switch at := laterFrame(d.data, d.off, d.seq); at {
		case noLaterFrame:
			torn = true
		case searchGaveUp:
			reason += "; too many frame-like bytes follow to rule out a valid entry, not treated as a torn tail"
		default:
			reason += fmt.Sprintf("; a valid entry follows at offset %d, not a torn tail", d.base+int64(at))
		}
	}
	return &CorruptError{Offset: d.base + int64(d.off), Seq: d.seq, Reason: reason, Torn: torn}
}

// Results of laterFrame other than an offset.
const (
	noLaterFrame = -1
	searchGaveUp = -2
)

// laterFrame returns the offset of the first valid frame numbered after seq
// that starts at or after offset from in data, or noLaterFrame. It tries
// every byte offset. The cheap test (a length that fits in the data and a
// seq in (seq, seq+2^20]) costs O(1) per offset; only offsets that pass it
// pay for a checksum, and the checksum work is capped at twice the data
// plus 64 KiB, so the search is O(n). Past the cap it returns searchGaveUp:
// unable to rule out a later frame, the caller calls the damage corruption
// rather than drop entries on a guess.
func laterFrame(data []byte, from int, seq uint64) int {
	budget := 2*len(data) + 64<<10
	for p := from; p < len(data); p++ {
		n, w := binary.Uvarint(data[p:])
		if w <= 0 || n < minFrameSize || n > uint64(len(data)-p-w) {
			continue
		}
		frame := data[p+w : p+w+int(n)]
		s := binary.LittleEndian.Uint64(frame[crcSize:])
		if s <= seq || s-seq > tornSearchSeqs {
			continue
		}
		if budget -= len(frame); budget < 0 {
			return searchGaveUp
		}
		if binary.LittleEndian.Uint32(frame) == crc32.Checksum(frame[crcSize:], castagnoli) {
			return p
		}
	}
	return noLaterFrame
}
