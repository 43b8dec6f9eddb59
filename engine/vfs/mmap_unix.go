//go:build unix

package vfs

import (
	"fmt"
	"syscall"
)

// Map maps the first size bytes of the open file f read-only into memory,
// when f is a file of the operating system (OS opened it). The mapping
// stays valid after f is closed and after the file is removed, until unmap
// is called. ok is false when f cannot be mapped here (a file of another
// FS, whose reads must go through it, or an empty file): read it instead.
func Map(fsys FS, f File, size int64) (data []byte, unmap func() error, ok bool, err error) {
	if _, isOS := fsys.(osFS); !isOS || size <= 0 || size != int64(int(size)) {
		return nil, nil, false, nil
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, false, fmt.Errorf("mmap: %w", err)
	}
	return data, func() error { return syscall.Munmap(data) }, true, nil
}
