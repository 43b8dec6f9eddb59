package engine

import (
	"io/fs"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/vfs"
)

// segListing remembers which entries of an open DB's segment folder are
// not segment files, so that the disk figures need not list a folder of
// thousands of segment files at every call: the listing is taken again
// when the folder's modification time moves, or while it is too recent to
// tell a later change apart (file systems stamp it at a coarse grain).
type segListing struct {
	mu       sync.Mutex
	mtime    time.Time
	listedAt time.Time
	other    []string // names that are not segment files
}

// segListingSettled is how long after the folder's modification time a
// listing must be taken for a later change to show as a new time.
const segListingSettled = 2 * time.Second

// otherBytes is the size of what the segment folder seg holds besides
// segment files, read through fsys.
func (l *segListing) otherBytes(fsys vfs.FS, seg string) int64 {
	fi, err := fsys.Stat(seg)
	if err != nil {
		return 0
	}
	l.mu.Lock()
	if !fi.ModTime().Equal(l.mtime) || l.listedAt.Sub(l.mtime) < segListingSettled {
		l.mtime, l.listedAt, l.other = fi.ModTime(), time.Now(), l.other[:0]
		ents, _ := fsys.ReadDir(seg)
		for _, e := range ents {
			if _, ok := dbfile.SegmentFileNum(e.Name()); !ok || !e.Type().IsRegular() {
				l.other = append(l.other, e.Name())
			}
		}
	}
	other := slices.Clone(l.other)
	l.mu.Unlock()
	var n int64
	for _, name := range other {
		n += dbfile.TreeSize(fsys, filepath.Join(seg, name))
	}
	return n
}

// openSharedBytes is sharedFileBytes for the open DB: every file under its
// directory but the segment files, whose folder it lists only when it
// changed (segListing). It reads through db.fs.
func (db *DB) openSharedBytes() int64 {
	var n int64
	segs := filepath.Join(db.dir, dbfile.SegmentDir)
	vfs.WalkDir(db.fs, db.dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
		case d.IsDir() && path == segs:
			n += db.segList.otherBytes(db.fs, segs)
			return filepath.SkipDir
		case d.Type().IsRegular():
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// sharedDiskBytes is container num's share of the shared files now. It
// takes db.mu, so it is called before c.mu (which CreateContainer takes
// under db.mu).
func (db *DB) sharedDiskBytes(num uint32) int64 {
	total := db.openSharedBytes()
	db.mu.RLock()
	n, rank := len(db.mu.byNum), 0
	for k := range db.mu.byNum {
		if k < num {
			rank++
		}
	}
	db.mu.RUnlock()
	return dbfile.ShareOf(total, n, rank)
}
