package dbfile

import (
	"encoding/binary"
	"fmt"
)

// msgpackLengthsFit walks the msgpack values in b and fails when an array,
// map, string, binary or extension claims more than the bytes left could
// hold (every element takes at least one byte). DecodeManifest calls it
// before msgpack.Unmarshal, because msgpack v5.4 preallocates any claimed
// slice length (vmihailenco/msgpack#401): without the check, a MANIFEST of
// a few bytes with a valid checksum could claim 2^31 containers and kill
// the process with an out-of-memory error that no recover catches.
func msgpackLengthsFit(b []byte) error {
	i, need := 0, 1 // need: values still to walk
	for need > 0 {
		if i >= len(b) {
			return fmt.Errorf("msgpack: %d values missing at offset %d", need, i)
		}
		c := b[i]
		i++
		need--
		var n, per, size uint64 // n elements of per values, or size payload bytes
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		case c&0xf0 == 0x80:
			n, per = uint64(c&0x0f), 2
		case c&0xf0 == 0x90:
			n, per = uint64(c&0x0f), 1
		case c&0xe0 == 0xa0:
			size = uint64(c & 0x1f)
		case c == 0xc4 || c == 0xd9: // bin8, str8
			size = uint64(lenField(b, &i, 1))
		case c == 0xc5 || c == 0xda: // bin16, str16
			size = uint64(lenField(b, &i, 2))
		case c == 0xc6 || c == 0xdb: // bin32, str32
			size = uint64(lenField(b, &i, 4))
		case c == 0xc7 || c == 0xc8 || c == 0xc9: // ext8/16/32: length, type
			size = uint64(lenField(b, &i, 1<<(c-0xc7))) + 1
		case c == 0xca || c == 0xce || c == 0xd2:
			size = 4
		case c == 0xcb || c == 0xcf || c == 0xd3:
			size = 8
		case c == 0xcc || c == 0xd0:
			size = 1
		case c == 0xcd || c == 0xd1:
			size = 2
		case c >= 0xd4 && c <= 0xd8: // fixext1..16: type, then 1<<k bytes
			size = 1 + 1<<(c-0xd4)
		case c == 0xdc:
			n, per = uint64(lenField(b, &i, 2)), 1
		case c == 0xdd:
			n, per = uint64(lenField(b, &i, 4)), 1
		case c == 0xde:
			n, per = uint64(lenField(b, &i, 2)), 2
		case c == 0xdf:
			n, per = uint64(lenField(b, &i, 4)), 2
		default:
			return fmt.Errorf("msgpack: byte 0x%02x at offset %d is not a type code", c, i-1)
		}
		if i > len(b) {
			return fmt.Errorf("msgpack: length field cut short at offset %d", i)
		}
		left := uint64(len(b) - i)
		if size > left || n*per > left {
			return fmt.Errorf("msgpack: value at offset %d claims %d bytes or %d elements, %d bytes left", i, size, n*per, left)
		}
		i += int(size)
		need += int(n * per)
	}
	if i != len(b) {
		return fmt.Errorf("msgpack: %d bytes after the value", len(b)-i)
	}
	return nil
}

// lenField reads a big-endian length of w bytes at *i and advances *i; a
// field cut short leaves *i past len(b) for the caller to report.
func lenField(b []byte, i *int, w int) uint32 {
	j := *i
	*i += w
	if *i > len(b) {
		return 0
	}
	switch w {
	case 1:
		return uint32(b[j])
	case 2:
		return uint32(binary.BigEndian.Uint16(b[j:]))
	default:
		return binary.BigEndian.Uint32(b[j:])
	}
}
