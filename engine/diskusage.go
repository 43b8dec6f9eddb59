package engine

import (
	"io/fs"
	"os"
	"path/filepath"
)

// The disk figures (Stats.DiskBytes, Metrics.DiskBytes, Report.DiskBytes)
// count every byte ebb keeps under the database directory. A container
// owns its segment files; the files its containers share (the journal's
// files, the MANIFEST, the CLOCK, the LOCK and the copies under broken/)
// are divided evenly among the containers, the first ones by number taking
// one byte more when the division leaves a remainder. So the containers'
// DiskBytes add up to the directory's size, and a container's figure does
// not depend on which of its neighbours wrote the journal's unsealed
// records. The figures read the directory with package os (they are
// observations, not part of the engine's I/O, so they do not go through
// Options.FS).

// sharedFileBytes is the size of the shared files other than the journal's:
// MANIFEST, CLOCK, LOCK and broken/.
func sharedFileBytes(dir string) int64 {
	var n int64
	for _, name := range []string{manifestName, clockName, lockName} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n + treeSize(filepath.Join(dir, brokenDir))
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
	total := db.jnl.Size() + sharedFileBytes(db.dir)
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
