package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/ebbdb/ebb/engine/vfs"
)

// ReaderOptions configures a Reader.
type ReaderOptions struct {
	// Cache is the block cache that Get reads through. nil: every Get reads
	// and decompresses its block.
	Cache *Cache
	// FileNum names the file in Cache. Readers sharing a Cache must have
	// distinct FileNums.
	FileNum uint64
}

// Reader reads a finished segment file. Open checks the footer, the file
// header and the block table; blocks and the index are checked as they are
// read, and Verify checks everything. A Reader is safe for concurrent use:
// all reads are positioned (pread), or made from a mapping (Mapped).
type Reader struct {
	ra     io.ReaderAt
	mapped []byte // the file's bytes when ra is Mapped
	close  func() error
	path   string
	opts   ReaderOptions
	ft     footer
	offs   []int64 // offs[i] is the file offset of data block i; offs[Blocks] is the index block's
	// closed is set by Close, so that a block of the file still on its way
	// into the cache is not kept after the file's blocks were evicted.
	closed atomic.Bool
}

// Mapped is a file whose bytes are all in memory, a memory-mapped file: a
// Reader given one reads data blocks from Bytes, decoding them straight
// from it, with no read call and no copy of the stored bytes. The parts
// read once, when the file is opened (its footer, header, table and index
// blocks), it reads with ReadAt: one read call costs less than the page
// faults of a first touch of the mapping, several microseconds each on a
// virtual machine. Bytes must stay valid until the Reader is closed;
// nothing a Reader returns aliases them. A fault while touching them (the
// file was cut short underneath) is reported as an error, not a crash.
type Mapped interface {
	io.ReaderAt
	Bytes() []byte
}

// RecordAt is a record yielded by Reader.Records, with where it was found.
type RecordAt struct {
	Handle Handle
	Offset int64 // file offset of the record's block
	Record Record
}

// Open opens the segment file at path and checks its footer, header and
// block table. Damage found returns a *CorruptError (wrapping ErrCorrupt).
// It reads through vfs.OS, for the offline tools and tests; the engine
// opens its files through its own vfs.FS and calls OpenFile.
func Open(path string, opts ReaderOptions) (*Reader, error) {
	f, err := vfs.OS.Open(path)
	if err != nil {
		return nil, fmt.Errorf("segment: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("segment: %w", err)
	}
	return OpenFile(f, fi.Size(), path, opts)
}

// ReadAtCloser is an open segment file, as OpenFile takes it.
type ReadAtCloser interface {
	io.ReaderAt
	io.Closer
}

// OpenFile is Open on a file already open, of size bytes, named path. The
// Reader owns f: Close closes it, and so does OpenFile if it fails.
func OpenFile(f ReadAtCloser, size int64, path string, opts ReaderOptions) (*Reader, error) {
	r, err := NewReader(f, size, path, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.close = f.Close
	return r, nil
}

// NewReader reads a segment of size bytes from ra, as Open does from a file;
// name is used in errors and returned by Path. Close does not close ra.
func NewReader(ra io.ReaderAt, size int64, name string, opts ReaderOptions) (*Reader, error) {
	r := &Reader{ra: ra, path: name, opts: opts}
	if m, ok := ra.(Mapped); ok && int64(len(m.Bytes())) == size {
		r.mapped = m.Bytes()
	}
	if size < fileHeaderSize+2*blockHeaderSize+footerSize {
		return nil, r.corrupt(atHeader(), "file of %d bytes is too short to be a segment", size)
	}
	var tail [footerSize]byte
	if err := r.pread(tail[:], size-footerSize); err != nil {
		return nil, err
	}
	ft, err := decodeFooter(tail[:], size)
	if err != nil {
		return nil, r.damaged(atFooter(size), err, "")
	}
	r.ft = ft
	var head [fileHeaderSize]byte
	if err := r.pread(head[:], 0); err != nil {
		return nil, err
	}
	if err := checkFileHeader(head[:]); err != nil {
		return nil, r.damaged(atHeader(), err, "")
	}

	tableOff := int64(ft.indexOff) + int64(ft.indexLen)
	b := make([]byte, ft.tableLen) // bounded by the file size: decodeFooter checked
	if err := r.pread(b, tableOff); err != nil {
		return nil, err
	}
	table, _, err := decodeBlock(b, kindTable, int(4*ft.stats.Blocks), nil)
	if err != nil {
		return nil, r.damaged(atTable(tableOff), err, fmt.Sprintf("table block at offset %d", tableOff))
	}
	if int64(len(table)) != 4*ft.stats.Blocks {
		return nil, r.corrupt(atTable(tableOff), "table block at offset %d: %d bytes for %d blocks", tableOff, len(table), ft.stats.Blocks)
	}
	r.offs = make([]int64, ft.stats.Blocks+1)
	off := int64(fileHeaderSize)
	for i := range ft.stats.Blocks {
		r.offs[i] = off
		n := int64(binary.LittleEndian.Uint32(table[4*i:]))
		if n <= blockHeaderSize || n > blockHeaderSize+MaxBlockSize || off+n > int64(ft.indexOff) {
			return nil, r.corrupt(atBlock(int(i), off), "table block: block %d at offset %d has impossible length %d", i, off, n)
		}
		off += n
	}
	if off != int64(ft.indexOff) {
		return nil, r.corrupt(atTable(tableOff), "table block: data blocks end at %d, index block starts at %d", off, ft.indexOff)
	}
	r.offs[ft.stats.Blocks] = off
	return r, nil
}

// Stats returns the footer's summary of the segment.
func (r *Reader) Stats() Stats { return r.ft.stats }

// Path returns the file's path (or NewReader's name).
func (r *Reader) Path() string { return r.path }

// Close closes the file and drops its blocks from the cache.
func (r *Reader) Close() error {
	if r.opts.Cache != nil {
		r.closed.Store(true) // before the eviction: see Cache.addFor
		r.opts.Cache.EvictFile(r.opts.FileNum, uint32(r.ft.stats.Blocks))
	}
	if r.close != nil {
		return r.close()
	}
	return nil
}

// Index decodes the index block: one entry per record, in file order.
func (r *Reader) Index() ([]IndexEntry, error) { return r.AppendIndex(nil) }

// AppendIndex is Index appending the entries to dst, so that a caller
// decoding many files can reuse one slice (dst[:0]) for all of them. On an
// error dst is returned as it was, with the error. The entries' ids share
// one allocation.
func (r *Reader) AppendIndex(dst []IndexEntry) ([]IndexEntry, error) {
	return r.AppendIndexIn(dst, nil)
}

// AppendIndexIn is AppendIndex with the entries' ids held in ids (nil: an
// allocation of their own).
func (r *Reader) AppendIndexIn(dst []IndexEntry, ids *IDArena) ([]IndexEntry, error) {
	off := int64(r.ft.indexOff)
	bb := getBlockBuf()
	defer putBlockBuf(bb)
	bb.stored = grow(bb.stored, int(r.ft.indexLen))
	if err := r.pread(bb.stored, off); err != nil {
		return dst, err
	}
	raw, _, err := decodeBlock(bb.stored, kindIndex, maxIndexRaw(&r.ft.stats), bb.raw)
	if err == nil {
		bb.keepRaw(raw)
		var entries []IndexEntry
		if entries, err = decodeIndex(dst, raw, &r.ft.stats, bb, ids); err == nil {
			return entries, nil
		}
	}
	at := atIndex(off)
	var ee *entryError
	if errors.As(err, &ee) {
		at.entry = ee.entry
	}
	return dst, r.damaged(at, err, fmt.Sprintf("index block at offset %d", off))
}

// Get reads the record at h into rec, through the block cache if there is
// one. rec.Body is a fresh copy: it stays valid for as long as the caller
// holds it. rec.ID is left as it is when it already holds the record's id
// (a caller that knows the id saves an allocation), and is a copy
// otherwise.
//
// A block missing from the cache is decompressed into a pooled buffer, and
// the cache keeps a copy of it in the background (Cache.offer), so that the
// read that missed does not wait for the copy.
func (r *Reader) Get(h Handle, rec *Record) error {
	_, err := r.GetAppend(h, rec, nil)
	return err
}

// GetAppend is Get with rec.Body appended to buf, which it returns
// extended: a caller that copies the body elsewhere at once (renders it)
// passes a buffer it reuses, and saves an allocation per read. rec.Body is
// buf's from then on. On an error buf is returned as it was.
func (r *Reader) GetAppend(h Handle, rec *Record, buf []byte) ([]byte, error) {
	start := len(buf)
	_, err := r.View(h, rec, func(rec *Record) {
		buf = moveBody(buf, rec) // out of the block, whose memory the cache reuses
	})
	if err != nil {
		return buf[:start], err
	}
	return buf, nil
}

// View decodes the record at h into rec and calls fn with it in place:
// rec.Body is the block's own memory, valid only until fn returns (the
// cache reuses it), so fn copies out what it keeps and points rec.Body
// elsewhere or at nil; View sets it to nil otherwise. A caller that renders
// the body at once (a query's rows) saves the copy GetAppend makes. On a
// cache hit fn runs under the lock of the block's cache shard: it must be
// quick and must not call into the cache. View reports whether the block
// was found in the cache; fn is not called when it fails.
func (r *Reader) View(h Handle, rec *Record, fn func(rec *Record)) (cached bool, err error) {
	if int64(h.Block) >= r.ft.stats.Blocks {
		return false, fmt.Errorf("segment %s: handle %s: no such block", r.path, h)
	}
	c := r.opts.Cache
	if c != nil {
		found, err := c.view(cacheKey{r.opts.FileNum, h.Block}, func(raw []byte) error {
			if err := r.decodeAt(raw, h, rec); err != nil {
				return err
			}
			callView(rec, fn)
			return nil
		})
		if found {
			return true, err
		}
	}
	bb := getBlockBuf()
	raw, err := r.readBlock(h.Block, bb)
	if err == nil {
		err = r.decodeAt(raw, h, rec)
	}
	if err != nil {
		putBlockBuf(bb)
		return false, err
	}
	callView(rec, fn)
	if c != nil {
		c.offer(r, cacheKey{r.opts.FileNum, h.Block}, bb, raw) // bb is the cache's now
	} else {
		putBlockBuf(bb)
	}
	return false, nil
}

// callView is fn(rec) for a record decoded in place, with rec.Body cleared
// after it unless fn pointed it elsewhere.
func callView(rec *Record, fn func(rec *Record)) {
	body := rec.Body
	fn(rec)
	if len(body) > 0 && len(rec.Body) > 0 && &rec.Body[0] == &body[0] {
		rec.Body = nil
	}
}

// moveBody appends rec.Body to buf and points rec.Body at the copy; a nil
// Body (a delete's) stays nil.
func moveBody(buf []byte, rec *Record) []byte {
	if rec.Body == nil {
		return buf
	}
	start := len(buf)
	buf = append(buf, rec.Body...)
	rec.Body = buf[start:len(buf):len(buf)]
	return buf
}

// Prefetch reads block blk into the cache unless it is there: for a caller
// that knows which blocks it will read soon (a query's rows) and has a core
// to spare, so that the decompression is not paid by the read. Without a
// cache it does nothing. Its only errors are those reading or checking the
// block.
func (r *Reader) Prefetch(blk uint32) error {
	c := r.opts.Cache
	if c == nil || int64(blk) >= r.ft.stats.Blocks {
		return nil
	}
	key := cacheKey{r.opts.FileNum, blk}
	if !c.wants(r, key) {
		return nil
	}
	return r.load(blk, true)
}

// load reads block blk and adds it to the cache, evicting others for room
// if evict is set.
func (r *Reader) load(blk uint32, evict bool) error {
	bb := getBlockBuf()
	defer putBlockBuf(bb)
	raw, err := r.readBlock(blk, bb)
	if err != nil {
		return err
	}
	r.opts.Cache.addFor(r, cacheKey{r.opts.FileNum, blk}, raw, evict)
	return nil
}

// Warm reads the file's data blocks into the cache, in file order, as long
// as the cache has room for them without evicting anything and stop
// returns false (it is asked between blocks): for a store just opened,
// whose reads would otherwise each decompress a block until the cache has
// them. Blocks cached already are skipped. It reports whether it stopped
// because the cache is full. Without a cache it does nothing.
func (r *Reader) Warm(stop func() bool) (full bool, err error) {
	c := r.opts.Cache
	if c == nil {
		return false, nil
	}
	for blk := range uint32(r.ft.stats.Blocks) {
		if c.full() {
			return true, nil
		}
		if stop() || r.closed.Load() {
			return false, nil
		}
		key := cacheKey{r.opts.FileNum, blk}
		if c.Has(key.file, key.block) || !c.hasRoom(key) {
			continue
		}
		if err := r.load(blk, false); err != nil {
			return false, err
		}
	}
	return false, nil
}

// decodeAt decodes the record at h from raw, its decompressed block.
func (r *Reader) decodeAt(raw []byte, h Handle, rec *Record) error {
	if uint64(h.Off) >= uint64(len(raw)) {
		return fmt.Errorf("segment %s: handle %s: offset beyond the block's %d bytes", r.path, h, len(raw))
	}
	if _, err := decodeRecord(raw[h.Off:], rec); err != nil {
		off := r.offs[h.Block]
		return r.damaged(atRecord(int(h.Block), off, int(h.Off)), err,
			fmt.Sprintf("block %d at offset %d: record at %d", h.Block, off, h.Off))
	}
	return nil
}

// Records yields every record in file order with its Handle. Each record's
// Body aliases a buffer that belongs to it and its block-mates only, so it
// stays valid after the loop moves on. The first error ends the sequence.
func (r *Reader) Records() iter.Seq2[RecordAt, error] { return r.records(true) }

// records is Records; with keep false, Bodies alias a buffer reused for the
// next block, which saves an allocation per block for Verify.
func (r *Reader) records(keep bool) iter.Seq2[RecordAt, error] {
	return func(yield func(RecordAt, error) bool) {
		var bb *blockBuf
		if !keep {
			bb = getBlockBuf()
			defer putBlockBuf(bb)
		}
		for blk := range uint32(r.ft.stats.Blocks) {
			raw, err := r.readBlock(blk, bb)
			if err != nil {
				yield(RecordAt{}, err)
				return
			}
			at := RecordAt{Handle: Handle{Block: blk}, Offset: r.offs[blk]}
			for int(at.Handle.Off) < len(raw) {
				n, err := decodeRecord(raw[at.Handle.Off:], &at.Record)
				if err == nil && at.Record.Container != r.ft.stats.Container {
					err = corruptf("record of container %d in a segment of container %d",
						at.Record.Container, r.ft.stats.Container)
				}
				if err != nil {
					yield(RecordAt{}, r.damaged(atRecord(int(blk), at.Offset, int(at.Handle.Off)), err,
						fmt.Sprintf("block %d at offset %d: record at %d", blk, at.Offset, at.Handle.Off)))
					return
				}
				if !yield(at, nil) {
					return
				}
				at.Handle.Off += uint32(n)
			}
			if len(raw) == 0 {
				yield(RecordAt{}, r.corrupt(atBlock(int(blk), at.Offset), "block %d at offset %d: empty", blk, at.Offset))
				return
			}
		}
	}
}

// readBlock reads and checks data block blk. With bb nil the result is
// freshly allocated and may be kept (cached); otherwise it lives in bb.
// Either way it never aliases a mapping.
func (r *Reader) readBlock(blk uint32, bb *blockBuf) (raw []byte, err error) {
	own := bb == nil
	if own {
		bb = getBlockBuf()
		defer putBlockBuf(bb)
	}
	off := r.offs[blk]
	n := r.offs[blk+1] - off
	var stored []byte
	if r.mapped != nil {
		if off+n > int64(len(r.mapped)) {
			return nil, r.corrupt(atBlock(int(blk), off), "block %d at offset %d runs past the %d bytes mapped", blk, off, len(r.mapped))
		}
		stored = r.mapped[off : off+n : off+n]
		defer r.catchFault(&err, off)
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	} else {
		bb.stored = grow(bb.stored, int(n))
		if err := r.readAt(bb.stored, off); err != nil {
			return nil, err
		}
		stored = bb.stored
	}
	var scratch []byte
	if !own {
		scratch = bb.raw
	}
	raw, _, err = decodeBlock(stored, kindData, MaxBlockSize, scratch)
	if err != nil {
		return nil, r.damaged(atBlock(int(blk), off), err, fmt.Sprintf("block %d at offset %d", blk, off))
	}
	if Compression(stored[8]) == CompressionNone {
		// raw is the stored payload: the pooled read buffer or the mapping.
		switch {
		case own:
			return bytes.Clone(raw), nil
		case r.mapped != nil:
			bb.raw = append(bb.raw[:0], raw...)
			return bb.raw, nil
		}
		return raw, nil
	}
	if !own {
		bb.raw = raw[:0] // the decompression buffer for the next block
	}
	return raw, nil
}

// catchFault turns a memory fault met while reading the mapping at off (a
// file cut short while mapped) into an error; every read of the mapping
// defers it, with debug.SetPanicOnFault on.
func (r *Reader) catchFault(err *error, off int64) {
	if p := recover(); p != nil {
		if _, ok := p.(interface{ Addr() uintptr }); !ok {
			panic(p) // not a memory fault (debug.SetPanicOnFault)
		}
		*err = fmt.Errorf("segment %s: reading the mapped file at offset %d faulted (was it cut short?): %v: %w", r.path, off, p, ErrCorrupt)
	}
}

// readAt fills b from offset off; a short read means the file shrank.
func (r *Reader) readAt(b []byte, off int64) (err error) {
	if r.mapped != nil {
		if off < 0 || off+int64(len(b)) > int64(len(r.mapped)) {
			return r.corrupt(atUnknown(off), "read %d bytes at offset %d of a %d-byte mapping: file truncated", len(b), off, len(r.mapped))
		}
		defer r.catchFault(&err, off)
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		copy(b, r.mapped[off:])
		return nil
	}
	return r.pread(b, off)
}

// pread fills b from offset off with ReadAt, mapped file or not: for the
// parts of the file read once, at open (see Mapped).
func (r *Reader) pread(b []byte, off int64) error {
	n, err := r.ra.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return r.corrupt(atUnknown(off), "read %d bytes at offset %d, want %d: file truncated", n, off, len(b))
	}
	return fmt.Errorf("segment %s: %w", r.path, err)
}

// corrupt returns a *CorruptError for damage at w, saying what is wrong.
func (r *Reader) corrupt(w where, format string, args ...any) error {
	return corruptError(r.path, w, fmt.Sprintf(format, args...))
}

// damaged returns err, which a check of the part at w returned, as a
// *CorruptError whose reason is prefix (when not "") followed by err's
// message. An err that does not wrap ErrCorrupt is only wrapped.
func (r *Reader) damaged(w where, err error, prefix string) error {
	if !errors.Is(err, ErrCorrupt) {
		if prefix != "" {
			return fmt.Errorf("segment %s: %s: %w", r.path, prefix, err)
		}
		return fmt.Errorf("segment %s: %w", r.path, err)
	}
	reason := reasonOf(err)
	if prefix != "" {
		reason = prefix + ": " + reason
	}
	return corruptError(r.path, w, reason)
}

// blockBuf holds the buffers for reading and decompressing one block; they
// are pooled across reads that do not keep the block. ids and idEnds are
// decodeIndex's: the ids of an index block back to back, and where each
// ends.
type blockBuf struct {
	stored, raw, ids []byte
	idEnds           []uint32
}

var blockBufs = sync.Pool{New: func() any { return new(blockBuf) }}

// maxPooled is the largest buffer returned to the pool.
const maxPooled = 1 << 20

func getBlockBuf() *blockBuf { return blockBufs.Get().(*blockBuf) }

func putBlockBuf(bb *blockBuf) {
	if cap(bb.stored) > maxPooled {
		bb.stored = nil
	}
	if cap(bb.raw) > maxPooled {
		bb.raw = nil
	}
	if cap(bb.ids) > maxPooled {
		bb.ids, bb.idEnds = nil, nil
	}
	blockBufs.Put(bb)
}

// keepRaw remembers raw, just decoded from bb.stored, as the decompression
// buffer for the next block, unless it is bb.stored's own payload.
func (bb *blockBuf) keepRaw(raw []byte) {
	if Compression(bb.stored[8]) != CompressionNone {
		bb.raw = raw[:0]
	}
}

// grow returns b resized to n bytes, reallocating with room to spare.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n, max(n, 2*cap(b), 4096))
	}
	return b[:n]
}

// IsSegment reports whether the size bytes of r look like a segment file:
// they start or end with the segment magic. It checks no checksum, so a
// damaged segment file (whose header or whose footer is intact) is still
// one, which Open then refuses with a *CorruptError.
func IsSegment(r io.ReaderAt, size int64) bool {
	var b [len(magic)]byte
	for _, off := range []int64{0, size - int64(len(magic))} {
		if off < 0 {
			break
		}
		if n, _ := r.ReadAt(b[:], off); n == len(b) && string(b[:]) == magic {
			return true
		}
	}
	return false
}
