package segment

import (
	"slices"
	"strconv"

	"github.com/klauspost/compress/s2"
)

// A journal payload holds the records of one commit, encoded one after the
// other with AppendRecord. Large enough payloads are stored compressed, so
// that the journal writes, copies and fsyncs fewer bytes:
//
//	plain        record | record | ...            (first byte: a msgpack array)
//	compressed   0xc1 | s2 block of the plain form (s2's own length header first)
//
// 0xc1 is the one msgpack type code that is never used, so it cannot start
// a record, and a payload written before compression existed reads as it
// always did. The journal's frame checksum covers the stored bytes.
const payloadCompressed = 0xc1

// minCompressPayload is the smallest plain payload worth compressing: below
// it the few bytes saved do not pay for the call.
const minCompressPayload = 512

// MaxPayloadSize bounds the plain length of a compressed payload that
// DecodePayload accepts, so that damaged or hostile bytes cannot make it
// allocate more than the largest commit the engine writes.
const MaxPayloadSize = 1 << 30

// AppendPayload appends the stored form of plain, a run of encoded records,
// to dst: compressed with s2 when that saves at least an eighth, as it is
// otherwise. dst must not overlap plain.
func AppendPayload(dst, plain []byte) []byte {
	if len(plain) >= minCompressPayload && len(plain) <= MaxPayloadSize {
		start := len(dst)
		dst = slices.Grow(dst, 1+s2.MaxEncodedLen(len(plain)))
		dst = append(dst, payloadCompressed)
		out := s2.Encode(dst[len(dst):cap(dst)], plain)
		if len(out)+1 <= len(plain)-len(plain)/8 {
			return dst[:len(dst)+len(out)]
		}
		dst = dst[:start]
	}
	return append(dst, plain...)
}

// PayloadSize returns the length of the plain records of a stored payload
// and whether it is compressed (DecodePayload then needs a buffer of that
// size), reading only the compressed form's length header. A compressed
// payload whose header does not decode, or claims more than MaxPayloadSize
// or nothing, is an error wrapping ErrCorrupt.
func PayloadSize(payload []byte) (plain int, compressed bool, err error) {
	if len(payload) == 0 || payload[0] != payloadCompressed {
		return len(payload), false, nil
	}
	n, err := s2.DecodedLen(payload[1:])
	switch {
	case err != nil:
		return 0, true, corruptf("compressed payload: %v", err)
	case n > MaxPayloadSize:
		return 0, true, corruptf("compressed payload claims %s plain bytes, more than the limit %s",
			strconv.Itoa(n), strconv.Itoa(MaxPayloadSize))
	case n == 0:
		return 0, true, corruptf("compressed payload holds no records")
	}
	return n, true, nil
}

// DecodePayload returns the plain records of a stored payload: payload
// itself when it is stored plain, or its decompressed form in buf (grown if
// it is too small). A compressed payload that does not decode, or whose
// plain form would exceed MaxPayloadSize, is an error wrapping ErrCorrupt.
func DecodePayload(payload, buf []byte) ([]byte, error) {
	n, compressed, err := PayloadSize(payload)
	switch {
	case err != nil:
		return nil, err
	case !compressed:
		return payload, nil
	}
	buf = grow(buf, n)
	plain, err := s2.Decode(buf, payload[1:])
	if err != nil || len(plain) != n {
		return nil, corruptf("compressed payload does not decompress: %v", err)
	}
	return plain, nil
}
