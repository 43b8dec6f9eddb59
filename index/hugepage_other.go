//go:build !linux

package index

// adviseHuge does nothing where transparent huge pages are not asked for
// with madvise (see hugepage_linux.go).
func adviseHuge[T any](s []T) {}
