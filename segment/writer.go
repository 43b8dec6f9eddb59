package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/ebbdb/ebb/engine/vfs"
)

// Handle locates a record inside a segment file: the number of its data
// block (counting from 0) and its byte offset in the decompressed block.
type Handle struct {
	Block uint32
	Off   uint32
}

// String returns "block/offset".
func (h Handle) String() string { return fmt.Sprintf("%d/%d", h.Block, h.Off) }

// WriterOptions configures a Writer. Use DefaultWriterOptions and change
// what you need: the zero value means uncompressed blocks.
type WriterOptions struct {
	// BlockSize is the target uncompressed size of a data block. Records
	// are added to a block until it reaches BlockSize; a record larger than
	// BlockSize gets a block of its own. 0 means DefaultBlockSize; it must
	// not exceed MaxBlockSize.
	BlockSize int
	// Compression is the codec for data blocks and the index block. Its zero
	// value is CompressionNone; DefaultWriterOptions sets CompressionZstd.
	// A block that does not shrink is stored uncompressed either way.
	Compression Compression
	// Container is the container number that every record added must carry.
	// It is recorded in the footer's Stats.
	Container uint32
	// SyncEvery, when not 0, makes the writer fsync the file each time
	// that many bytes more were written to it, besides the fsync of Finish:
	// many short flushes instead of one long one, so that the fsyncs of
	// other files (a journal's) never wait long behind this one.
	SyncEvery int64
	// Cache, when not nil, takes a copy of each data block as it is
	// written, keyed by FileNum (the ReaderOptions.FileNum the file will be
	// read with), while it has room without evicting anything: a file just
	// written is then read without decompressing it. Abort drops them.
	Cache   *Cache
	FileNum uint64
}

// DefaultBlockSize is the block size used when WriterOptions.BlockSize is 0.
const DefaultBlockSize = 32 << 10

// DefaultWriterOptions returns the recommended options: 32 KiB blocks,
// compressed with zstd, for container 0.
func DefaultWriterOptions() WriterOptions {
	return WriterOptions{BlockSize: DefaultBlockSize, Compression: CompressionZstd}
}

// Writer writes one new segment file: records in any order, then Finish.
// It is not safe for concurrent use.
type Writer struct {
	f       File
	discard func() error // removes the file; nil: nothing to remove
	path    string
	opts    WriterOptions
	off     int64  // bytes written to f
	block   []byte // encoded records of the current data block
	out     []byte // scratch: the current block, framed
	pending []byte // bytes written but not yet handed to f (up to writeChunk)
	// unsynced counts the bytes handed to f since its last fsync.
	unsynced int64
	table    []byte // u32 length of every data block written
	index    []byte // index entries, encoded as in index.go
	stats    Stats
	err      error // sticky: the first failure; the writer is unusable after it
	done     bool  // Finish succeeded
}

var errWriterClosed = errors.New("segment: writer is finished or aborted")

// File is what a Writer writes a segment to: a new, empty file.
type File interface {
	io.Writer
	Sync() error
	Close() error
}

// Create creates a new segment file at path, failing if it exists. The
// caller picks the name, and after Finish fsyncs the directory. It writes
// through vfs.OS, for tests and offline callers; the engine creates its
// files through its own vfs.FS and calls NewWriter.
func Create(path string, opts WriterOptions) (*Writer, error) {
	if err := checkWriterOptions(&opts); err != nil {
		return nil, err
	}
	f, err := vfs.CreateExcl(vfs.OS, path)
	if err != nil {
		return nil, fmt.Errorf("segment: %w", err)
	}
	return NewWriter(f, path, opts, func() error { return vfs.OS.Remove(path) })
}

// NewWriter starts a segment in f, a new, empty file named path (the name
// is used in errors). discard removes the file: Abort calls it, and so does
// NewWriter if it fails; nil means there is nothing to remove. The Writer
// owns f from then on: Finish and Abort close it, and so does a failing
// NewWriter.
func NewWriter(f File, path string, opts WriterOptions, discard func() error) (*Writer, error) {
	if err := checkWriterOptions(&opts); err != nil {
		f.Close()
		if discard != nil {
			discard()
		}
		return nil, err
	}
	w := &Writer{
		f:       f,
		discard: discard,
		path:    path,
		opts:    opts,
		block:   make([]byte, 0, opts.BlockSize),
		stats:   Stats{Container: opts.Container, Compression: opts.Compression},
	}
	w.write(appendFileHeader(nil))
	if w.err != nil {
		err := w.err
		w.Abort()
		return nil, err
	}
	return w, nil
}

// checkWriterOptions fills in the default block size and checks opts.
func checkWriterOptions(opts *WriterOptions) error {
	if opts.BlockSize == 0 {
		opts.BlockSize = DefaultBlockSize
	}
	if opts.BlockSize < 0 || opts.BlockSize > MaxBlockSize {
		return fmt.Errorf("segment: block size %d is not in 1..%d", opts.BlockSize, MaxBlockSize)
	}
	if !opts.Compression.valid() {
		return fmt.Errorf("segment: unknown compression %s", opts.Compression)
	}
	return nil
}

// Add appends r to the segment and returns where it will be found. r is
// encoded at once, so it may be reused after Add returns. r.Container must
// be the writer's container, and r's encoding must fit in MaxBlockSize.
func (w *Writer) Add(r *Record) (Handle, error) {
	if w.err != nil {
		return Handle{}, w.err
	}
	if w.done {
		return Handle{}, errWriterClosed
	}
	if !r.Op.valid() {
		return Handle{}, fmt.Errorf("segment: record %q: invalid op %s", r.ID, r.Op)
	}
	if r.Container != w.opts.Container {
		return Handle{}, fmt.Errorf("segment: record %q of container %d added to a segment of container %d",
			r.ID, r.Container, w.opts.Container)
	}
	size := RecordSize(r)
	if size > MaxBlockSize {
		return Handle{}, fmt.Errorf("segment: record %q: %d bytes exceed the %d-byte limit", r.ID, size, MaxBlockSize)
	}
	if len(w.block) > 0 && len(w.block)+size > w.opts.BlockSize {
		if err := w.flush(); err != nil {
			return Handle{}, err
		}
	}
	h := Handle{Block: uint32(len(w.table) / 4), Off: uint32(len(w.block))}
	w.block = AppendRecord(w.block, r)
	w.index = appendIndexEntry(w.index, r, h.Off == 0, uint32(size))

	s := &w.stats
	if s.Records == 0 {
		s.MinSeq, s.MaxSeq, s.MinTS, s.MaxTS = r.Seq, r.Seq, r.TS, r.TS
	}
	s.MinSeq, s.MaxSeq = min(s.MinSeq, r.Seq), max(s.MaxSeq, r.Seq)
	s.MinTS, s.MaxTS = min(s.MinTS, r.TS), max(s.MaxTS, r.TS)
	s.Records++
	if r.Op == OpPut {
		s.Puts++
	} else {
		s.Deletes++
	}
	s.RawBytes += int64(size)

	if len(w.block) >= w.opts.BlockSize {
		if err := w.flush(); err != nil {
			return Handle{}, err
		}
	}
	return h, nil
}

// Size returns the bytes written so far plus the uncompressed size of the
// block being filled: an estimate of the file's size.
func (w *Writer) Size() int64 { return w.off + int64(len(w.block)) }

// Finish writes the last data block, the index block, the table block and
// the footer, fsyncs the file and closes it. It returns the footer's Stats.
// The caller fsyncs the directory. If Finish fails, call Abort.
func (w *Writer) Finish() (Stats, error) {
	if w.err != nil {
		return Stats{}, w.err
	}
	if w.done {
		return Stats{}, errWriterClosed
	}
	if err := w.flush(); err != nil {
		return Stats{}, err
	}
	f := footer{indexOff: uint64(w.off)}
	w.out = appendBlock(w.out[:0], w.index, w.opts.Compression, kindIndex)
	f.indexLen = uint32(len(w.out))
	w.write(w.out)
	w.out = appendBlock(w.out[:0], w.table, CompressionNone, kindTable)
	f.tableLen = uint32(len(w.out))
	w.write(w.out)
	w.stats.FileBytes = w.off + footerSize
	f.stats = w.stats
	b := f.encode()
	w.write(b[:])
	w.drain()
	if w.err != nil {
		return Stats{}, w.err
	}
	if err := w.f.Sync(); err != nil {
		w.err = fmt.Errorf("segment %s: fsync: %w", w.path, err)
		return Stats{}, w.err
	}
	if err := w.f.Close(); err != nil {
		w.err = fmt.Errorf("segment %s: close: %w", w.path, err)
		return Stats{}, w.err
	}
	w.done = true
	w.block, w.out, w.index, w.table, w.pending = nil, nil, nil, nil, nil
	return w.stats, nil
}

// Abort closes the file and removes it. After a successful Finish it does
// nothing, so `defer w.Abort()` is safe.
func (w *Writer) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	if w.err == nil {
		w.err = errWriterClosed
	}
	if w.opts.Cache != nil {
		w.opts.Cache.EvictFile(w.opts.FileNum, uint32(w.stats.Blocks)) // the blocks flushed, the ones it cached
	}
	w.f.Close() // may already be closed by a failed Finish
	if w.discard == nil {
		return nil
	}
	if err := w.discard(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("segment: remove %s: %w", w.path, err)
	}
	return nil
}

// flush writes the current data block, if it holds any records.
func (w *Writer) flush() error {
	if len(w.block) == 0 {
		return w.err
	}
	w.out = appendBlock(w.out[:0], w.block, w.opts.Compression, kindData)
	w.write(w.out)
	if w.opts.Cache != nil && w.err == nil {
		w.opts.Cache.addFor(nil, cacheKey{w.opts.FileNum, uint32(w.stats.Blocks)}, w.block, false)
	}
	w.table = binary.LittleEndian.AppendUint32(w.table, uint32(len(w.out)))
	w.stats.Blocks++
	w.block = w.block[:0]
	if cap(w.block) > 4*w.opts.BlockSize {
		w.block = make([]byte, 0, w.opts.BlockSize) // let a giant record's buffer go
	}
	return w.err
}

// writeChunk is how many bytes a Writer gathers before it writes them to
// the file: one system call for many blocks.
const writeChunk = 256 << 10

// write appends b to the file (through the Writer's buffer), recording the
// first error.
func (w *Writer) write(b []byte) {
	if w.err != nil {
		return
	}
	w.pending = append(w.pending, b...)
	w.off += int64(len(b))
	if len(w.pending) >= writeChunk {
		w.drain()
	}
}

// drain writes the buffered bytes to the file.
func (w *Writer) drain() {
	if w.err != nil || len(w.pending) == 0 {
		return
	}
	if _, err := w.f.Write(w.pending); err != nil {
		w.err = fmt.Errorf("segment %s: write: %w", w.path, err)
	}
	w.unsynced += int64(len(w.pending))
	w.pending = w.pending[:0]
	if w.opts.SyncEvery > 0 && w.unsynced >= w.opts.SyncEvery && w.err == nil {
		if err := w.f.Sync(); err != nil {
			w.err = fmt.Errorf("segment %s: fsync: %w", w.path, err)
		}
		w.unsynced = 0
	}
}
