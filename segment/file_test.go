package segment

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
)

// memFile is a File in memory that fails its writes after failAfter bytes
// (negative: never) and its Sync when failSync is set.
type memFile struct {
	bytes.Buffer
	failAfter int
	failSync  bool
	closed    bool
}

func (f *memFile) Write(b []byte) (int, error) {
	if f.failAfter >= 0 && f.Len()+len(b) > f.failAfter {
		n := f.failAfter - f.Len()
		f.Buffer.Write(b[:n])
		return n, &os.PathError{Op: "write", Path: "mem", Err: syscall.ENOSPC}
	}
	return f.Buffer.Write(b)
}

func (f *memFile) Sync() error {
	if f.failSync {
		return &os.PathError{Op: "fsync", Path: "mem", Err: syscall.EIO}
	}
	return nil
}

func (f *memFile) Close() error { f.closed = true; return nil }

// TestNewWriterOnAFile: a segment written through NewWriter to any File
// reads back through NewReader; a failing write or fsync fails the Writer
// with the cause, and Abort closes the file and discards it.
func TestNewWriterOnAFile(t *testing.T) {
	recs := genRecords(rand.New(rand.NewPCG(1, 2)), 200, 3)
	opts := WriterOptions{BlockSize: 1024, Compression: CompressionZstd, Container: 3}
	write := func(f *memFile) (discarded bool, err error) {
		w, err := NewWriter(f, "mem.seg", opts, func() error { discarded = true; return nil })
		if err != nil {
			return discarded, err
		}
		for i := range recs {
			if _, err := w.Add(&recs[i]); err != nil {
				w.Abort()
				return discarded, err
			}
		}
		if _, err := w.Finish(); err != nil {
			w.Abort()
			return discarded, err
		}
		return discarded, nil
	}

	good := &memFile{failAfter: -1}
	if discarded, err := write(good); err != nil || discarded || !good.closed {
		t.Fatalf("write: %v, discarded %v, closed %v", err, discarded, good.closed)
	}
	r, err := NewReader(bytes.NewReader(good.Bytes()), int64(good.Len()), "mem.seg", ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range r.Records() {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != len(recs) {
		t.Fatalf("read back %d records, wrote %d", n, len(recs))
	}

	for _, f := range []*memFile{
		{failAfter: 3},                  // the header
		{failAfter: good.Len() / 2},     // a data block
		{failAfter: good.Len() - 10},    // the footer
		{failAfter: -1, failSync: true}, // the fsync
	} {
		discarded, err := write(f)
		if err == nil || !discarded || !f.closed {
			t.Fatalf("failing file (after %d, sync %v): %v, discarded %v, closed %v", f.failAfter, f.failSync, err, discarded, f.closed)
		}
		if cause := error(syscall.ENOSPC); f.failSync {
			if !errors.Is(err, syscall.EIO) {
				t.Fatalf("failed fsync: %v does not wrap EIO", err)
			}
		} else if !errors.Is(err, cause) {
			t.Fatalf("failed write: %v does not wrap ENOSPC", err)
		}
	}
}

// failingReaderAt fails every read with EIO.
type failingReaderAt struct{ closed bool }

func (*failingReaderAt) ReadAt([]byte, int64) (int, error) {
	return 0, &os.PathError{Op: "read", Path: "mem", Err: syscall.EIO}
}

func (f *failingReaderAt) Close() error { f.closed = true; return nil }

// TestOpenFileIOError: an I/O error is reported as such, not as
// corruption, and OpenFile closes the file it was given when it fails.
func TestOpenFileIOError(t *testing.T) {
	f := &failingReaderAt{}
	_, err := OpenFile(f, 4096, "mem.seg", ReaderOptions{})
	if !errors.Is(err, syscall.EIO) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("OpenFile on a failing file: %v, want EIO and not ErrCorrupt", err)
	}
	if !f.closed {
		t.Fatal("OpenFile did not close the file after failing")
	}
}
