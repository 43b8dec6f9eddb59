// Package measure holds the measurements every workload takes the same way
// for every store: disk usage by walking the directory, latency histograms,
// Go heap, and a description of the machine.
package measure

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Disk is the space a directory takes.
type Disk struct {
	// Allocated is the sum of the files' allocated blocks (what du reports):
	// the space the store really takes. Sparse and preallocated-but-unwritten
	// parts of files do not count.
	Allocated int64 `json:"allocated"`
	// Apparent is the sum of the files' sizes (what ls reports).
	Apparent int64 `json:"apparent"`
	// Files is the number of regular files.
	Files int `json:"files"`
}

// DiskUsage walks dir and adds up its regular files. Files and folders that
// vanish during the walk (a compaction deleting them) are skipped, not
// errors: the figure is a sample of a store that is running.
func DiskUsage(dir string) (Disk, error) {
	var d Disk
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				if path == dir {
					return err
				}
				return nil
			}
			return err
		}
		if !e.Type().IsRegular() {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		d.Files++
		d.Apparent += info.Size()
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			d.Allocated += st.Blocks * 512
		} else {
			d.Allocated += info.Size()
		}
		return nil
	})
	return d, err
}

// DiskBytes is DiskUsage(dir).Allocated, or 0 when dir cannot be walked.
func DiskBytes(dir string) int64 {
	d, err := DiskUsage(dir)
	if err != nil {
		return 0
	}
	return d.Allocated
}

// RemoveAll removes dir, tolerating that it does not exist.
func RemoveAll(dir string) error {
	err := os.RemoveAll(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
