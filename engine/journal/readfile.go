package journal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"path/filepath"
	"strconv"

	"github.com/ebbdb/ebb/engine/vfs"
)

// Entry is one entry of a segment file, as ReadFile decodes it.
type Entry struct {
	// Offset is the byte offset of the entry (its tidwall length prefix) in
	// the file.
	Offset int64
	// Seq is the entry's seq (its wal index).
	Seq uint64
	// Payload is the entry's payload, checksum verified. The slices of one
	// ReadFile call share one buffer holding the file; they stay valid and
	// must not be modified.
	Payload []byte
}

// ReadFile decodes one segment file offline: without tidwall, without a
// Journal and without changing anything on disk. It is meant for tools such
// as `ebb dump` and `ebb verify`, and works on a live journal's files, on
// copies, and on the ".broken" copies that Open keeps.
//
// The sequence yields every good entry in file order. At the first bad entry
// it yields a zero-payload Entry holding that entry's offset and expected seq
// with a *CorruptError (wrapping ErrCorrupt) that says what failed and
// whether the damage looks like a torn tail, and stops. An error reading the
// file, or a path that is not a regular file (a fifo or a device, which
// could block or never end), is yielded alone.
//
// ReadFile streams: it holds one entry at a time (each Payload is its own),
// and checks the checksum of a large entry before it allocates it, so its
// memory does not grow with the file. To judge a torn tail it reads the
// bytes after a bad entry whole when they are at most 32 MiB; past that it
// recognises a zero-filled tail and reports other damage as corruption.
//
// The seq of the first entry is taken from the file name when it starts with
// 20 digits, as tidwall's segment names and the broken copies do; otherwise
// it is taken from the first frame, and a bad first entry is then reported as
// corruption, never as a torn tail.
//
// ReadFile reads through vfs.OS; the journal reads its own files through
// its FS (readFile).
func ReadFile(path string) iter.Seq2[Entry, error] {
	return readFile(vfs.OS, path)
}

// readFile is ReadFile through fsys.
func readFile(fsys vfs.FS, path string) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		f, size, err := openRegular(fsys, path)
		if err != nil {
			yield(Entry{}, fmt.Errorf("journal: %w", err))
			return
		}
		defer f.Close()
		readEntries(path, f, size, yield)
	}
}

// decodeFile is ReadFile on data already read from path.
func decodeFile(path string, data []byte) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		readEntries(path, bytes.NewReader(data), int64(len(data)), yield)
	}
}

// readEntries yields the entries of the file path, of size bytes, read
// through f, as ReadFile says.
func readEntries(path string, f io.ReaderAt, size int64, yield func(Entry, error) bool) {
	first, _ := parseSeqName(filepath.Base(path))
	r := fileReader{f: f, size: size, seq: first}
	for {
		e, ok, err := r.next()
		if err != nil {
			var cerr *CorruptError
			if errors.As(err, &cerr) {
				cerr.File = path
				yield(Entry{Offset: cerr.Offset, Seq: cerr.Seq}, cerr)
			} else {
				yield(Entry{}, fmt.Errorf("journal: reading %s: %w", path, err))
			}
			return
		}
		if !ok || !yield(e, nil) {
			return
		}
	}
}

// Files returns the paths of the segment files of the journal in dir, in
// seq order, leaving out tidwall's in-progress truncations (".START",
// ".END") that tidwall settles when it next opens the folder.
func Files(dir string) ([]string, error) {
	l, err := listDir(vfs.OS, dir)
	if err != nil {
		return nil, err
	}
	paths := make([]string, len(l.segments))
	for i, s := range l.segments {
		paths[i] = filepath.Join(dir, s.name)
	}
	return paths, nil
}

// segmentName returns the name tidwall gives the segment whose first entry
// is seq.
func segmentName(seq uint64) string {
	return fmt.Sprintf("%020d", seq)
}

// parseSeqName returns the seq encoded in the first 20 characters of a
// file name, as tidwall reads its segment names: 20 decimal digits, not zero.
func parseSeqName(name string) (uint64, bool) {
	if len(name) < 20 {
		return 0, false
	}
	for _, c := range name[:20] {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	seq, err := strconv.ParseUint(name[:20], 10, 64)
	if err != nil || seq == 0 {
		return 0, false
	}
	return seq, true
}
