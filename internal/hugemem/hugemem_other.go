//go:build !linux

package hugemem

// Advise does nothing where transparent huge pages are not asked for with
// madvise (see hugemem_linux.go).
func Advise[T any](s []T) {}
