//go:build !linux

package vfs

// SyncData makes f's data durable: Sync, where fdatasync is not used.
func SyncData(f File) error { return f.Sync() }
