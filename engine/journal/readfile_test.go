package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
)

// segmentBytes returns a segment file holding payloads as entries numbered
// from first, framed as Append frames them.
func segmentBytes(first uint64, payloads ...[]byte) []byte {
	var b []byte
	for i, p := range payloads {
		frame := appendFrame(nil, first+uint64(i), p)
		b = binary.AppendUvarint(b, uint64(len(frame)))
		b = append(b, frame...)
	}
	return b
}

// readAll collects what ReadFile yields.
func readAll(t *testing.T, path string) ([]Entry, error) {
	t.Helper()
	var entries []Entry
	for e, err := range ReadFile(path) {
		if err != nil {
			return entries, err
		}
		entries = append(entries, e)
	}
	return entries, nil
}

func TestReadFileGood(t *testing.T) {
	l := newLayout(t)
	j := l.open(t, Options{SegmentSize: 1024})
	appendSeqs(t, j, 1, 120)
	j.Close()
	files, err := Files(l.journal)
	if err != nil || len(files) < 3 {
		t.Fatalf("Files: %d, %v", len(files), err)
	}
	next := uint64(1)
	for _, f := range files {
		entries, err := readAll(t, f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		off := int64(0)
		for _, e := range entries {
			if e.Seq != next || e.Offset != off || !bytes.Equal(e.Payload, payloadFor(e.Seq)) {
				t.Fatalf("%s: entry %+v, want seq %d at offset %d", f, e, next, off)
			}
			next++
			off += int64(frameSize(len(e.Payload)))
		}
		if fi, _ := os.Stat(f); fi.Size() != off {
			t.Fatalf("%s: entries end at %d, file is %d bytes", f, off, fi.Size())
		}
	}
	if next != 121 {
		t.Fatalf("files hold seqs up to %d, want 120", next-1)
	}

	// Stopping early is fine.
	for range ReadFile(files[0]) {
		break
	}
}

func TestReadFileDamaged(t *testing.T) {
	dir := t.TempDir()
	payloads := [][]byte{[]byte("first"), []byte("second entry"), []byte("third, the longest entry")}
	good := segmentBytes(7, payloads...)
	secondOff := int64(frameSize(len(payloads[0])))
	thirdOff := secondOff + int64(frameSize(len(payloads[1])))

	for _, c := range []struct {
		name      string
		file      string
		data      []byte
		entries   int    // good entries before the error
		offset    int64  // of the error; -1: no error
		seq       uint64 // expected at the error
		torn      bool
		corrupted bool
	}{
		{"good", segmentName(7), good, 3, -1, 0, false, false},
		{"empty", segmentName(7), nil, 0, -1, 0, false, false},
		{"cut", segmentName(7), good[:len(good)-3], 2, thirdOff, 9, true, true},
		// Zeros after an entry: those the tail is written ahead with.
		{"zero-tail", segmentName(7), append(bytes.Clone(good), make([]byte, 40)...), 3, -1, 0, false, false},
		{"zero-last-entry", segmentName(7), append(bytes.Clone(good[:thirdOff]), make([]byte, len(good)-int(thirdOff))...), 2, -1, 0, false, false},
		{"zero-inside-entry", segmentName(7), append(bytes.Clone(good[:thirdOff+2]), make([]byte, len(good)-int(thirdOff)-2)...), 2, thirdOff, 9, true, true},
		{"zeros-only", segmentName(7), make([]byte, 40), 0, 0, 7, true, true},
		{"zero-tail-too-long", segmentName(7), append(bytes.Clone(good), make([]byte, maxAhead+1)...), 3, int64(len(good)), 10, true, true},
		{"flipped-middle", segmentName(7), flip(good, secondOff+15), 1, secondOff, 8, false, true},
		{"wrong-first-seq", segmentName(6), good, 0, 0, 6, false, true},
		{"broken-copy-name", segmentName(7) + ".20250101T000000.000000000Z.broken", good[:len(good)-1], 2, thirdOff, 9, true, true},
		{"unnamed", "copy", good, 3, -1, 0, false, false},
		{"unnamed-bad-first", "copy2", good[1:], 0, 0, 0, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.file)
			if err := os.WriteFile(path, c.data, 0o640); err != nil {
				t.Fatal(err)
			}
			var entries []Entry
			var gotErr error
			var errEntry Entry
			for e, err := range ReadFile(path) {
				if gotErr != nil {
					t.Fatal("ReadFile yielded after an error")
				}
				if err != nil {
					gotErr, errEntry = err, e
					continue
				}
				entries = append(entries, e)
			}
			if len(entries) != c.entries {
				t.Fatalf("%d good entries, want %d (err %v)", len(entries), c.entries, gotErr)
			}
			for i, e := range entries {
				if e.Seq != 7+uint64(i) || !bytes.Equal(e.Payload, payloads[i]) {
					t.Fatalf("entry %d = %+v", i, e)
				}
			}
			if !c.corrupted {
				if gotErr != nil {
					t.Fatalf("unexpected error %v", gotErr)
				}
				return
			}
			var cerr *CorruptError
			if !errors.Is(gotErr, ErrCorrupt) || !errors.As(gotErr, &cerr) {
				t.Fatalf("error %v, want a *CorruptError", gotErr)
			}
			if cerr.File != path || cerr.Offset != c.offset || cerr.Seq != c.seq || cerr.Torn != c.torn {
				t.Fatalf("CorruptError %+v, want offset %d seq %d torn %v", cerr, c.offset, c.seq, c.torn)
			}
			if errEntry.Offset != c.offset || errEntry.Seq != c.seq || errEntry.Payload != nil {
				t.Fatalf("entry yielded with the error: %+v", errEntry)
			}
		})
	}

	_, err := readAll(t, filepath.Join(dir, "missing"))
	if err == nil || errors.Is(err, ErrCorrupt) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ReadFile of a missing file: %v", err)
	}
}

func flip(b []byte, at int64) []byte {
	b = bytes.Clone(b)
	b[at] ^= 0x08
	return b
}

// laterFrameBrute is laterFrame without shortcuts or budget.
func laterFrameBrute(data []byte, from int, seq uint64) bool {
	for p := from; p < len(data); p++ {
		n, w := binary.Uvarint(data[p:])
		if w <= 0 || n < minFrameSize || n > uint64(len(data)-p-w) {
			continue
		}
		frame := data[p+w : p+w+int(n)]
		s := binary.LittleEndian.Uint64(frame[4:])
		if s > seq && s-seq <= tornSearchSeqs &&
			binary.LittleEndian.Uint32(frame) == crc32.Checksum(frame[4:], crc32.MakeTable(crc32.Castagnoli)) {
			return true
		}
	}
	return false
}

// FuzzReadFile feeds arbitrary bytes to ReadFile as segment file
// 00000000000000000001 (through decodeFile, ReadFile without the file
// system, which keeps the fuzzer fast; the tests above cover the rest) and
// checks that it does not panic, that every entry
// it yields is a valid frame at the offset it names, and that it calls a bad
// entry a torn tail only when no valid frame follows.
func FuzzReadFile(f *testing.F) {
	good := segmentBytes(1, []byte("a"), []byte("hello journal"), bytes.Repeat([]byte("x"), 200))
	f.Add(good)
	f.Add(good[:len(good)-5])
	f.Add(append(bytes.Clone(good), 0, 0, 0, 0))
	f.Add(flip(good, 5))
	f.Add(append(segmentBytes(1, []byte("a")), segmentBytes(3, []byte("b"))...))
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	path := filepath.Join("journal", segmentName(1))
	f.Fuzz(func(t *testing.T, data []byte) {
		off, seq, failed := 0, uint64(1), false
		for e, err := range decodeFile(path, data) {
			if failed {
				t.Fatal("ReadFile yielded after an error")
			}
			if err != nil {
				failed = true
				var cerr *CorruptError
				if !errors.Is(err, ErrCorrupt) || !errors.As(err, &cerr) {
					t.Fatalf("error %v, want a *CorruptError", err)
				}
				if cerr.Offset != int64(off) || cerr.Seq != seq || e.Offset != int64(off) || e.Seq != seq {
					t.Fatalf("error at offset %d seq %d (entry %+v), want offset %d seq %d", cerr.Offset, cerr.Seq, e, off, seq)
				}
				later := laterFrameBrute(data, off, seq)
				if later && cerr.Torn {
					t.Fatalf("torn tail reported at %d though a valid frame follows", off)
				}
				if !later && !cerr.Torn && len(data) < 256 {
					t.Fatalf("corruption reported at %d though no valid frame follows", off)
				}
				continue
			}
			n, w := binary.Uvarint(data[off:])
			if w <= 0 || n > uint64(len(data)-off-w) || n < minFrameSize {
				t.Fatalf("entry %+v: no valid length at offset %d", e, off)
			}
			frame := data[off+w : off+w+int(n)]
			if binary.LittleEndian.Uint32(frame) != crc32.Checksum(frame[4:], crc32.MakeTable(crc32.Castagnoli)) {
				t.Fatalf("entry %+v: bad checksum", e)
			}
			if e.Offset != int64(off) || e.Seq != seq || binary.LittleEndian.Uint64(frame[4:]) != seq ||
				len(e.Payload) == 0 || !bytes.Equal(e.Payload, frame[12:]) {
				t.Fatalf("entry %+v does not match the frame at offset %d, seq %d", e, off, seq)
			}
			off += w + int(n)
			seq++
		}
		if !failed && off != len(data) && (off == 0 || len(data)-off > maxAhead || !allZero(data[off:])) {
			t.Fatalf("ReadFile stopped at %d of %d bytes without an error, and not after an entry before zeros only", off, len(data))
		}
	})
}

// TestLaterFrameBounded builds a damaged tail full of frame-like candidates
// (lengths reaching the end of the file, seqs in range, bad checksums) that
// would make an unbounded search quadratic: the search gives up and the
// damage is not called a torn tail.
func TestLaterFrameBounded(t *testing.T) {
	const blocks, blockSize = 64, 4 << 10
	good := segmentBytes(1, []byte("only good entry"))
	data := append(bytes.Clone(good), make([]byte, blocks*blockSize)...)
	for i := range blocks {
		p := len(good) + i*blockSize
		n := uint64(len(data) - p - 3) // a 3-byte uvarint
		binary.PutUvarint(data[p:], n)
		binary.LittleEndian.PutUint32(data[p+3:], 0xdeadbeef)
		binary.LittleEndian.PutUint64(data[p+7:], 3)
	}
	if at := laterFrame(data, len(good), 2); at != searchGaveUp {
		t.Fatalf("laterFrame = %d, want searchGaveUp", at)
	}
	d := fileDecoder{data: data, seq: 1}
	if _, ok, cerr := d.next(); !ok || cerr != nil {
		t.Fatalf("first entry: %v %v", ok, cerr)
	}
	if _, _, cerr := d.next(); cerr == nil || cerr.Torn {
		t.Fatalf("damage after the first entry: %+v, want corruption, not torn", cerr)
	}

	// A real frame after the damage is found, at its offset.
	tail := segmentBytes(3, []byte("later"))
	data = append(append(bytes.Clone(good), 0x55, 0x66, 0x77), tail...)
	if at := laterFrame(data, len(good), 2); at != len(good)+3 {
		t.Fatalf("laterFrame = %d, want %d", at, len(good)+3)
	}
}
