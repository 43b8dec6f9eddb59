package measure

import (
	"runtime"
	"runtime/debug"
)

// Heap returns the live Go heap in bytes after two full collections, with
// freed memory returned to the OS: a steady figure to subtract from another.
// It does not see memory mapped files (bbolt, Badger's tables) or memory
// allocated outside the Go heap (C allocations).
func Heap() int64 {
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
