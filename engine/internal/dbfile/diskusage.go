package dbfile

import (
	"io/fs"
	"path/filepath"

	"github.com/ebbdb/ebb/engine/vfs"
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
// failed, which the next Open removes); the offline Inspect counts those as
// shared.
// The figures read the directory through a vfs.FS: the open DB's through
// Options.FS, the offline tools' through vfs.OS.

// SharedFileBytes is the size of every regular file under dir except the
// segment files that owned reports a container counts as its own.
func SharedFileBytes(fsys vfs.FS, dir string, owned func(num uint32) bool) int64 {
	var n int64
	segs := filepath.Join(dir, SegmentDir)
	vfs.WalkDir(fsys, dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if num, ok := SegmentFileNum(d.Name()); ok && owned(num) && filepath.Dir(path) == segs {
			return nil
		}
		if info, err := d.Info(); err == nil {
			n += info.Size()
		}
		return nil
	})
	return n
}

// ShareOf is the part of total bytes that falls to the container of rank
// rank (0-based, by container number) among n containers.
func ShareOf(total int64, n, rank int) int64 {
	if n <= 0 {
		return 0
	}
	share := total / int64(n)
	if int64(rank) < total%int64(n) {
		share++
	}
	return share
}

// TreeSize is the size of every regular file under dir.
func TreeSize(fsys vfs.FS, dir string) int64 {
	var n int64
	vfs.WalkDir(fsys, dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
