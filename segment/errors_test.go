package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"testing"
)

// fixBlockCRC recomputes the checksum of the block at off in b.
func fixBlockCRC(b []byte, off int64) {
	h := b[off : off+blockHeaderSize]
	stored := binary.LittleEndian.Uint32(h)
	payload := b[off+blockHeaderSize : off+blockHeaderSize+int64(stored)]
	binary.LittleEndian.PutUint32(h[12:], crc32.Update(crc32.Checksum(h[:12], castagnoli), castagnoli, payload))
}

// firstError opens b as a segment named "x.seg" and returns the first
// error of Open, Index, Records and Verify, in that order.
func firstError(t *testing.T, b []byte) error {
	t.Helper()
	r, err := NewReader(bytes.NewReader(b), int64(len(b)), "x.seg", ReaderOptions{})
	if err != nil {
		return err
	}
	if _, err := r.Index(); err != nil {
		return err
	}
	for _, err := range r.Records() {
		if err != nil {
			return err
		}
	}
	return r.Verify()
}

func TestCorruptError(t *testing.T) {
	orig, _, _ := smallSegment(t, CompressionNone)
	r, err := NewReader(bytes.NewReader(orig), int64(len(orig)), "x.seg", ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	offs, indexOff, size := r.offs, int64(r.ft.indexOff), int64(len(orig))
	tableOff := indexOff + int64(r.ft.indexLen)
	cases := []struct {
		name   string
		damage func(b []byte) []byte
		offset int64
		block  int
		record int
		where  string
		reason string // the message without "segment x.seg: " and ": ebb: corrupt data"
	}{
		{
			name:   "data block checksum",
			damage: func(b []byte) []byte { b[offs[1]+20] ^= 1; return b },
			offset: offs[1], block: 1, record: -1, where: "block 1",
			reason: fmt.Sprintf("block 1 at offset %d: checksum mismatch", offs[1]),
		},
		{
			name: "record that does not decode",
			damage: func(b []byte) []byte {
				b[offs[2]+blockHeaderSize] = 0xc0 // nil, not an array
				fixBlockCRC(b, offs[2])
				return b
			},
			offset: offs[2], block: 2, record: 0, where: "record 2/0",
			reason: fmt.Sprintf("block 2 at offset %d: record at 0: record: header byte 0xc0 is not a %d-element array", offs[2], recordFields),
		},
		{
			name:   "index block checksum",
			damage: func(b []byte) []byte { b[indexOff+20] ^= 1; return b },
			offset: indexOff, block: -1, record: -1, where: "index block",
			reason: fmt.Sprintf("index block at offset %d: checksum mismatch", indexOff),
		},
		{
			name: "index entry",
			damage: func(b []byte) []byte {
				b[indexOff+blockHeaderSize] = newBlockFlag | 9 // no such op
				fixBlockCRC(b, indexOff)
				return b
			},
			offset: indexOff, block: -1, record: -1, where: "index entry 0",
			reason: fmt.Sprintf("index block at offset %d: entry 0 at byte 1: invalid op op(9)", indexOff),
		},
		{
			name:   "table block checksum",
			damage: func(b []byte) []byte { b[tableOff+blockHeaderSize] ^= 1; return b },
			offset: tableOff, block: -1, record: -1, where: "table block",
			reason: fmt.Sprintf("table block at offset %d: checksum mismatch", tableOff),
		},
		{
			name:   "footer checksum",
			damage: func(b []byte) []byte { b[size-60] ^= 1; return b },
			offset: size - footerSize, block: -1, record: -1, where: "footer",
			reason: "footer: checksum mismatch",
		},
		{
			name:   "file header checksum",
			damage: func(b []byte) []byte { b[9] ^= 1; return b },
			offset: 0, block: -1, record: -1, where: "file header",
			reason: "file header: checksum mismatch",
		},
		{
			name:   "too short",
			damage: func(b []byte) []byte { return b[:10] },
			offset: 0, block: -1, record: -1, where: "file header",
			reason: "file of 10 bytes is too short to be a segment",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := firstError(t, tc.damage(bytes.Clone(orig)))
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err %v (%T), want a *CorruptError wrapping ErrCorrupt", err, err)
			}
			if ce.Path != "x.seg" || ce.Offset != tc.offset || ce.Block != tc.block || ce.Record != tc.record || ce.Reason != tc.reason {
				t.Errorf("got %+v\nwant offset %d block %d record %d reason %q", *ce, tc.offset, tc.block, tc.record, tc.reason)
			}
			if got := ce.Where(); got != tc.where {
				t.Errorf("Where() = %q, want %q", got, tc.where)
			}
			if want := "segment x.seg: " + tc.reason + ": ebb: corrupt data"; err.Error() != want {
				t.Errorf("message %q, want %q", err.Error(), want)
			}
		})
	}
}

// TestCorruptErrorVerify checks where Verify places an index entry that
// disagrees with its record: blocks swapped, each checksum still right.
func TestCorruptErrorVerify(t *testing.T) {
	recs := make([]Record, 6)
	for i := range recs {
		recs[i] = Record{Op: OpPut, Seq: uint64(i), ID: fmt.Sprintf("id%d", i), Body: []byte(fmt.Sprintf(`{"v":%d}`, i))}
	}
	path, _, _ := writeSegment(t, t.TempDir(), recs, WriterOptions{BlockSize: 1, Compression: CompressionNone})
	r, err := Open(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := r.offs
	r.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	swapped := bytes.Clone(b)
	copy(swapped[o[0]:o[1]], b[o[1]:o[2]])
	copy(swapped[o[1]:o[2]], b[o[0]:o[1]])
	err = firstError(t, swapped)
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("err %v, want a *CorruptError", err)
	}
	if ce.Offset != o[0] || ce.Block != 0 || ce.Record != 0 || ce.Where() != "index entry 0, record 0/0" {
		t.Errorf("got %+v, where %q", *ce, ce.Where())
	}
}

func TestIsSegment(t *testing.T) {
	orig, _, _ := smallSegment(t, CompressionZstd)
	headless := bytes.Clone(orig)
	headless[0] ^= 1
	for _, tc := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"segment", orig, true},
		{"truncated", orig[:len(orig)/2], true},
		{"damaged header", headless, true},
		{"magic only", []byte(magic), true},
		{"empty", nil, false},
		{"short", orig[1:5], false},
		{"text", []byte("hello, this is not a segment file at all"), false},
		{"headless and truncated", headless[:len(orig)-1], false},
	} {
		if got := IsSegment(bytes.NewReader(tc.b), int64(len(tc.b))); got != tc.want {
			t.Errorf("%s: IsSegment = %v, want %v", tc.name, got, tc.want)
		}
	}
}
