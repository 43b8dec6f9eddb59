package engine

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// The disk figures (Stats.DiskBytes, Metrics.DiskBytes, Report.DiskBytes)
// count every byte under the database directory. A container owns its
// segment files; every other file (the journal's files, the MANIFEST, the
// CLOCK, the LOCK, the copies under broken/, and any file ebb did not
// write, which it leaves alone) is shared, divided evenly among the
// containers, the first ones by number taking one byte more when the
// division leaves a remainder. So the containers' DiskBytes add up to the
// directory's size, and a container's figure does not depend on which of
// its neighbours wrote the journal's unsealed records. An open DB's
// figures leave out one kind of file: a segment file no container lists
// (one being written by a seal or a compaction, or one whose removal
// failed, which the next Open removes); Inspect counts those as shared.
// The figures read the directory with package os (they are observations,
// not part of the engine's I/O, so they do not go through Options.FS).

// sharedFileBytes is the size of every regular file under dir except the
// segment files that owned reports a container counts as its own.
func sharedFileBytes(dir string, owned func(num uint32) bool) int64 {
	var n int64
	segs := filepath.Join(dir, segmentDir)
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if num, ok := segmentFileNum(d.Name()); ok && owned(num) && filepath.Dir(path) == segs {
			return nil
		}
		if info, err := d.Info(); err == nil {
			n += info.Size()
		}
		return nil
	})
	return n
}

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
// segment files.
func (l *segListing) otherBytes(seg string) int64 {
	fi, err := os.Stat(seg)
	if err != nil {
		return 0
	}
	l.mu.Lock()
	if !fi.ModTime().Equal(l.mtime) || l.listedAt.Sub(l.mtime) < segListingSettled {
		l.mtime, l.listedAt, l.other = fi.ModTime(), time.Now(), l.other[:0]
		if f, err := os.Open(seg); err == nil {
			ents, _ := f.ReadDir(-1) // unsorted: cheaper than os.ReadDir
			f.Close()
			for _, e := range ents {
				if _, ok := segmentFileNum(e.Name()); !ok || !e.Type().IsRegular() {
					l.other = append(l.other, e.Name())
				}
			}
		}
	}
	other := slices.Clone(l.other)
	l.mu.Unlock()
	var n int64
	for _, name := range other {
		n += treeSize(filepath.Join(seg, name))
	}
	return n
}

// openSharedBytes is sharedFileBytes for the open DB: every file under its
// directory but the segment files, whose folder it lists only when it
// changed (segListing).
func (db *DB) openSharedBytes() int64 {
	var n int64
	segs := filepath.Join(db.dir, segmentDir)
	filepath.WalkDir(db.dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
		case d.IsDir() && path == segs:
			n += db.segList.otherBytes(segs)
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

// shareOf is the part of total bytes that falls to the container of rank
// rank (0-based, by container number) among n containers.
func shareOf(total int64, n, rank int) int64 {
	if n <= 0 {
		return 0
	}
	share := total / int64(n)
	if int64(rank) < total%int64(n) {
		share++
	}
	return share
}

// sharedDiskBytes is container num's share of the shared files now. It
// takes db.mu, so it is called before c.mu (which CreateContainer takes
// under db.mu).
func (db *DB) sharedDiskBytes(num uint32) int64 {
	total := db.openSharedBytes()
	db.mu.RLock()
	n, rank := len(db.byNum), 0
	for k := range db.byNum {
		if k < num {
			rank++
		}
	}
	db.mu.RUnlock()
	return shareOf(total, n, rank)
}

// treeSize is the size of every regular file under dir.
func treeSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
