package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ebbdb/ebb/engine/vfs"
	"github.com/ebbdb/ebb/segment"
)

// TestMappedSegmentCutShort: a segment file the engine has mapped into
// memory and that is then cut short underneath (by another program, or a
// failing disk) makes the reads of its lost part fail with ErrCorrupt,
// never crash the process; the part still there reads as before.
func TestMappedSegmentCutShort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "1.seg")
	w, err := segment.Create(path, segment.WriterOptions{Compression: segment.CompressionNone, BlockSize: 4096, Container: 1})
	if err != nil {
		t.Fatal(err)
	}
	var hs []segment.Handle
	for i := range 2000 {
		rec := segment.Record{Op: segment.OpPut, Container: 1, Seq: uint64(i + 1), TS: t0, ID: fmt.Sprintf("k%04d", i),
			Body: []byte(`{"pad":"0123456789012345678901234567890123456789012345678901234567890123456789"}`)}
		h, err := w.Add(&rec)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	r, err := openSegmentFile(vfs.OS, path, segment.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rec segment.Record
	if err := r.Get(hs[len(hs)-1], &rec); err != nil {
		t.Fatalf("read before the cut: %v", err)
	}
	if err := os.Truncate(path, 4096); err != nil { // the first page stays
		t.Fatal(err)
	}
	err = r.Get(hs[len(hs)-1], &rec)
	if !errors.Is(err, segment.ErrCorrupt) {
		t.Fatalf("read of a part cut off the mapped file: %v, want ErrCorrupt", err)
	}
	if err := r.Get(hs[0], &rec); err != nil {
		t.Fatalf("read of the first record, still in the file: %v", err)
	}
	// The index block, which the Reader reads with a read call rather than
	// from the mapping, is gone too.
	if _, err := r.Index(); !errors.Is(err, segment.ErrCorrupt) {
		t.Fatalf("Index of the cut file: %v, want ErrCorrupt", err)
	}
}
