package vfs

import (
	"os"
	"syscall"
)

// SyncData makes f's data durable, and of its metadata what reading the
// data back needs (its size), but not its timestamps: fdatasync for a file
// of the operating system, Sync for any other File (whose FS then sees and
// may fail it as an fsync). For a file written in place over blocks it
// already holds, as the journal's tail is (see package journal), that spares
// each commit a write to the file system's journal, and the wait for
// whatever other files' data that journal commit would have to flush first.
func SyncData(f File) error {
	if osf, ok := f.(*os.File); ok {
		for {
			err := syscall.Fdatasync(int(osf.Fd()))
			if err != syscall.EINTR {
				if err != nil {
					return &os.PathError{Op: "fdatasync", Path: osf.Name(), Err: err}
				}
				return nil
			}
		}
	}
	return f.Sync()
}
