package segment

import (
	"encoding/binary"
	"hash/crc32"
	"slices"
	"strconv"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Compression names the codec of a segment's blocks.
type Compression uint8

const (
	// CompressionNone stores blocks as they are.
	CompressionNone Compression = 0
	// CompressionZstd compresses blocks with zstd at its fastest level:
	// about 28% smaller than s2 on msgpack records. The default.
	CompressionZstd Compression = 1
	// CompressionS2 compresses blocks with s2 at its default (fastest)
	// level: on 8 KiB blocks of msgpack records, about 3.5x faster to decode
	// than zstd, for a payload about a quarter larger. s2's "better" level
	// writes files about 7% smaller at twice the encoding time.
	CompressionS2 Compression = 2
)

// String returns "none", "zstd", "s2", or "compression(N)".
func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "none"
	case CompressionZstd:
		return "zstd"
	case CompressionS2:
		return "s2"
	}
	return "compression(" + strconv.Itoa(int(c)) + ")"
}

func (c Compression) valid() bool { return c <= CompressionS2 }

// MaxBlockSize bounds the uncompressed length of a data block, and so the
// size of one record. A reader refuses a block header that claims more, so
// that a damaged file cannot make it allocate more than this per block.
const MaxBlockSize = 64 << 20

// blockHeaderSize is the length of the header in front of every block.
const blockHeaderSize = 16

// blockKind tells data, index and table blocks apart, so that a block read
// from the wrong offset is caught even if its checksum is right.
type blockKind uint8

const (
	kindData  blockKind = 1
	kindIndex blockKind = 2
	kindTable blockKind = 3
)

func (k blockKind) String() string {
	switch k {
	case kindData:
		return "data"
	case kindIndex:
		return "index"
	case kindTable:
		return "table"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// castagnoli is the CRC-32C table used for every checksum in a segment.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// zstdEncoder and zstdDecoder are process-wide: EncodeAll and DecodeAll are
// safe for concurrent use and pool their state internally.
var (
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderCRC(false), // every block has its own CRC-32C
			zstd.WithWindowSize(1<<20),
			zstd.WithZeroFrames(true))
		if err != nil {
			panic("segment: zstd encoder: " + err.Error())
		}
		return e
	})
	zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderMaxMemory(maxRawBlock),
			zstd.WithDecodeAllCapLimit(true), // never decode past the recorded length
			zstd.WithDecoderConcurrency(0))
		if err != nil {
			panic("segment: zstd decoder: " + err.Error())
		}
		return d
	})
)

// maxRawBlock bounds the uncompressed length of any block, the index block
// included.
const maxRawBlock = 1 << 30

var zeroHeader [blockHeaderSize]byte

// appendBlock compresses raw with c and appends the framed block (header
// and payload) to dst. When compression does not make the payload smaller,
// the block is stored uncompressed.
func appendBlock(dst, raw []byte, c Compression, kind blockKind) []byte {
	start := len(dst)
	dst = append(dst, zeroHeader[:]...)
	codec := c
	switch c {
	case CompressionZstd:
		dst = zstdEncoder().EncodeAll(raw, dst)
	case CompressionS2:
		dst = slices.Grow(dst, s2.MaxEncodedLen(len(raw)))
		out := s2.Encode(dst[len(dst):cap(dst)], raw)
		dst = dst[:len(dst)+len(out)]
	}
	if codec != CompressionNone && len(dst)-start-blockHeaderSize >= len(raw) {
		dst = dst[:start+blockHeaderSize]
		codec = CompressionNone
	}
	if codec == CompressionNone {
		dst = append(dst, raw...)
	}
	h := dst[start : start+blockHeaderSize]
	binary.LittleEndian.PutUint32(h[0:], uint32(len(dst)-start-blockHeaderSize))
	binary.LittleEndian.PutUint32(h[4:], uint32(len(raw)))
	h[8] = byte(codec)
	h[9] = byte(kind)
	crc := crc32.Update(crc32.Checksum(h[:12], castagnoli), castagnoli, dst[start+blockHeaderSize:])
	binary.LittleEndian.PutUint32(h[12:], crc)
	return dst
}

// blockError describes what is wrong with a block; the reader wraps it with
// the file, block number and offset. It wraps ErrCorrupt.
type blockError struct{ what string }

func (e *blockError) Error() string { return e.what + ": " + ErrCorrupt.Error() }
func (e *blockError) Unwrap() error { return ErrCorrupt }

// decodeBlock checks the block at the front of b, which must be of the
// given kind and decode to at most maxRaw bytes, and returns its
// uncompressed contents and the block's total length.
//
// The checksum is verified before any length in the header is trusted, and
// the result is allocated only after the compressed payload agrees with the
// recorded length. For uncompressed blocks raw aliases b; otherwise raw is
// buf, or a new buffer if buf is too small. Callers that keep raw pass a nil
// buf and get an exact-size allocation.
func decodeBlock(b []byte, kind blockKind, maxRaw int, buf []byte) (raw []byte, n int, err error) {
	if len(b) < blockHeaderSize {
		return nil, 0, &blockError{"truncated block header"}
	}
	stored := binary.LittleEndian.Uint32(b[0:])
	if uint64(stored) > uint64(len(b)-blockHeaderSize) {
		return nil, 0, &blockError{"stored length " + strconv.FormatUint(uint64(stored), 10) +
			" exceeds the " + strconv.Itoa(len(b)-blockHeaderSize) + " bytes available"}
	}
	n = blockHeaderSize + int(stored)
	payload := b[blockHeaderSize:n]
	want := binary.LittleEndian.Uint32(b[12:])
	if got := crc32.Update(crc32.Checksum(b[:12], castagnoli), castagnoli, payload); got != want {
		return nil, 0, &blockError{"checksum mismatch"}
	}
	rawLen := int(binary.LittleEndian.Uint32(b[4:]))
	codec, k := Compression(b[8]), blockKind(b[9])
	switch {
	case k != kind:
		return nil, 0, &blockError{"found a " + k.String() + " block, want " + kind.String()}
	case b[10] != 0 || b[11] != 0:
		return nil, 0, &blockError{"reserved header bytes are not zero"}
	case rawLen > maxRaw:
		return nil, 0, &blockError{"uncompressed length " + strconv.Itoa(rawLen) +
			" exceeds the limit " + strconv.Itoa(maxRaw)}
	}
	switch codec {
	case CompressionNone:
		if rawLen != len(payload) {
			return nil, 0, &blockError{"uncompressed block length mismatch"}
		}
		return payload, n, nil
	case CompressionS2:
		dl, err := s2.DecodedLen(payload)
		if err != nil || dl != rawLen {
			return nil, 0, &blockError{"s2 payload does not match the recorded length"}
		}
		buf = growScratch(buf, rawLen)
		raw, err = s2.Decode(buf[:rawLen], payload)
		if err != nil || len(raw) != rawLen {
			return nil, 0, &blockError{"s2: cannot decompress"}
		}
		return raw, n, nil
	case CompressionZstd:
		buf = growScratch(buf, rawLen)
		raw, err = zstdDecoder().DecodeAll(payload, buf[:0:rawLen])
		if err != nil || len(raw) != rawLen {
			return nil, 0, &blockError{"zstd: cannot decompress to the recorded length"}
		}
		if rawLen > 0 && &raw[0] == &buf[:rawLen][0] {
			raw = buf[:rawLen] // give the caller buf's spare capacity back
		}
		return raw, n, nil
	}
	return nil, 0, &blockError{"unknown codec " + codec.String()}
}

// growScratch returns buf if it can hold n bytes, or a new buffer that can:
// of exactly n bytes if buf is nil, else with room to spare, so that a
// reused scratch buffer settles at the largest block size.
func growScratch(buf []byte, n int) []byte {
	if cap(buf) >= n {
		return buf
	}
	if buf == nil {
		return make([]byte, n)
	}
	return make([]byte, max(n, 2*cap(buf)))
}
