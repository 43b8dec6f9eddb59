package segment

import (
	"fmt"
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on the platforms Linux
// runs ebb on.
const hugePage = 2 << 20

// reserveArena maps n bytes of anonymous memory (plus up to a huge page, to
// align it) outside the Go heap, and asks for transparent huge pages on it.
// Nothing is committed until first written (MAP_NORESERVE), and then a fault
// maps 2 MiB at once where a 4 KiB page fault on a virtual machine costs
// microseconds: a cache growing by a hundred MB spends milliseconds, not a
// second, in page faults. release unmaps it; nothing may touch the memory
// afterwards.
func reserveArena(n int) (mem []byte, release func(), err error) {
	m, err := syscall.Mmap(-1, 0, n+hugePage, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil, nil, fmt.Errorf("segment: reserve %d bytes for the block cache: %w", n, err)
	}
	skip := int(-uintptrOf(m) & (hugePage - 1))
	mem = m[skip : skip+n : skip+n]
	_ = syscall.Madvise(mem, syscall.MADV_HUGEPAGE) // advice: ignored where unsupported
	return mem, func() { syscall.Munmap(m) }, nil
}

// uintptrOf returns the address of b's first byte.
func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
