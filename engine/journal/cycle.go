package journal

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ebbdb/ebb/engine/vfs"
)

// Cycle closes the tail segment file and starts a new, empty one, which
// the next Append writes to: every entry appended so far is then in files
// that a TruncateFront(NextSeq()) removes whole. The engine calls it when a
// seal freezes the memtables, so that the journal gives back the space of
// sealed entries at once instead of once a file fills (up to SegmentSize).
// It does nothing when the tail file is empty.
//
// The tail is fsynced first (with NoSync too), so that every entry
// appended so far is durable once Cycle returns: once a later file exists,
// damage at the end of this one is no longer a torn tail that Open may cut.
// The new file is created through Options.FS and the folder fsynced before
// tidwall is reopened on it; tidwall keeps no state across the reopen but
// the files. An error before the new file exists leaves the journal as it
// was; an error after it fails the journal (ErrFailed), since tidwall would
// otherwise go on appending to a file that is no longer the last one.
func (j *Journal) Cycle() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usable(); err != nil {
		return err
	}
	if j.tailSize == 0 {
		return nil
	}
	if err := j.syncTail(); err != nil {
		return j.fail(fmt.Errorf("cycle: %w", err))
	}
	j.cutFillLocked(j.tailPath, int64(j.tailSize))
	path := filepath.Join(j.dir, segmentName(j.last.Load()+1))
	f, err := j.fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return fmt.Errorf("journal: cycle: %w", err)
	}
	if err := f.Close(); err != nil {
		return j.fail(fmt.Errorf("cycle: close %s: %w", path, err))
	}
	if err := vfs.SyncDir(j.fs, j.dir); err != nil {
		return j.fail(fmt.Errorf("cycle: %w", err))
	}
	if err := j.log.Close(); err != nil {
		return j.fail(fmt.Errorf("cycle: close tidwall's log: %w", err))
	}
	log, err := openLog(j.dir, j.opts)
	if err != nil {
		return j.fail(fmt.Errorf("cycle: reopen tidwall's log: %w", err))
	}
	if last, err := log.LastIndex(); err != nil || last != j.last.Load() {
		log.Close()
		return j.fail(fmt.Errorf("cycle: tidwall reopened at entry %d (%v), want %d", last, err, j.last.Load()))
	}
	j.log = log
	j.tailSize = 0
	j.tailPath = path
	j.dirDirty = false
	// Every entry is in a file fsynced before its successor was created
	// (tidwall's filled files, and now the old tail), and the folder that
	// names them is fsynced: a SyncTo of any of them has nothing to do.
	j.synced.Store(max(j.synced.Load(), j.last.Load()))
	return nil
}
