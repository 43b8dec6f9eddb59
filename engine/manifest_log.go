package engine

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/journal"
	"github.com/ebbdb/ebb/engine/vfs"
)

// The MANIFEST's edit log (its framing is package dbfile's). A container
// created, deleted or given new properties, or compacted, does not rewrite
// the whole MANIFEST (whose size grows with the number of containers): it
// appends one edit, the new state of that one container and of the few
// counters outside the containers, and fsyncs. The full snapshot is
// rewritten (through a temporary file and a rename) only when the edits
// have grown past manifestLogFactor times the snapshot, by a clock reset,
// and at Close, so the cost of a metadata change does not grow with the
// number of containers. A seal appends one edit too, naming the containers
// it wrote files for and moving the journal's replay start (see
// dbfile.ManifestEdit). Open cuts a torn last edit, keeping a copy of the
// cut bytes under broken/ when there is room (see repairManifest).
const (
	// manifestLogFactor: the snapshot is rewritten when the edits after it
	// take more than this many times its size (and manifestLogMin bytes).
	manifestLogFactor = 4
	manifestLogMin    = 64 << 10
)

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
	path := filepath.Join(dir, dbfile.ManifestName)
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
	broken := filepath.Join(dir, dbfile.BrokenDir)
	if err := fsys.MkdirAll(broken, 0o755); err != nil {
		return "", err
	}
	return vfs.KeepCopy(fsys, broken, dbfile.ManifestName, cut)
}

// manifestLog is the DB's state of the MANIFEST's edit log, guarded by
// DB.man.
type manifestLog struct {
	size     int64  // the file's size; 0 when not known yet
	snap     int64  // the size of its snapshot part
	version  uint32 // its snapshot's version (dbfile.ManifestVersion)
	rewrite  bool   // the file's tail is in doubt: rewrite before appending
	edits    int64  // edits appended, for tests
	rewrites int64  // snapshots written, full rewrites and compactions
	// compacting is set while compactManifest writes a new snapshot off
	// the lock; pending collects the edits appended meanwhile, which go
	// into the new file after it.
	compacting bool
	pending    []byte
}

// rewrote records that the MANIFEST is now a snapshot of n bytes alone,
// of version v.
func (l *manifestLog) rewrote(n int64, v uint32) {
	l.size, l.snap, l.version, l.rewrite, l.pending = n, n, v, false, nil
	l.rewrites++
}

// logEditLocked makes a metadata change durable: the containers put (their whole
// current entry) and the container numbers deleted, with the counters.
// db.mu is held; db.man is not. It appends one edit and fsyncs, with a cost
// that does not depend on how many containers there are; after a failed
// append, or when the tail of the file is in doubt, it rewrites the whole
// MANIFEST instead. On failure nothing of the change is durable, whatever
// the file holds.
func (db *DB) logEditLocked(put []*Container, del []uint32) error {
	return db.logEditFromLocked(put, del, 0)
}

// logEditFromLocked is logEditLocked that also moves the journal's replay
// start to journalFrom (0: leaves it); db.mu is held, as for logEditLocked,
// and db.man is not. A seal uses it, with put holding every
// container it wrote files for: once the edit is durable, those files hold
// what the journal no longer needs to replay.
func (db *DB) logEditFromLocked(put []*Container, del []uint32, journalFrom uint64) error {
	if len(put) > 0 {
		// A container's entry names its files as they are now, perhaps
		// just after a compaction dropped records that journal entries
		// not yet durable (Options.NoSync) made dead: those entries must
		// not be lost once the entry is.
		if err := db.journalDurable(); err != nil {
			return err
		}
	}
	db.man.Lock()
	defer db.man.Unlock()
	path := filepath.Join(db.dir, dbfile.ManifestName)
	if db.man.log.size == 0 && !db.man.log.rewrite {
		// The first change since Open: the file is as Open left it.
		st, err := db.fs.Stat(path)
		if err != nil {
			return fmt.Errorf("ebb: write manifest: %w", err)
		}
		db.man.log.size, db.man.log.snap = st.Size(), st.Size()
	}
	if db.man.log.rewrite || db.man.log.version < dbfile.ManifestVersion && anyKeyed(put) {
		// A keyed container after a snapshot of the version builds
		// without partition keys read: rewrite, so that they refuse it.
		return db.rewriteManifestLocked()
	}
	e := &dbfile.ManifestEdit{
		NextFile:      db.man.nextFile,
		NextContainer: db.man.nextContainer,
		Clock:         db.clock.highest(),
		JournalFrom:   journalFrom, // 0 but for a seal: see manifestEdit
		Del:           del,
	}
	for _, c := range put {
		if c.isDeleted() {
			continue // its deletion is logged: putting it back would undo it
		}
		e.Put = append(e.Put, c.metaLocked())
	}
	b, err := dbfile.AppendEdit(nil, e)
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
		if terr := f.Truncate(db.man.log.size); terr != nil || f.Sync() != nil {
			db.man.log.rewrite = true
		}
		f.Close()
		return fmt.Errorf("ebb: write manifest: %w", err)
	}
	if err := f.Close(); err != nil {
		db.man.log.rewrite = true
		return fmt.Errorf("ebb: write manifest: %w", err)
	}
	db.man.log.size += int64(len(b))
	db.man.log.edits++
	if db.man.log.compacting {
		db.man.log.pending = append(db.man.log.pending, b...)
	}
	db.notePersistedClock(e.Clock)
	return nil
}

// anyKeyed reports whether a container of cs has a partition key path.
func anyKeyed(cs []*Container) bool {
	for _, c := range cs {
		if c.kp != nil {
			return true
		}
	}
	return false
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
	if db.mu.byNum[c.num] == c {
		err = db.logEditLocked([]*Container{c}, nil)
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
	db.man.Lock()
	l := &db.man.log
	logBytes := l.size - l.snap
	if l.compacting || l.rewrite || l.size == 0 || logBytes <= manifestLogMin || logBytes <= manifestLogFactor*l.snap {
		db.man.Unlock()
		db.mu.RUnlock()
		return
	}
	m := db.manifestLocked()
	gen := l.rewrites
	l.compacting, l.pending = true, nil
	db.man.Unlock()
	db.mu.RUnlock()
	if err := db.writeCompacted(m, gen); err != nil {
		db.log.Warn("ebb: rewriting the MANIFEST failed; its edit log is kept", "err", err)
	}
}

// writeCompacted writes m, taken when the log had seen gen snapshots, as
// the new MANIFEST, followed by the edits appended since.
func (db *DB) writeCompacted(m *dbfile.Manifest, gen int64) (err error) {
	tmp := filepath.Join(db.dir, dbfile.ManifestName+".compact")
	defer func() {
		if err != nil {
			db.fs.Remove(tmp)
		}
	}()
	b, err := dbfile.EncodeManifest(m)
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
	db.man.Lock()
	defer db.man.Unlock()
	l := &db.man.log
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
	if err = db.fs.Rename(tmp, filepath.Join(db.dir, dbfile.ManifestName)); err != nil {
		return err
	}
	if err := vfs.SyncDir(db.fs, db.dir); err != nil {
		l.rewrite = true // the new file may not be durable: append nothing to it
		return err
	}
	pending := int64(len(l.pending))
	l.rewrote(int64(len(b)), m.NeededVersion())
	l.size += pending
	db.notePersistedClock(m.Clock)
	return nil
}
