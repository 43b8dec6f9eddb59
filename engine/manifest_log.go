package engine

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"sort"

	"github.com/ebbdb/ebb/engine/journal"
	"github.com/ebbdb/ebb/engine/vfs"
	"github.com/vmihailenco/msgpack/v5"
)

// The MANIFEST's edit log. A container created, deleted or given new
// properties, or compacted, does not rewrite the whole MANIFEST (whose
// size grows with the number of containers): it appends one edit, the new
// state of that one container and of the few counters outside the
// containers, and fsyncs. The full snapshot is rewritten (through a
// temporary file and a rename) only when the edits have grown past
// manifestLogFactor times the snapshot, by a clock reset, and at Close, so
// the cost of a metadata change does not grow with the number of
// containers. A seal appends one edit too, naming the containers it wrote
// files for and moving the journal's replay start (see manifestEdit). Each edit is framed as
//
//	+--------+--------+----------------+
//	| crc32c | length | msgpack edit   |
//	| u32 LE | u32 LE | length bytes   |
//	+--------+--------+----------------+
//
// where the crc covers the length and the edit. Only the last edit can be
// torn by a crash (each one is fsynced before the change is acknowledged
// and before the next is written), so a frame that is cut off or fails its
// checksum, with no sound frame anywhere after it, is the unacknowledged
// last edit: Open cuts it, keeping a copy of the cut bytes under broken/
// when there is room (see repairManifest). A bad frame followed by a sound
// one is damage to an acknowledged edit: ErrCorrupt.
const (
	editHeader = 8
	// manifestLogFactor: the snapshot is rewritten when the edits after it
	// take more than this many times its size (and manifestLogMin bytes).
	manifestLogFactor = 4
	manifestLogMin    = 64 << 10
)

// manifestEdit is one record of the edit log: the counters outside the
// containers as they are after the change, the containers it puts (whole,
// replacing any with the same number) and the numbers it deletes.
//
// JournalFrom 0 leaves the replay start as it was, and the edits of every
// change but a seal do: only a seal's edit, which lists the files of every
// container the seal wrote to, and a snapshot, which lists every
// container's files, move it. A seal sets the DB's journalFrom once its
// files are written but before the MANIFEST lists them; an edit of another
// change written in between that carried it would, after a crash, start
// replay past records that no listed file holds. (Edit logs written before
// carry a JournalFrom in every edit, and it is applied.)
type manifestEdit struct {
	NextFile      uint32          `msgpack:"next_file"`
	NextContainer uint32          `msgpack:"next_container"`
	JournalFrom   uint64          `msgpack:"journal_from"`
	Clock         int64           `msgpack:"clock"`
	Put           []containerMeta `msgpack:"put,omitempty"`
	Del           []uint32        `msgpack:"del,omitempty"`
}

// appendEdit appends e's frame to dst.
func appendEdit(dst []byte, e *manifestEdit) ([]byte, error) {
	body, err := msgpack.Marshal(e)
	if err != nil {
		return dst, err
	}
	return appendFrame(dst, body), nil
}

// appendFrame appends body framed as an edit to dst.
func appendFrame(dst, body []byte) []byte {
	var h [editHeader]byte
	binary.LittleEndian.PutUint32(h[4:], uint32(len(body)))
	binary.LittleEndian.PutUint32(h[:4], crc32.Update(crc32.Checksum(h[4:], castagnoli), castagnoli, body))
	return append(append(dst, h[:]...), body...)
}

// applyEdits applies the edit log log (the bytes after the snapshot, which
// starts at file offset base) to m. It returns the length of the sound
// prefix of log: less than len(log) when the tail is a torn last edit.
func applyEdits(m *manifest, log []byte, base int, path string) (int, error) {
	if len(log) == 0 {
		return 0, nil
	}
	pos := make(map[uint32]int, len(m.Containers))
	for i, cm := range m.Containers {
		pos[cm.Num] = i
	}
	gone := make(map[uint32]bool)
	p := 0
	for p < len(log) {
		rest := log[p:]
		end, ok := editFrame(rest)
		if !ok {
			if allZero(rest) {
				break // the file grew, but the last edit's bytes never came
			}
			// A bad frame is the torn last edit when no sound edit
			// follows it; otherwise an acknowledged edit was damaged.
			for q := 1; q < len(rest); q++ {
				if _, ok := editFrame(rest[q:]); ok {
					return 0, fmt.Errorf("%s: manifest edit at offset %d is damaged, and a sound edit follows at offset %d: %w",
						path, base+p, base+p+q, ErrCorrupt)
				}
			}
			break
		}
		body := rest[editHeader:end]
		var e manifestEdit
		err := msgpackLengthsFit(body)
		if err == nil {
			err = msgpack.Unmarshal(body, &e)
		}
		if err != nil {
			return 0, fmt.Errorf("%s: manifest edit at offset %d: %v: %w", path, base+p, err, ErrCorrupt)
		}
		m.NextFile, m.NextContainer, m.Clock = e.NextFile, e.NextContainer, e.Clock
		if e.JournalFrom != 0 {
			m.JournalFrom = e.JournalFrom
		}
		for _, cm := range e.Put {
			if i, ok := pos[cm.Num]; ok {
				m.Containers[i] = cm
			} else {
				pos[cm.Num] = len(m.Containers)
				m.Containers = append(m.Containers, cm)
			}
			delete(gone, cm.Num)
		}
		for _, num := range e.Del {
			if _, ok := pos[num]; !ok || gone[num] {
				return 0, fmt.Errorf("%s: manifest edit at offset %d deletes container %d, which does not exist: %w",
					path, base+p, num, ErrCorrupt)
			}
			gone[num] = true
		}
		p += end
	}
	if len(gone) > 0 {
		kept := m.Containers[:0]
		for _, cm := range m.Containers {
			if !gone[cm.Num] {
				kept = append(kept, cm)
			}
		}
		m.Containers = kept
	}
	if len(m.Containers) == 0 {
		m.Containers = nil
	}
	sort.SliceStable(m.Containers, func(i, j int) bool { return m.Containers[i].Num < m.Containers[j].Num })
	return p, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// editFrame reports whether b starts with a whole edit frame whose checksum
// holds, and its length.
func editFrame(b []byte) (int, bool) {
	if len(b) < editHeader {
		return 0, false
	}
	n := binary.LittleEndian.Uint32(b[4:])
	if uint64(n) > uint64(len(b)-editHeader) {
		return 0, false
	}
	end := editHeader + int(n)
	sum := crc32.Update(crc32.Checksum(b[4:8], castagnoli), castagnoli, b[editHeader:end])
	return end, sum == binary.LittleEndian.Uint32(b)
}

// repairManifest cuts a torn last edit off the MANIFEST at path, whose
// sound part is the first keep bytes of data. It keeps a copy of the bytes
// it cuts (at most journal.MaxBrokenCopy of them) under broken/, and needs
// no other free space: the file is cut in place, truncated and fsynced,
// rather than rewritten whole, which would need room for all of it (a
// crash during the cut leaves the torn edit, cut again at the next Open,
// or the sound prefix). The cut bytes are an edit that was never
// acknowledged, so when the copy cannot be written (a full disk, say) the
// cut is made anyway and the failure logged, as for the journal's torn
// tail: a database on a full disk still opens.
func repairManifest(fsys vfs.FS, dir string, data []byte, keep int, log *slog.Logger) error {
	path := filepath.Join(dir, manifestName)
	cut := data[keep:]
	copyPath, err := keepManifestCopy(fsys, dir, cut[:min(len(cut), journal.MaxBrokenCopy)])
	if err != nil {
		log.Warn("ebb: could not keep a copy of the MANIFEST's torn last edit; cutting it anyway", "file", path, "err", err)
	}
	f, err := fsys.OpenFile(path, os.O_WRONLY, 0)
	if err == nil {
		err = f.Truncate(int64(keep))
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		if copyPath != "" {
			fsys.Remove(copyPath) // the next Open cuts again and keeps a new copy
		}
		return fmt.Errorf("ebb: repair MANIFEST: %w", err)
	}
	log.Warn("ebb: cut the MANIFEST's torn last edit", "file", path, "offset", keep, "cut_bytes", len(cut), "copy", copyPath)
	return nil
}

// keepManifestCopy writes the bytes cut off the MANIFEST to a new file
// under broken/; on failure it leaves nothing behind.
func keepManifestCopy(fsys vfs.FS, dir string, cut []byte) (string, error) {
	broken := filepath.Join(dir, brokenDir)
	if err := fsys.MkdirAll(broken, 0o755); err != nil {
		return "", err
	}
	return vfs.KeepCopy(fsys, broken, manifestName, cut)
}

// manifestLog is the DB's state of the MANIFEST's edit log, guarded by
// DB.manMu.
type manifestLog struct {
	size     int64 // the file's size; 0 when not known yet
	snap     int64 // the size of its snapshot part
	rewrite  bool  // the file's tail is in doubt: rewrite before appending
	edits    int64 // edits appended, for tests
	rewrites int64 // snapshots written, full rewrites and compactions
	// compacting is set while compactManifest writes a new snapshot off
	// the lock; pending collects the edits appended meanwhile, which go
	// into the new file after it.
	compacting bool
	pending    []byte
}

// rewrote records that the MANIFEST is now a snapshot of n bytes alone.
func (l *manifestLog) rewrote(n int64) {
	l.size, l.snap, l.rewrite, l.pending = n, n, false, nil
	l.rewrites++
}

// logEdit makes a metadata change durable: the containers put (their whole
// current entry) and the container numbers deleted, with the counters.
// db.mu is held; manMu is not. It appends one edit and fsyncs, with a cost
// that does not depend on how many containers there are; after a failed
// append, or when the tail of the file is in doubt, it rewrites the whole
// MANIFEST instead. On failure nothing of the change is durable, whatever
// the file holds.
func (db *DB) logEdit(put []*Container, del []uint32) error {
	return db.logEditFrom(put, del, 0)
}

// logEditFrom is logEdit that also moves the journal's replay start to
// journalFrom (0: leaves it). A seal uses it, with put holding every
// container it wrote files for: once the edit is durable, those files hold
// what the journal no longer needs to replay.
func (db *DB) logEditFrom(put []*Container, del []uint32, journalFrom uint64) error {
	if len(put) > 0 {
		// A container's entry names its files as they are now, perhaps
		// just after a compaction dropped records that journal entries
		// not yet durable (Options.NoSync) made dead: those entries must
		// not be lost once the entry is.
		if err := db.journalDurable(); err != nil {
			return err
		}
	}
	db.manMu.Lock()
	defer db.manMu.Unlock()
	path := filepath.Join(db.dir, manifestName)
	if db.manLog.size == 0 && !db.manLog.rewrite {
		// The first change since Open: the file is as Open left it.
		st, err := db.fs.Stat(path)
		if err != nil {
			return fmt.Errorf("ebb: write manifest: %w", err)
		}
		db.manLog.size, db.manLog.snap = st.Size(), st.Size()
	}
	if db.manLog.rewrite {
		return db.rewriteManifestLocked()
	}
	e := &manifestEdit{
		NextFile:      db.nextFile,
		NextContainer: db.nextContainer,
		Clock:         db.clock.highest(),
		JournalFrom:   journalFrom, // 0 but for a seal: see manifestEdit
		Del:           del,
	}
	for _, c := range put {
		if c.isDeleted() {
			continue // its deletion is logged: putting it back would undo it
		}
		e.Put = append(e.Put, c.meta())
	}
	b, err := appendEdit(nil, e)
	if err != nil {
		return fmt.Errorf("ebb: encode manifest edit: %w", err)
	}
	f, err := db.fs.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("ebb: write manifest: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		// Take the edit back, so the file again ends with the last
		// acknowledged change; if even that fails, the next change
		// rewrites the file whole before anything is appended to it.
		if terr := f.Truncate(db.manLog.size); terr != nil || f.Sync() != nil {
			db.manLog.rewrite = true
		}
		f.Close()
		return fmt.Errorf("ebb: write manifest: %w", err)
	}
	if err := f.Close(); err != nil {
		db.manLog.rewrite = true
		return fmt.Errorf("ebb: write manifest: %w", err)
	}
	db.manLog.size += int64(len(b))
	db.manLog.edits++
	if db.manLog.compacting {
		db.manLog.pending = append(db.manLog.pending, b...)
	}
	db.notePersistedClock(e.Clock)
	return nil
}

// saveContainer makes a change to c's files, a compaction's, durable with
// one edit that puts c as it is now, as a create or a properties change
// does: unlike a rewrite of the whole MANIFEST its cost does not grow with
// the number of containers, and it holds the MANIFEST for one append and
// fsync. A container deleted meanwhile needs nothing: its delete is
// logged, and its files go with it. db.mu is not held.
func (db *DB) saveContainer(c *Container) error {
	db.mu.RLock()
	var err error
	if db.byNum[c.num] == c {
		err = db.logEdit([]*Container{c}, nil)
	}
	db.mu.RUnlock()
	if err == nil {
		db.compactManifest()
	}
	return err
}

// compactManifest rewrites the MANIFEST as one snapshot when its edit log
// has outgrown it. It runs outside the commit queue, after the change that
// filled the log was acknowledged, and writes the snapshot without holding
// a lock, so neither writers nor other metadata changes wait for it: they
// wait at most for the final step, which adds the edits appended meanwhile
// (usually none), fsyncs and renames. A failure is only logged: every edit
// is durable already, and the next change tries again.
func (db *DB) compactManifest() {
	if db.closed.Load() {
		return
	}
	db.mu.RLock()
	db.manMu.Lock()
	l := &db.manLog
	logBytes := l.size - l.snap
	if l.compacting || l.rewrite || l.size == 0 || logBytes <= manifestLogMin || logBytes <= manifestLogFactor*l.snap {
		db.manMu.Unlock()
		db.mu.RUnlock()
		return
	}
	m := db.manifestLocked()
	gen := l.rewrites
	l.compacting, l.pending = true, nil
	db.manMu.Unlock()
	db.mu.RUnlock()
	if err := db.writeCompacted(m, gen); err != nil {
		db.log.Warn("ebb: rewriting the MANIFEST failed; its edit log is kept", "err", err)
	}
}

// writeCompacted writes m, taken when the log had seen gen snapshots, as
// the new MANIFEST, followed by the edits appended since.
func (db *DB) writeCompacted(m *manifest, gen int64) (err error) {
	tmp := filepath.Join(db.dir, manifestName+".compact")
	defer func() {
		if err != nil {
			db.fs.Remove(tmp)
		}
	}()
	b, err := encodeManifest(m)
	if err != nil {
		return err
	}
	f, err := db.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	if _, err = f.Write(b); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	db.manMu.Lock()
	defer db.manMu.Unlock()
	l := &db.manLog
	defer func() { l.compacting, l.pending = false, nil }()
	if l.rewrites != gen || l.rewrite || db.closed.Load() {
		// A full rewrite came first (or the file's tail is in doubt and
		// the next change rewrites it, or the DB is closing): this
		// snapshot is out of date.
		f.Close()
		f = nil
		db.fs.Remove(tmp)
		return nil
	}
	if len(l.pending) > 0 {
		if _, err = f.Write(l.pending); err != nil {
			return err
		}
		if err = f.Sync(); err != nil {
			return err
		}
	}
	err = f.Close()
	f = nil
	if err != nil {
		return err
	}
	if err = db.fs.Rename(tmp, filepath.Join(db.dir, manifestName)); err != nil {
		return err
	}
	if err := db.fs.SyncDir(db.dir); err != nil {
		l.rewrite = true // the new file may not be durable: append nothing to it
		return fmt.Errorf("fsync directory %s: %w", db.dir, err)
	}
	pending := int64(len(l.pending))
	l.rewrote(int64(len(b)))
	l.size += pending
	db.notePersistedClock(m.Clock)
	return nil
}
