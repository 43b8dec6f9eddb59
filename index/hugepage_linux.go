package index

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on the platforms Linux
// runs ebb on.
const hugePage = 2 << 20

// adviseHuge asks the kernel to back the whole huge pages inside s with
// transparent huge pages when they are first touched (madvise
// MADV_HUGEPAGE). It is for large arrays that a bulk load is about to
// fill, fresh from the system: one fault per 2 MiB instead of one per
// 4 KiB page, which on a virtual machine, where a fault costs several
// microseconds, is much of what building a large index costs, and fewer
// TLB misses for the random lookups that follow. The advice is a hint: it
// changes no contents, and a kernel that has transparent huge pages off,
// or memory already touched, ignores it. Errors are ignored for the same
// reason.
func adviseHuge[T any](s []T) {
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
