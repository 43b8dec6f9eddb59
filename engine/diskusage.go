package engine

import (
	"io/fs"
	"path/filepath"
)

// The disk figures (Stats.DiskBytes, Metrics.DiskBytes, Report.DiskBytes)
// count every byte under the database directory. A container owns its
// segment files; every other file (the journal's files, the MANIFEST, the
// CLOCK, the LOCK, the copies under broken/, a segment file being written
// or no longer listed, and any file ebb did not write, which it leaves
// alone) is shared, divided evenly among the containers, the first ones by
// number taking one byte more when the division leaves a remainder. So the
// containers' DiskBytes add up to the directory's size, and a container's
// figure does not depend on which of its neighbours wrote the journal's
// unsealed records. The figures read the directory with package os (they
// are observations, not part of the engine's I/O, so they do not go
// through Options.FS).

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
// takes db.mu and then each container's mu, one at a time, so it is called
// holding neither.
func (db *DB) sharedDiskBytes(num uint32) int64 {
	db.mu.RLock()
	n, rank := len(db.byNum), 0
	conts := make([]*Container, 0, n)
	for k, c := range db.byNum {
		if k < num {
			rank++
		}
		conts = append(conts, c)
	}
	db.mu.RUnlock()
	owned := make(map[uint32]bool)
	for _, c := range conts {
		c.mu.RLock()
		for _, f := range c.files {
			owned[f.num] = true
		}
		c.mu.RUnlock()
	}
	total := sharedFileBytes(db.dir, func(f uint32) bool { return owned[f] })
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
