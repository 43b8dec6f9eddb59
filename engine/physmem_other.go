//go:build !linux

package engine

// physicalMemory returns the machine's RAM in bytes, or 0 when unknown.
func physicalMemory() int64 { return 0 }
