//go:build !unix

package vfs

// Map reports that files cannot be mapped on this system: read them.
func Map(fsys FS, f File, size int64) (data []byte, unmap func() error, ok bool, err error) {
	return nil, nil, false, nil
}
