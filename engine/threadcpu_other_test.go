//go:build !linux

package engine

// threadCPU is 0 where the thread's CPU time is not measured.
func threadCPU() int64 { return 0 }
