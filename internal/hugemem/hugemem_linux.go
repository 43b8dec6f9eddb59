// Package hugemem asks for transparent huge pages for large arrays that a
// bulk load is about to fill.
//
// A process touching memory new to it takes a page fault per 4 KiB page.
// On bare metal that is cheap; on a virtual machine each fault can cost
// several microseconds, and opening a large database touches a hundred
// megabytes or more of new memory (its index), which then costs as much as
// all the rest of the work. With transparent huge pages a fault maps 2 MiB
// at once, and the random lookups into the array that follow miss the TLB
// less often. Linux gives them only to memory advised with madvise
// MADV_HUGEPAGE where transparent_hugepage is "madvise", the common
// setting; Advise does that, and nothing elsewhere.
package hugemem

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on the platforms Linux
// runs ebb on.
const hugePage = 2 << 20

// Advise asks the kernel to back the whole huge pages inside s with
// transparent huge pages when they are first touched. It is for a large
// array fresh from the allocator that is about to be filled; memory already
// touched stays as it is. The advice changes no contents and may be
// ignored (transparent huge pages off, no huge page free), so errors are
// ignored too. The advice stays with the address range after s is freed,
// for whatever the Go runtime puts there next: large arrays again, as a
// rule, since the runtime hands out address ranges by size class.
func Advise[T any](s []T) {
	if len(s) == 0 {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), uintptr(len(s))*unsafe.Sizeof(s[0]))
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	from := (start+hugePage-1)&^(hugePage-1) - start // offset of the first whole huge page
	to := (start+uintptr(len(b)))&^(hugePage-1) - start
	if from >= to || to > uintptr(len(b)) {
		return
	}
	syscall.Madvise(b[from:to], syscall.MADV_HUGEPAGE)
}
