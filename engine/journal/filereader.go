package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"

	"github.com/ebbdb/ebb/engine/vfs"
)

// Bounds on what ReadFile holds in memory, whatever the size of the file.
const (
	// bigFrame is the frame size above which ReadFile checks a frame's
	// checksum while streaming it, before it allocates the frame: a length
	// prefix read from bytes that are not a journal's costs no memory.
	bigFrame = 1 << 20
	// maxJudgedTail bounds the bytes after a bad entry that ReadFile reads
	// to judge a torn tail (by searching them for a later valid entry).
	// Past it, only a zero-filled tail is recognised, streaming; other
	// damage is reported as corruption.
	maxJudgedTail = 32 << 20
	// scanChunk is the buffer used to stream through bytes.
	scanChunk = 64 << 10
)

// errNotRegular is returned for a path that is not a regular file (a
// folder, a fifo, a device): reading one could block or never end.
var errNotRegular = errors.New("not a regular file")

// openRegular opens path through fsys for reading if it is a regular file,
// and returns its size.
func openRegular(fsys vfs.FS, path string) (vfs.File, int64, error) {
	fi, err := fsys.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s: %w (%s)", path, errNotRegular, fi.Mode().Type())
	}
	f, err := fsys.Open(path)
	if err != nil {
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// fileReader decodes a segment file entry by entry, holding one entry at a
// time: the streaming form of fileDecoder, with the same verdicts.
type fileReader struct {
	f    io.ReaderAt
	size int64
	off  int64
	seq  uint64 // as fileDecoder.seq
	// quick skips the judgement of damage (bad returns at once): for
	// telling whether a file starts with an entry at all.
	quick bool
	// mem, once set (by bad), decodes the rest of the file from one read
	// of it, so that the entries and the verdict come from the same bytes,
	// even in a file written to meanwhile (a live journal's tail).
	mem *fileDecoder
}

// StartsWithEntry reports whether path is a regular file that starts with a
// valid journal entry. It reads the first entry only (streaming its
// checksum if it is large), so it is cheap on a file of any size; the
// offline tools use it to tell a journal file from an unknown one. It reads
// through vfs.OS.
func StartsWithEntry(path string) bool {
	f, size, err := openRegular(vfs.OS, path)
	if err != nil {
		return false
	}
	defer f.Close()
	first, _ := parseSeqName(filepath.Base(path))
	r := fileReader{f: f, size: size, seq: first, quick: true}
	_, ok, err := r.next()
	return ok && err == nil
}

// next decodes the entry at r.off. It returns ok=false at the end of the
// file, a *CorruptError at the first bad entry, or an I/O error; after an
// error it must not be called again. Each entry's payload is its own.
func (r *fileReader) next() (e Entry, ok bool, err error) {
	if r.mem != nil {
		e, ok, cerr := r.mem.next()
		if cerr != nil {
			return Entry{}, false, cerr
		}
		return e, ok, nil
	}
	if r.off >= r.size {
		return Entry{}, false, nil
	}
	var hdr [binary.MaxVarintLen64]byte
	h := hdr[:min(int64(len(hdr)), r.size-r.off)]
	if _, err := r.f.ReadAt(h, r.off); err != nil && err != io.EOF {
		return Entry{}, false, err
	}
	n, w := binary.Uvarint(h)
	if w <= 0 || n < minFrameSize || n > uint64(r.size-r.off-int64(w)) {
		return r.bad()
	}
	at := r.off + int64(w)
	if n > bigFrame {
		match, err := r.checksumMatches(at, int64(n))
		if err != nil {
			return Entry{}, false, err
		}
		if !match {
			return r.bad()
		}
	}
	frame := make([]byte, n)
	if _, err := r.f.ReadAt(frame, at); err != nil && err != io.EOF {
		return Entry{}, false, err
	}
	seq, payload, reason := checkFrame(frame, r.seq)
	if reason != "" {
		return r.bad()
	}
	e = Entry{Offset: r.off, Seq: seq, Payload: payload}
	r.off = at + int64(n)
	r.seq = seq + 1
	return e, true, nil
}

// checksumMatches streams the frame of n bytes at off and reports whether
// its checksum holds.
func (r *fileReader) checksumMatches(off, n int64) (bool, error) {
	buf := make([]byte, scanChunk)
	if _, err := r.f.ReadAt(buf[:crcSize], off); err != nil {
		return false, err
	}
	want := binary.LittleEndian.Uint32(buf)
	crc := uint32(0)
	for p := off + crcSize; p < off+n; {
		k := min(int64(len(buf)), off+n-p)
		if _, err := r.f.ReadAt(buf[:k], p); err != nil && err != io.EOF {
			return false, err
		}
		crc = crc32.Update(crc, castagnoli, buf[:k])
		p += k
	}
	return crc == want, nil
}

// bad describes the bad entry at r.off as fileDecoder would: when the rest
// of the file is at most maxJudgedTail bytes it reads it whole and decodes
// it in memory from there on (mem), and past that tells a zero-filled tail
// (torn) from other damage (corruption) by streaming.
func (r *fileReader) bad() (Entry, bool, error) {
	rest := r.size - r.off
	if r.quick {
		return Entry{}, false, &CorruptError{Offset: r.off, Seq: r.seq, Reason: "bad entry"}
	}
	if rest <= maxJudgedTail {
		data := make([]byte, rest)
		if _, err := r.f.ReadAt(data, r.off); err != nil && err != io.EOF {
			return Entry{}, false, err
		}
		r.mem = &fileDecoder{data: data, base: r.off, seq: r.seq, after: r.off > 0}
		return r.next()
	}
	zero, err := r.zeroFrom(r.off)
	if err != nil {
		return Entry{}, false, err
	}
	if zero {
		d := fileDecoder{data: make([]byte, 1), base: r.off, seq: r.seq}
		return Entry{}, false, d.bad("zero-filled tail") // no frame in zeros
	}
	return Entry{}, false, &CorruptError{Offset: r.off, Seq: r.seq, Reason: fmt.Sprintf(
		"bad entry; the %d bytes from it on are more than the %d searched for a later valid entry, so it is not treated as a torn tail",
		rest, int64(maxJudgedTail))}
}

// zeroFrom reports whether every byte from off to the end of the file is 0.
func (r *fileReader) zeroFrom(off int64) (bool, error) {
	buf := make([]byte, scanChunk)
	for p := off; p < r.size; {
		k := min(int64(len(buf)), r.size-p)
		if _, err := r.f.ReadAt(buf[:k], p); err != nil && err != io.EOF {
			return false, err
		}
		if !allZero(buf[:k]) {
			return false, nil
		}
		p += k
	}
	return true, nil
}
