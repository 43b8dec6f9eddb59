package index

import (
	"fmt"
	"runtime"
	"testing"
)

// TestMemoryPerItem measures the heap one item costs in the index,
// excluding the id string itself.
func TestMemoryPerItem(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a million items")
	}
	const n = 1_000_000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("item-%011d", i) // 16 bytes
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	x := New(func(ts int64, ttl int32) int64 { return ts + 3600 })
	for i, id := range ids {
		x.Put(Slot{ID: id, Seq: uint64(i + 1), TS: 1_700_000_000 + int64(i/100_000), TTL: 0, Size: 200, Loc: Loc{File: uint32(1 + i/50_000), Block: uint32(i % 97), Off: uint32(i % 4096)}})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%d items: %.1f B/item of index (ids excluded, they are shared with the caller)", n, per)
	if per > 100 {
		t.Errorf("index costs %.1f B/item, more than the 100 B budget", per)
	}
	runtime.KeepAlive(x)
}
