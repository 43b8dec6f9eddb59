package segment

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestCacheSlotsReused adds many more blocks than a small slotted cache
// holds: evicted blocks' slots are handed out again, so the slots ever
// used never exceed what the budget holds, and every block read back is
// the one added under its key.
func TestCacheSlotsReused(t *testing.T) {
	const block = 4096
	c := NewCache(minShardBytes, block) // one shard
	defer c.Close()
	s := &c.shards[0]
	capacity := int32(minShardBytes / (block + cacheEntryOverhead))
	val := func(i uint32) []byte { return bytes.Repeat([]byte{byte(i), byte(i >> 8)}, block/2) }
	for i := range uint32(10 * capacity) {
		c.add(cacheKey{file: 1, block: i}, val(i))
		if s.slots.next > capacity {
			t.Fatalf("after %d adds: %d slots used, room for %d", i+1, s.slots.next, capacity)
		}
	}
	if got := int32(c.Len()); got != capacity {
		t.Fatalf("%d blocks cached, room for %d", got, capacity)
	}
	for i := range uint32(10 * capacity) {
		if v, ok := c.get(cacheKey{file: 1, block: i}); ok && !bytes.Equal(v, val(i)) {
			t.Fatalf("block %d holds another block's bytes", i)
		}
	}
}

// TestGetBodyOutlivesSlot reads records through a cache of one slot, so
// that each block read evicts the last and writes over its slot: every
// Body returned earlier must still be its record's.
func TestGetBodyOutlivesSlot(t *testing.T) {
	recs := genRecords(rand.New(rand.NewPCG(11, 12)), 200, 0)
	const block = 2048
	path, hs, _ := writeSegment(t, t.TempDir(), recs, WriterOptions{BlockSize: block, Compression: CompressionS2})
	cache := NewCache(block+cacheEntryOverhead, block)
	defer cache.Close()
	r, err := Open(path, ReaderOptions{Cache: cache, FileNum: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := make([]Record, len(hs))
	var buf []byte
	for i, h := range hs {
		if err := r.Prefetch(h.Block); err != nil { // a hit, from the one slot
			t.Fatal(err)
		}
		if i%2 == 0 {
			err = r.Get(h, &got[i])
		} else {
			buf, err = r.GetAppend(h, &got[i], buf) // appended to one growing buffer
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if cache.shards[0].slots.next != 1 {
		t.Fatalf("%d slots used, want 1", cache.shards[0].slots.next)
	}
	for i := range recs {
		if !reflect.DeepEqual(got[i], recs[i]) {
			t.Fatalf("record %d: %+v, want %+v", i, got[i], recs[i])
		}
	}
}

// TestWriterFillsCache writes a segment with the cache in its options:
// every data block is cached as written, while there is room, with no
// block evicted for it; an aborted writer's blocks are dropped.
func TestWriterFillsCache(t *testing.T) {
	recs := genRecords(rand.New(rand.NewPCG(13, 14)), 300, 0)
	const block = 2048
	cache := NewCache(64<<20, block)
	defer cache.Close()
	path, hs, st := writeSegment(t, t.TempDir(), recs, WriterOptions{BlockSize: block, Compression: CompressionZstd, Cache: cache, FileNum: 4})
	if cache.Len() != int(st.Blocks) {
		t.Fatalf("%d blocks cached after writing %d", cache.Len(), st.Blocks)
	}
	r, err := Open(path, ReaderOptions{Cache: cache, FileNum: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	wantRecords(t, r, hs, recs)
	if cache.pending.Load() != 0 {
		t.Fatalf("reads of a file just written missed the cache (%d offered)", cache.pending.Load())
	}

	// A cache with room for 3 blocks keeps the first 3 written and evicts
	// nothing for the rest.
	small := NewCache(3*(block+cacheEntryOverhead), block)
	defer small.Close()
	small.add(cacheKey{file: 9, block: 0}, make([]byte, block))
	writeSegment(t, t.TempDir(), recs, WriterOptions{BlockSize: block, Cache: small, FileNum: 5})
	if !small.Has(9, 0) || small.Len() != 3 || !small.Has(5, 0) || !small.Has(5, 1) {
		t.Fatalf("small cache: %d blocks, block of file 9 kept %v", small.Len(), small.Has(9, 0))
	}

	w, err := Create(path+".aborted", WriterOptions{BlockSize: block, Cache: cache, FileNum: 6})
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if _, err := w.Add(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if !cache.Has(6, 0) {
		t.Fatal("a block flushed by the writer is not cached")
	}
	w.Abort()
	if cache.Has(6, 0) {
		t.Fatal("an aborted writer's block is still cached")
	}
}

// TestWarm fills a cache from a file: all of it when it fits, and only
// what fits, evicting nothing, when it does not; stop ends it early.
func TestWarm(t *testing.T) {
	recs := genRecords(rand.New(rand.NewPCG(15, 16)), 400, 0)
	const block = 2048
	path, hs, st := writeSegment(t, t.TempDir(), recs, WriterOptions{BlockSize: block, Compression: CompressionS2})
	open := func(c *Cache) *Reader {
		r, err := Open(path, ReaderOptions{Cache: c, FileNum: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}

	big := NewCache(64<<20, block)
	defer big.Close()
	wantWarmed(t, open(big), big, func() bool { return false }, st, hs, recs)

	small := NewCache(4*(block+cacheEntryOverhead), block)
	defer small.Close()
	small.add(cacheKey{file: 9, block: 0}, make([]byte, block))
	if full, err := open(small).Warm(func() bool { return false }); err != nil || !full {
		t.Fatalf("Warm of a small cache = %v, %v; want full", full, err)
	}
	if !small.Has(9, 0) || small.Len() < 2 {
		t.Fatalf("small cache after Warm: %d blocks, first block kept %v", small.Len(), small.Has(9, 0))
	}

	stopped := NewCache(64<<20, block)
	defer stopped.Close()
	calls := 0
	if _, err := open(stopped).Warm(func() bool { calls++; return calls > 2 }); err != nil {
		t.Fatal(err)
	}
	if stopped.Len() != 2 {
		t.Fatalf("Warm stopped after 2 blocks cached %d", stopped.Len())
	}
}

// TestWarmWithReads reads while a warm-up runs: a block that a read
// missed is cached by the read's offer before the warm-up reaches it, and
// the warm-up then leaves it as it is; every block ends up cached once and
// every record reads back as written.
func TestWarmWithReads(t *testing.T) {
	recs := genRecords(rand.New(rand.NewPCG(17, 18)), 400, 0)
	const block = 2048
	path, hs, st := writeSegment(t, t.TempDir(), recs, WriterOptions{BlockSize: block, Compression: CompressionS2})
	cache := NewCache(64<<20, block)
	defer cache.Close()
	r, err := Open(path, ReaderOptions{Cache: cache, FileNum: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	last := hs[len(hs)-1]
	calls := 0
	stop := func() bool {
		calls++
		if calls == 2 { // the warm-up has cached block 0 and not yet the last
			var got Record
			if err := r.Get(last, &got); err != nil || !reflect.DeepEqual(got, recs[len(recs)-1]) {
				t.Errorf("Get(%s) during the warm-up = %+v, %v", last, got, err)
			}
			cache.settle(t)
			if !cache.Has(1, last.Block) {
				t.Errorf("block %d, read during the warm-up, was not cached", last.Block)
			}
		}
		return false
	}
	wantWarmed(t, r, cache, stop, st, hs, recs)
}

// wantWarmed warms c with r's file, and fails the test unless the warm-up
// ends with every block of the file cached, once, and every record then
// reads back as written without a miss.
func wantWarmed(t *testing.T, r *Reader, c *Cache, stop func() bool, st Stats, hs []Handle, recs []Record) {
	t.Helper()
	if full, err := r.Warm(stop); err != nil || full {
		t.Fatalf("Warm = %v, %v", full, err)
	}
	if c.Len() != int(st.Blocks) {
		t.Fatalf("%d blocks cached for a file of %d", c.Len(), st.Blocks)
	}
	wantRecords(t, r, hs, recs)
	if c.pending.Load() != 0 {
		t.Fatal("a read after the warm-up missed")
	}
}

// TestCacheCloseRacesFills closes a cache while blocks are being offered
// to it, read from it and added to it: run with -race, nothing may touch
// the cache's memory once Close has given it back, and every call after
// Close misses or does nothing.
func TestCacheCloseRacesFills(t *testing.T) {
	recs := genRecords(rand.New(rand.NewPCG(17, 18)), 300, 0)
	const block = 1024
	path, hs, _ := writeSegment(t, t.TempDir(), recs, WriterOptions{BlockSize: block, Compression: CompressionS2})
	for range 20 {
		cache := NewCache(64<<20, block)
		r, err := Open(path, ReaderOptions{Cache: cache, FileNum: 1})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			var rec Record
			for i, h := range hs {
				if err := r.Get(h, &rec); err != nil || !reflect.DeepEqual(rec, recs[i]) {
					t.Errorf("Get(%s) = %+v, %v", h, rec, err)
					return
				}
			}
		}()
		cache.Close()
		<-done
		cache.settle(t)
		if cache.Len() != 0 {
			t.Fatalf("%d blocks in a closed cache", cache.Len())
		}
		r.Close()
	}
}
