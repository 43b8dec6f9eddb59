package engine

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/ebbdb/ebb/compactor"
	"github.com/ebbdb/ebb/engine/vfs"
	"github.com/ebbdb/ebb/segment"
)

// segFile is an open segment file shared by readers. A reader takes a
// reference under the container's lock before it reads, so the compactor
// can swap the file out at any moment: the last reference closes it.
type segFile struct {
	num  uint32
	r    *segment.Reader
	fs   vfs.FS       // where remove unlinks it
	refs atomic.Int32 // one for the container's map, one per reader in flight

	// What compaction needs to drop or rewrite the file without bringing an
	// older version of an item back (see compactor): a filter of the ids in
	// it, its lowest sequence, and the files that may hold older versions
	// of its ids (guarded by the container's lock).
	ids    *compactor.IDFilter
	minSeq uint64
	hides  map[uint32]struct{}
	// expiresBy is when every record in the file will have expired, as
	// computed when it was written or opened (index.Never if some never
	// do, 0 if unknown): the picker's hint to wait for a whole-file drop.
	expiresBy int64
}

func newSegFile(fsys vfs.FS, num uint32, r *segment.Reader) *segFile {
	f := &segFile{num: num, r: r, fs: fsys, minSeq: r.Stats().MinSeq, hides: map[uint32]struct{}{}}
	f.refs.Store(1)
	return f
}

// mayHoldOlder reports whether f may hold a version of id older than seq.
func (f *segFile) mayHoldOlder(id string, seq uint64) bool {
	return f.minSeq < seq && (f.ids == nil || f.ids.MayContain(id))
}

// noteHidden adds to f.hides every file of others that may hold a version
// of id older than seq.
func (f *segFile) noteHidden(id string, seq uint64, others map[uint32]*segFile) {
	for n, g := range others {
		if _, known := f.hides[n]; !known && g.mayHoldOlder(id, seq) {
			f.hides[n] = struct{}{}
		}
	}
}

// hidesAny reports whether f may hide a version in a file of files.
func (f *segFile) hidesAny(files map[uint32]*segFile) bool {
	for n := range f.hides {
		if files[n] != nil {
			return true
		}
	}
	return false
}

func (f *segFile) acquire() { f.refs.Add(1) }

func (f *segFile) release() {
	if f.refs.Add(-1) == 0 {
		f.r.Close()
	}
}

// remove unlinks the file and drops the container's reference. Readers in
// flight keep their open descriptor until they finish. A file that cannot
// be unlinked is an orphan, which the next Open removes: no manifest names
// it.
func (f *segFile) remove() {
	f.fs.Remove(f.r.Path())
	f.release()
}

// openSegmentFile opens segment file path of the database for reading: a
// file of the operating system is mapped into memory (vfs.Map), so that a
// point read that misses the block cache costs no read call; a file of
// another FS (the tests' fault-injecting ones) is read through it.
func openSegmentFile(fsys vfs.FS, path string, opts segment.ReaderOptions) (*segment.Reader, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("segment: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("segment: %w", err)
	}
	data, unmap, ok, err := vfs.Map(fsys, f, info.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("segment %s: %w", path, err)
	}
	if !ok {
		return segment.OpenFile(f, info.Size(), path, opts)
	}
	return segment.OpenFile(&mappedFile{data: data, unmap: unmap, f: f}, info.Size(), path, opts)
}

// mappedFile is a segment file mapped into memory: the segment Reader reads
// its data blocks through Bytes (guarding against faults itself), and what
// it reads once at open through ReadAt, which reads the file (see
// segment.Mapped). Close unmaps it and closes the file.
type mappedFile struct {
	data  []byte
	unmap func() error
	f     vfs.File
}

func (m *mappedFile) Bytes() []byte { return m.data }

func (m *mappedFile) ReadAt(b []byte, off int64) (int, error) { return m.f.ReadAt(b, off) }

func (m *mappedFile) Close() error { return errors.Join(m.unmap(), m.f.Close()) }
