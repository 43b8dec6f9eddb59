package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/tidwall/wal"

	"github.com/ebbdb/ebb/engine/vfs"
	"github.com/ebbdb/ebb/segment"
)

// Errors returned by the journal, matched with errors.Is.
var (
	// ErrCorrupt is ebb's corruption sentinel (segment.ErrCorrupt): bytes
	// read back fail their checksum, carry the wrong seq or cannot be
	// framed. It comes wrapped in a *CorruptError naming the file, offset or
	// seq.
	ErrCorrupt = segment.ErrCorrupt
	// ErrFailed is returned by every call after a write or fsync failed:
	// tidwall does not roll back a failed write, so the handle cannot tell
	// what reached the disk. Close the journal and open it again; Open
	// repairs the tail and keeps every acknowledged entry.
	ErrFailed = errors.New("journal: failed after a write error; reopen it to recover")
	// ErrClosed is returned by calls made after Close.
	ErrClosed = errors.New("journal: closed")
	// ErrEmptyPayload is returned by Append when given no payload or an
	// empty one. Nothing is written.
	ErrEmptyPayload = errors.New("journal: empty payload")
)

// DefaultSegmentSize is the segment size used when Options.SegmentSize is 0.
const DefaultSegmentSize = 16 << 20

// maxRetainedBuffer bounds the scratch buffers an Append keeps for the next
// one; a larger batch gets buffers of its own.
const maxRetainedBuffer = 1 << 20

// Options configure a Journal. The zero value is ready to use.
type Options struct {
	// SegmentSize is the size in bytes at which tidwall starts a new segment
	// file. tidwall holds the whole tail segment in memory, and the segment
	// before it in its cache, so the journal uses up to about twice this much
	// memory. 0 means DefaultSegmentSize (16 MiB).
	SegmentSize int
	// NoSync skips the fsync after each Append: faster, but a crash of the
	// machine (not only of the process) may lose acknowledged entries. It is
	// the user's explicit choice; Sync makes everything appended durable.
	NoSync bool
	// Preallocate keeps zeros written ahead of the entries of the tail
	// file, so that appends overwrite blocks the file already holds and
	// their fsyncs commit no metadata (see Preallocation in the package
	// documentation). The engine sets it.
	Preallocate bool
	// Logger receives a Warn record for each repair Open makes. nil means
	// slog.Default().
	Logger *slog.Logger
	// FS is the file layer for the journal's own file operations (listing,
	// repair, removal, folder fsyncs). tidwall/wal writes its files with
	// package os; if FS implements vfs.Hook it is told before each of
	// tidwall's writes, fsyncs and file creations, and after each fsync
	// (see package vfs). nil means vfs.OS.
	FS vfs.FS
}

func (o Options) withDefaults() Options {
	if o.SegmentSize <= 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.FS = vfs.Default(o.FS)
	return o
}

// Journal is an open journal. Its methods are safe for concurrent use.
type Journal struct {
	dir    string
	opts   Options
	fs     vfs.FS
	hook   vfs.Hook    // nil with vfs.OS: no calls at all
	repair *RepairInfo // set by Open, then read-only

	// mu is the single owner of the tidwall log: every call into it, and
	// every field below, is made under mu.
	mu    sync.Mutex
	log   *wal.Log
	batch wal.Batch
	frame []byte
	// tailSize mirrors the bytes in tidwall's tail segment, so that Append
	// knows when tidwall started a new segment file and the folder needs
	// an fsync; tailPath is that file.
	tailSize int
	tailPath string
	// dirDirty records that a segment file was created since the folder was
	// last fsynced.
	dirDirty bool
	// filled is the tail file when zeroFillLocked wrote it ahead with
	// zeros, until cutFillLocked cuts them; fillEnd is where those zeros
	// end.
	filled   string
	fillEnd  int64
	fillStep int64 // the last window of zeros written; -1 after a failure
	failed   error
	closed   bool

	// syncMu serializes fsyncs of the tail (SyncTo), which run without mu so
	// that Write goes on meanwhile; it guards syncFile, a descriptor of the
	// file at syncPath (the tail when it was opened), opened through the FS
	// and used only to fsync it: fsync makes every write to the file
	// durable, whichever descriptor made it.
	syncMu   sync.Mutex
	syncFile vfs.File
	syncPath string
	// synced is the last seq known durable.
	synced atomic.Uint64

	// first and last are tidwall's FirstIndex and LastIndex, written under
	// mu and read without it. When the log is empty, first == last+1.
	first, last atomic.Uint64
	size        atomic.Int64
	// ahead is the bytes of zeros in the tail file past its entries
	// (zeroFillLocked): part of Size.
	ahead atomic.Int64
}

// Open opens the journal in dir, creating the folder if needed.
//
// Before handing the folder to tidwall it scans the last segment file. Zeros
// after its last entry (see Preallocation in the package documentation) are
// cut off, and nothing is reported. A torn tail (a bad entry with no valid
// frame after it) is repaired:
// a copy of the bytes cut (at most MaxBrokenCopy) is kept in brokenDir
// (created if needed) under the segment name of the first cut entry, the
// time and ".broken" (if it cannot be written, it is removed, the failure
// logged, and the cut made all the same); the file is cut at the end of its
// last good entry; the file and the folder are fsynced; the repair is logged
// at Warn and reported by Repair. Any other damage in that file is not
// repaired: Open returns a *CorruptError (wrapping ErrCorrupt) naming the
// file and offset, and changes nothing. Damage in other segment files is
// found by Replay.
func Open(dir, brokenDir string, opts Options) (*Journal, error) {
	if dir == "" || brokenDir == "" {
		return nil, errors.New("journal: Open needs a folder and a folder for broken copies")
	}
	opts = opts.withDefaults()
	fsys, hook := opts.FS, vfs.HookOf(opts.FS)
	if err := mkdirAllSync(fsys, dir); err != nil {
		return nil, err
	}
	l, err := listDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	if err := removeTemps(fsys, dir, l); err != nil {
		return nil, err
	}
	repair, err := repairTail(fsys, dir, brokenDir, l, opts.Logger)
	if err != nil {
		return nil, err
	}
	if hook != nil && len(l.segments) == 0 {
		// tidwall creates the first segment file.
		if err := hook.Before(vfs.OpCreate, filepath.Join(dir, segmentName(1))); err != nil {
			return nil, fmt.Errorf("journal: create the first segment: %w", err)
		}
	}
	log, err := openLog(dir, opts)
	if err != nil {
		if errors.Is(err, wal.ErrCorrupt) {
			return nil, fmt.Errorf("journal: tidwall/wal cannot open %s: %v: %w", dir, err, ErrCorrupt)
		}
		return nil, fmt.Errorf("journal: %w", err)
	}
	j := &Journal{dir: dir, opts: opts, fs: fsys, hook: hook, repair: repair, log: log}
	// tidwall may have created the first segment or settled a truncation.
	if err := vfs.SyncDir(fsys, dir); err != nil {
		log.Close()
		return nil, err
	}
	if err := j.relist(); err != nil {
		log.Close()
		return nil, err
	}
	first, err := log.FirstIndex()
	if err == nil {
		var last uint64
		last, err = log.LastIndex()
		j.first.Store(first)
		j.last.Store(last)
	}
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("journal: %w", err)
	}
	return j, nil
}

// openLog opens tidwall's log in dir. tidwall never fsyncs on its own
// (except a full segment file before it starts the next): the journal calls
// its Sync after each write, so that a write and its fsync are two steps
// that a vfs.Hook sees and can fail apart.
func openLog(dir string, opts Options) (*wal.Log, error) {
	return wal.Open(dir, &wal.Options{
		NoSync:           true,
		SegmentSize:      opts.SegmentSize,
		LogFormat:        wal.Binary,
		SegmentCacheSize: 1, // tidwall keeps the tail in memory as well
		AllowEmpty:       true,
		DirPerms:         0o750,
		FilePerms:        0o640,
	})
}

// relist reads the folder to refresh the size and the tail size after tidwall
// rewrote files.
func (j *Journal) relist() error {
	l, err := listDir(j.fs, j.dir)
	if err != nil {
		return err
	}
	if len(l.segments) == 0 {
		return fmt.Errorf("journal: no segment file in %s", j.dir)
	}
	j.tailSize = int(l.segments[len(l.segments)-1].size)
	j.tailPath = filepath.Join(j.dir, l.segments[len(l.segments)-1].name)
	j.size.Store(l.bytes)
	return nil
}

// Repair describes the torn tail Open cut off, or is nil if there was none.
func (j *Journal) Repair() *RepairInfo { return j.repair }

// Dir returns the journal's folder.
func (j *Journal) Dir() string { return j.dir }

// FirstSeq returns the seq of the first entry, or 0 if the journal is empty.
func (j *Journal) FirstSeq() uint64 {
	first, last := j.first.Load(), j.last.Load()
	if last < first {
		return 0
	}
	return first
}

// LastSeq returns the seq of the last entry, or 0 if the journal is empty.
func (j *Journal) LastSeq() uint64 {
	first, last := j.first.Load(), j.last.Load()
	if last < first {
		return 0
	}
	return last
}

// NextSeq returns the seq the next Append will give its first payload. It is
// LastSeq()+1, except in an empty journal whose entries were all cut off as a
// torn tail, where seqs continue from where the file left them.
func (j *Journal) NextSeq() uint64 { return j.last.Load() + 1 }

// Size returns the bytes of the journal's files on disk.
func (j *Journal) Size() int64 { return j.size.Load() + j.ahead.Load() }

// Append writes payloads as consecutive entries and returns the seq of the
// first. All of them go to tidwall in one batch followed by one fsync (unless
// Options.NoSync): gathering concurrent writes into one Append is how the
// caller gets group commit. Payloads must not be empty. Append does not keep
// the payload slices.
//
// Once Append returns, every entry is durable. The batch is not atomic: a
// crash during Append may keep any prefix of it, each entry whole or absent.
//
// If the write or the fsync fails, the journal is failed and every later
// call returns an error wrapping ErrFailed; the entries may or may not have
// reached the disk.
func (j *Journal) Append(payloads ...[]byte) (first uint64, err error) {
	first, err = j.Write(payloads...)
	if err != nil || j.opts.NoSync {
		return first, err
	}
	return first, j.SyncTo(first + uint64(len(payloads)) - 1)
}

// Write is Append without the fsync, whatever Options.NoSync says: the
// entries are written to the tail file (the operating system's cache) and
// become durable with a later SyncTo, Sync or Close. It lets a caller
// pipeline its commits: write one group while the fsync of the previous one
// runs, since SyncTo does not hold up Write.
func (j *Journal) Write(payloads ...[]byte) (first uint64, err error) {
	if len(payloads) == 0 {
		return 0, fmt.Errorf("%w: no payloads to append", ErrEmptyPayload)
	}
	total := 0
	for i, p := range payloads {
		if len(p) == 0 {
			return 0, fmt.Errorf("%w: payload %d of %d", ErrEmptyPayload, i, len(payloads))
		}
		total += frameSize(len(p))
	}

	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usable(); err != nil {
		return 0, err
	}
	batch := &j.batch
	if total > maxRetainedBuffer {
		batch = new(wal.Batch)
	}
	batch.Clear()
	// Mirror tidwall's writeBatch: a new segment starts before the batch if
	// the tail is over SegmentSize, and after any entry that fills it.
	// created holds the first seqs of the segment files it will create,
	// closed the sizes of the files it will fill (the tail, then each
	// created file but the last).
	var created []uint64
	var closed []int
	first = j.last.Load() + 1
	tail := j.tailSize
	if tail > j.opts.SegmentSize {
		closed, created = append(closed, tail), append(created, first)
		tail = 0
	}
	for i, p := range payloads {
		seq := first + uint64(i)
		j.frame = appendFrame(j.frame[:0], seq, p)
		batch.Write(seq, j.frame)
		if tail += frameSize(len(p)); tail >= j.opts.SegmentSize {
			closed, created = append(closed, tail), append(created, seq+1)
			tail = 0
		}
	}
	if cap(j.frame) > maxRetainedBuffer {
		j.frame = nil
	}
	last := first + uint64(len(payloads)) - 1

	if err := j.before(vfs.OpWrite, j.tailPath, created, closed); err != nil {
		return 0, j.fail(fmt.Errorf("write entries %d..%d: %w", first, last, err))
	}
	if err := j.log.WriteBatch(batch); err != nil {
		return 0, j.fail(fmt.Errorf("write entries %d..%d: %w", first, last, err))
	}
	j.tailSize = tail
	j.last.Store(last)
	j.size.Add(int64(total))
	if len(created) > 0 {
		j.cutFillLocked(j.tailPath, int64(closed[0]))
		j.tailPath = filepath.Join(j.dir, segmentName(created[len(created)-1]))
		j.dirDirty = true
	}
	j.zeroFillLocked(total)
	return first, nil
}

// SyncTo makes every entry up to seq durable, and returns at once if they
// are already. It fsyncs the tail file as it is when SyncTo starts, and the
// folder if a segment file was created since its last fsync; the files
// before the tail were fsynced by tidwall when it filled them, or by
// Cycle. The fsync runs without the lock that Write takes, so writes of
// later entries go on meanwhile, and one fsync covers every entry written
// before it starts. A failed fsync fails the journal (ErrFailed).
func (j *Journal) SyncTo(seq uint64) error {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	j.mu.Lock()
	if err := j.usable(); err != nil {
		j.mu.Unlock()
		return err
	}
	if j.synced.Load() >= seq {
		j.mu.Unlock()
		return nil // a concurrent SyncTo covered it
	}
	path, size, last, dirty := j.tailPath, j.tailSize, j.last.Load(), j.dirDirty
	j.dirDirty = false
	j.mu.Unlock()

	err := j.syncTailFileLocked(path, int64(size))
	if err == nil && dirty {
		err = vfs.SyncDir(j.fs, j.dir)
	}
	if err != nil {
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.failed != nil {
			return j.usable()
		}
		return j.fail(fmt.Errorf("fsync entries up to %d: %w", last, err))
	}
	j.synced.Store(max(j.synced.Load(), last))
	return nil
}

// syncTailFileLocked fsyncs the tail file at path through the journal's own
// descriptor of it, opened through the FS (so the FS sees the open and the
// fsync as operations on its own file, and fails them as it would any
// other: the hook's Before is not asked again), and reports to the hook
// that size bytes of it are durable. j.syncMu is held.
func (j *Journal) syncTailFileLocked(path string, size int64) error {
	if j.syncPath != path {
		if j.syncFile != nil {
			j.syncFile.Close()
			j.syncFile, j.syncPath = nil, ""
		}
		f, err := j.fs.Open(path)
		if err != nil {
			return fmt.Errorf("open %s to fsync it: %w", path, err)
		}
		j.syncFile, j.syncPath = f, path
	}
	if err := vfs.SyncData(j.syncFile); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	if j.hook != nil {
		j.hook.Synced(path, size)
	}
	return nil
}

// before asks the hook, if any, whether tidwall may create the segment
// files whose first seqs are created and then do op on path. closed, when
// a write creates files, holds the sizes of the files it fills: the tail,
// then each created file but the last.
//
// tidwall fsyncs each file it fills before it creates the next. The hook
// hears of that fsync now, just before it hears of the creation: a folder
// fsync running meanwhile (TruncateFront's) may make the new file durable
// as soon as it exists, and the filled file is durable by then. Told in
// the other order, a power loss between the two would leave a hook's
// model of the disk with the new file and without the filled file's last
// entries, which no disk can show. This errs on the side of keeping bytes
// of this very batch (unacknowledged: whole entries or a torn tail), never
// of losing acknowledged ones.
func (j *Journal) before(op vfs.Op, path string, created []uint64, closed []int) error {
	if j.hook == nil {
		return nil
	}
	filled := path
	for i, seq := range created {
		j.hook.Synced(filled, int64(closed[i]))
		p := filepath.Join(j.dir, segmentName(seq))
		if err := j.hook.Before(vfs.OpCreate, p); err != nil {
			return fmt.Errorf("create %s: %w", p, err)
		}
		filled = p
	}
	if err := j.hook.Before(op, path); err != nil {
		return err
	}
	return nil
}

// syncTail fsyncs tidwall's tail segment file and reports it to the hook.
func (j *Journal) syncTail() error {
	if err := j.before(vfs.OpSync, j.tailPath, nil, nil); err != nil {
		return err
	}
	if err := j.log.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", j.tailPath, err)
	}
	if j.hook != nil {
		j.hook.Synced(j.tailPath, int64(j.tailSize))
	}
	return nil
}

// Replay calls fn for every entry with seq >= from, in seq order, up to the
// last entry at the time of the call. Each entry's checksum and seq are
// verified first; a bad one stops Replay with a *CorruptError (wrapping
// ErrCorrupt) naming its seq. An error from fn stops Replay and is returned
// as is. fn runs without the journal's lock, so it may call Append; payload
// is fn's to keep.
func (j *Journal) Replay(from uint64, fn func(seq uint64, payload []byte) error) error {
	j.mu.Lock()
	err := j.usable()
	first, last := j.first.Load(), j.last.Load()
	j.mu.Unlock()
	if err != nil {
		return err
	}
	for seq := max(from, first); seq <= last; seq++ {
		payload, err := j.read(seq)
		if err != nil {
			return err
		}
		if err := fn(seq, payload); err != nil {
			return err
		}
	}
	return nil
}

// read returns the verified payload of entry seq.
func (j *Journal) read(seq uint64) ([]byte, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usable(); err != nil {
		return nil, err
	}
	data, err := j.readLog(seq)
	switch {
	case errors.Is(err, wal.ErrCorrupt):
		return nil, j.locate(seq, fmt.Sprintf("tidwall/wal cannot load the segment: %v", err), true)
	case errors.Is(err, wal.ErrNotFound):
		return nil, fmt.Errorf("journal: seq %d is no longer in the journal (truncated during Replay?)", seq)
	case err != nil:
		return nil, fmt.Errorf("journal: reading seq %d: %w", seq, err)
	}
	_, payload, reason := checkFrame(data, seq)
	if reason != "" {
		return nil, j.locate(seq, reason, false)
	}
	return payload, nil
}

// locate names the damage found while reading seq. It decodes the segment
// file that should hold seq and returns its first bad entry, with the file
// and the offset: for a checksum or seq failure if that entry is seq, for a
// framing failure (tidwall could not load the file) wherever it is. If the
// file shows no such damage, it returns reason for seq without an offset.
func (j *Journal) locate(seq uint64, reason string, framing bool) *CorruptError {
	path := j.segmentPath(seq)
	if path != "" {
		for _, err := range readFile(j.fs, path) {
			var cerr *CorruptError
			if errors.As(err, &cerr) && (cerr.Seq == seq || framing) {
				if cerr.Seq != seq {
					cerr.Reason += fmt.Sprintf("; tidwall/wal cannot load the file, Replay stopped at seq %d", seq)
				}
				return cerr
			}
			if err != nil {
				break
			}
		}
	}
	return &CorruptError{File: path, Offset: -1, Seq: seq, Reason: reason}
}

// readLog reads one entry from tidwall. A segment whose framing is damaged
// can yield fewer entries than its neighbours' names promise, which makes
// tidwall index out of range; that panic is corruption, reported as such.
func (j *Journal) readLog(seq uint64) (data []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			data, err = nil, fmt.Errorf("%w: the segment holds fewer entries than the file names imply (%v)", wal.ErrCorrupt, r)
		}
	}()
	return j.log.Read(seq)
}

// segmentPath returns the path of the segment file that should hold seq,
// or "" if the folder cannot be read; it names the file in errors.
func (j *Journal) segmentPath(seq uint64) string {
	l, err := listDir(j.fs, j.dir)
	if err != nil {
		return ""
	}
	path := ""
	for _, s := range l.segments {
		if s.seq <= seq {
			path = filepath.Join(j.dir, s.name)
		}
	}
	return path
}

// TruncateFront drops the journal files whose entries all come before seq.
// The file that holds seq stays whole, so entries before seq may remain;
// Replay callers start from seq themselves.
//
// The files are removed from under tidwall without telling it: tidwall
// reads a segment file only for Read (which the journal no longer calls
// for entries before FirstSeq) and lists the folder afresh at the next
// Open. tidwall's own TruncateFront would copy and fsync the segment that
// holds seq (up to SegmentSize) while every Append waits; here Append
// waits for nothing: the removals and the folder fsync happen outside the
// lock.
func (j *Journal) TruncateFront(seq uint64) error {
	j.mu.Lock()
	if err := j.usable(); err != nil {
		j.mu.Unlock()
		return err
	}
	l, err := listDir(j.fs, j.dir)
	if err != nil {
		j.mu.Unlock()
		return fmt.Errorf("journal: truncate: %w", err)
	}
	keep := 0 // the file holding seq: the last one starting at or before it
	for i, f := range l.segments {
		if f.seq <= seq {
			keep = i
		}
	}
	if l.startSeq != 0 || l.hasEnd || keep == 0 {
		j.mu.Unlock()
		return nil // nothing whole to drop, or tidwall is settling a truncation of its own
	}
	j.first.Store(max(j.first.Load(), l.segments[keep].seq))
	j.mu.Unlock()

	// A file that cannot be removed now stays, whole, until a later
	// TruncateFront removes it: its entries are never read again (they
	// come before FirstSeq), and the tail is untouched, so the journal
	// stays usable.
	var removed int64
	var errs []error
	for _, f := range l.segments[:keep] {
		if err := j.fs.Remove(filepath.Join(j.dir, f.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed += f.size
	}
	j.size.Add(-removed)
	if removed > 0 {
		errs = append(errs, vfs.SyncDir(j.fs, j.dir))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("journal: truncate: %w", err)
	}
	return nil
}

// Sync makes every entry written so far durable (SyncTo the last one).
// Only needed with Options.NoSync, or after Write.
func (j *Journal) Sync() error {
	return j.SyncTo(j.last.Load())
}

// Close syncs and closes the journal. Closing a failed journal releases what
// tidwall lets go of and returns an error wrapping ErrFailed.
func (j *Journal) Close() error {
	j.syncMu.Lock() // the order SyncTo takes them in
	defer j.syncMu.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return ErrClosed
	}
	j.closed = true
	var err error
	if j.failed == nil {
		// tidwall's Close fsyncs the tail.
		err = j.before(vfs.OpSync, j.tailPath, nil, nil)
		if err == nil && j.dirDirty {
			err = vfs.SyncDir(j.fs, j.dir)
		}
	}
	if cerr := j.log.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("journal: closing: %w", cerr)
	}
	if j.failed != nil {
		return fmt.Errorf("%w: %w", ErrFailed, j.failed)
	}
	j.cutFillLocked(j.tailPath, int64(j.tailSize))
	if err == nil && j.hook != nil {
		j.hook.Synced(j.tailPath, int64(j.tailSize))
	}
	if j.syncFile != nil {
		j.syncFile.Close()
		j.syncFile, j.syncPath = nil, ""
	}
	return err
}

// usable returns the error to give a call on a closed or failed journal.
func (j *Journal) usable() error {
	switch {
	case j.closed:
		return ErrClosed
	case j.failed != nil:
		return fmt.Errorf("%w: %w", ErrFailed, j.failed)
	}
	return nil
}

// fail marks the journal failed by err and returns the error to give.
func (j *Journal) fail(err error) error {
	j.failed = err
	return fmt.Errorf("%w: %w", ErrFailed, err)
}
