package segment

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// magic opens and closes every segment file. Its high first byte catches
// 7-bit transfers and its newline catches newline conversion, as PNG's does.
const magic = "\x89EBBSEG\n"

// formatVersion is the version of the format described in doc.go. A reader
// refuses any other.
const formatVersion = 1

// fileHeaderSize is the length of the header at offset 0:
// magic[8] | version u32 | crc32c(bytes 0..11) u32.
const fileHeaderSize = 16

// footerSize is the fixed length of the footer at the end of the file.
const footerSize = 128

// Stats is the footer's per-segment summary. Every field is written by
// Writer.Finish and checked against the blocks by Reader.Verify.
type Stats struct {
	Container              uint32 // the container all records belong to
	Records, Puts, Deletes int64
	MinSeq, MaxSeq         uint64 // zero when there are no records
	MinTS, MaxTS           int64  // zero when there are no records
	RawBytes               int64  // sum of encoded record sizes (uncompressed)
	FileBytes              int64  // size of the file
	Blocks                 int64  // number of data blocks
	Compression            Compression
}

// footer is the fixed-size trailer that Open reads first.
type footer struct {
	indexOff uint64 // offset of the index block; the table block follows it
	indexLen uint32 // length of the index block, header included
	tableLen uint32 // length of the table block, header included
	stats    Stats
}

func appendFileHeader(dst []byte) []byte {
	start := len(dst)
	dst = append(dst, magic...)
	dst = binary.LittleEndian.AppendUint32(dst, formatVersion)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

func checkFileHeader(b []byte) error {
	switch {
	case len(b) < fileHeaderSize:
		return fmt.Errorf("file header: truncated: %w", ErrCorrupt)
	case string(b[:8]) != magic:
		return fmt.Errorf("file header: bad magic %q: %w", b[:8], ErrCorrupt)
	case crc32.Checksum(b[:12], castagnoli) != binary.LittleEndian.Uint32(b[12:]):
		return fmt.Errorf("file header: checksum mismatch: %w", ErrCorrupt)
	case binary.LittleEndian.Uint32(b[8:]) != formatVersion:
		return fmt.Errorf("file header: unsupported version %d: %w", binary.LittleEndian.Uint32(b[8:]), ErrCorrupt)
	}
	return nil
}

// Footer layout, little endian:
//
//	  0 indexOff u64    8 indexLen u32   12 tableLen u32
//	 16 container u32  20 compression u8 21 reserved [3]
//	 24 records   32 puts   40 deletes   48 minSeq   56 maxSeq
//	 64 minTS     72 maxTS  80 rawBytes  88 fileBytes 96 blocks   (8 bytes each)
//	104 reserved [8]  112 version u32  116 crc32c(bytes 0..115) u32  120 magic [8]
func (f *footer) encode() [footerSize]byte {
	var b [footerSize]byte
	le := binary.LittleEndian
	le.PutUint64(b[0:], f.indexOff)
	le.PutUint32(b[8:], f.indexLen)
	le.PutUint32(b[12:], f.tableLen)
	s := &f.stats
	le.PutUint32(b[16:], s.Container)
	b[20] = byte(s.Compression)
	for i, v := range [...]uint64{uint64(s.Records), uint64(s.Puts), uint64(s.Deletes), s.MinSeq, s.MaxSeq,
		uint64(s.MinTS), uint64(s.MaxTS), uint64(s.RawBytes), uint64(s.FileBytes), uint64(s.Blocks)} {
		le.PutUint64(b[24+8*i:], v)
	}
	le.PutUint32(b[112:], formatVersion)
	le.PutUint32(b[116:], crc32.Checksum(b[:116], castagnoli))
	copy(b[120:], magic)
	return b
}

// decodeFooter parses and checks the footer b of a file of size bytes.
// Everything Open relies on is checked here: the footer's own checksum,
// and that every offset, length and count fits the file.
func decodeFooter(b []byte, size int64) (footer, error) {
	var f footer
	le := binary.LittleEndian
	switch {
	case len(b) != footerSize:
		return f, fmt.Errorf("footer: truncated: %w", ErrCorrupt)
	case string(b[120:]) != magic:
		return f, fmt.Errorf("footer: bad magic %q: %w", b[120:], ErrCorrupt)
	case crc32.Checksum(b[:116], castagnoli) != le.Uint32(b[116:]):
		return f, fmt.Errorf("footer: checksum mismatch: %w", ErrCorrupt)
	case le.Uint32(b[112:]) != formatVersion:
		return f, fmt.Errorf("footer: unsupported version %d: %w", le.Uint32(b[112:]), ErrCorrupt)
	}
	for _, r := range [][]byte{b[21:24], b[104:112]} {
		for _, c := range r {
			if c != 0 {
				return f, fmt.Errorf("footer: reserved bytes are not zero: %w", ErrCorrupt)
			}
		}
	}
	f.indexOff = le.Uint64(b[0:])
	f.indexLen = le.Uint32(b[8:])
	f.tableLen = le.Uint32(b[12:])
	s := &f.stats
	s.Container = le.Uint32(b[16:])
	s.Compression = Compression(b[20])
	v := func(i int) uint64 { return le.Uint64(b[24+8*i:]) }
	s.Records, s.Puts, s.Deletes = int64(v(0)), int64(v(1)), int64(v(2))
	s.MinSeq, s.MaxSeq = v(3), v(4)
	s.MinTS, s.MaxTS = int64(v(5)), int64(v(6))
	s.RawBytes, s.FileBytes, s.Blocks = int64(v(7)), int64(v(8)), int64(v(9))

	bad := func(what string) (footer, error) {
		return footer{}, fmt.Errorf("footer: %s: %w", what, ErrCorrupt)
	}
	body := size - footerSize - fileHeaderSize // bytes of blocks
	switch {
	case s.FileBytes != size:
		return bad(fmt.Sprintf("records a file of %d bytes, found %d", s.FileBytes, size))
	case !s.Compression.valid():
		return bad("unknown compression " + s.Compression.String())
	case s.Records < 0 || s.Puts < 0 || s.Deletes < 0 || s.Puts+s.Deletes != s.Records:
		return bad("record counts do not add up")
	case s.Blocks < 0 || s.Blocks > body/(blockHeaderSize+1):
		return bad(fmt.Sprintf("%d blocks do not fit", s.Blocks))
	case s.RawBytes < 0 || s.RawBytes > 0 && (s.RawBytes-1)/MaxBlockSize >= s.Blocks:
		return bad(fmt.Sprintf("%d raw bytes do not fit %d blocks", s.RawBytes, s.Blocks))
	case s.Records > s.RawBytes/minRecordSize:
		return bad(fmt.Sprintf("%d records do not fit %d raw bytes", s.Records, s.RawBytes))
	case (s.Records == 0) != (s.Blocks == 0):
		return bad("records and blocks disagree")
	case s.Records > 0 && (s.MinSeq > s.MaxSeq || s.MinTS > s.MaxTS):
		return bad("minimum above maximum")
	case s.Records == 0 && (s.MinSeq|s.MaxSeq != 0 || s.MinTS|s.MaxTS != 0):
		return bad("empty segment with a sequence or time range")
	case f.indexOff < fileHeaderSize || f.indexOff > uint64(size):
		return bad(fmt.Sprintf("index offset %d out of range", f.indexOff))
	case f.indexOff+uint64(f.indexLen)+uint64(f.tableLen)+footerSize != uint64(size):
		return bad("index and table blocks do not end at the footer")
	case f.indexLen < blockHeaderSize:
		return bad(fmt.Sprintf("index block length %d", f.indexLen))
	case int64(f.tableLen) != blockHeaderSize+4*s.Blocks:
		return bad(fmt.Sprintf("table block length %d for %d blocks", f.tableLen, s.Blocks))
	}
	return f, nil
}

// minRecordSize is the length of the shortest possible record encoding:
// array, op, container, seq, ts, ttl, empty id, nil body.
const minRecordSize = 8
