package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/ebbdb/ebb/engine/vfs"
)

// dirLock is an exclusive advisory lock on a database directory. flock locks
// belong to an open file description, so a second Open of the same directory
// fails whether it comes from this process or another.
type dirLock struct{ f vfs.File }

// lockDir opens dir's LOCK file through fsys and flocks it.
func lockDir(fsys vfs.FS, dir string) (*dirLock, error) {
	path := filepath.Join(dir, "LOCK")
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ebb: open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("ebb: lock %s: %w", path, err)
	}
	return &dirLock{f: f}, nil
}

func (l *dirLock) release() error {
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	return l.f.Close()
}
