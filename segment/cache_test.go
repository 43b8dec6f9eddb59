package segment

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"
)

// get returns a copy of block k, if it is cached.
func (c *Cache) get(k cacheKey) ([]byte, bool) {
	var out []byte
	ok, _ := c.view(k, func(raw []byte) error {
		out = bytes.Clone(raw)
		return nil
	})
	return out, ok
}

// add adds a copy of v as block k, evicting others for room.
func (c *Cache) add(k cacheKey, v []byte) { c.addFor(nil, k, v, true) }

func TestCacheEviction(t *testing.T) {
	const block = 1000
	const adds = 20_000
	for _, budget := range []int64{0, 5000, 64 << 20} {
		c := NewCache(budget, 0)
		for i := range uint32(adds) {
			k := cacheKey{file: uint64(i % 3), block: i}
			c.add(k, make([]byte, block))
			if c.Size() > budget {
				t.Fatalf("budget %d: holds %d bytes", budget, c.Size())
			}
			if v, ok := c.get(k); budget >= 64<<20 && (!ok || len(v) != block) {
				t.Fatalf("budget %d: block just added is missing", budget)
			}
		}
		perShard := budget / int64(len(c.shards))
		// Shards fill unevenly; allow each to fall one block short.
		wantMin := (perShard/(block+cacheEntryOverhead) - 1) * int64(len(c.shards))
		if wantMin = min(wantMin, adds); int64(c.Len()) < wantMin {
			t.Errorf("budget %d: only %d blocks cached, want at least %d", budget, c.Len(), wantMin)
		}
		if budget >= 64<<20 && len(c.shards) < 2 {
			t.Errorf("budget %d: %d shards", budget, len(c.shards))
		}
	}
}

// TestCacheLRUOrder runs with blocks on the Go heap (slots of the default
// block size, four times larger than the blocks) and with blocks in slots
// of their own size.
func TestCacheLRUOrder(t *testing.T) {
	const block = 128 // a size class of Go's allocator: a heap copy costs the same
	for _, blockSize := range []int{0, block} {
		c := NewCache(3*(block+cacheEntryOverhead), blockSize)
		k := func(i uint32) cacheKey { return cacheKey{file: 1, block: i} }
		val := func(i uint32) []byte { return bytes.Repeat([]byte{byte(i)}, block) }
		for i := range uint32(3) {
			c.add(k(i), val(i))
		}
		c.get(k(0)) // 1 is now the least recently used
		c.add(k(3), val(3))
		if _, ok := c.get(k(1)); ok {
			t.Errorf("block size %d: least recently used block survived", blockSize)
		}
		for _, i := range []uint32{0, 2, 3} {
			if v, ok := c.get(k(i)); !ok || !bytes.Equal(v, val(i)) {
				t.Errorf("block size %d: block %d = %v, %v", blockSize, i, v, ok)
			}
		}
		s := c.shard(k(0))
		if blockSize != 0 && (s.slots.next != 3 || !s.hasSlots) {
			t.Errorf("block size %d: %d slots handed out for 3 blocks", blockSize, s.slots.next)
		}
		c.add(k(0), val(0)) // already present: no double counting
		if want := int64(3 * (block + cacheEntryOverhead)); c.Size() != want {
			t.Errorf("block size %d: Size = %d, want %d", blockSize, c.Size(), want)
		}
		c.add(k(9), make([]byte, 10_000)) // larger than the budget: not cached
		if _, ok := c.get(k(9)); ok || c.Len() != 3 {
			t.Errorf("block size %d: oversized block cached", blockSize)
		}
		c.EvictFile(2, 10)
		if c.Len() != 3 {
			t.Errorf("block size %d: EvictFile dropped another file's blocks", blockSize)
		}
		c.EvictFile(1, 10)
		if c.Len() != 0 || c.Size() != 0 {
			t.Errorf("block size %d: after EvictFile: %d blocks, %d bytes", blockSize, c.Len(), c.Size())
		}
		c.Close()
		c.add(k(5), val(5))
		if _, ok := c.get(k(5)); ok || c.Len() != 0 {
			t.Errorf("block size %d: a closed cache took a block in", blockSize)
		}
	}
}

// TestCacheSharedReaders reads two segments through one small cache from
// many goroutines: the cache stays within budget and data stays right.
func TestCacheSharedReaders(t *testing.T) {
	dir := t.TempDir()
	cache := NewCache(16<<10, 0)
	type seg struct {
		r    *Reader
		recs []Record
		hs   []Handle
	}
	var segs []seg
	for i := range 2 {
		recs := genRecords(rand.New(rand.NewPCG(uint64(i), 9)), 500, 0)
		path, hs, _ := writeSegment(t, dir, recs, WriterOptions{BlockSize: 1024, Compression: CompressionS2})
		r, err := Open(path, ReaderOptions{Cache: cache, FileNum: uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		segs = append(segs, seg{r, recs, hs})
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			var got Record
			for range 3000 {
				s := segs[rng.IntN(len(segs))]
				i := rng.IntN(len(s.hs))
				if err := s.r.Get(s.hs[i], &got); err != nil || !reflect.DeepEqual(got, s.recs[i]) {
					t.Errorf("Get: %v", err)
					return
				}
				if !bytes.Equal(got.Body, s.recs[i].Body) {
					t.Error("wrong body")
					return
				}
			}
		})
	}
	wg.Wait()
	if cache.Size() > 16<<10 {
		t.Errorf("cache holds %d bytes", cache.Size())
	}
	if cache.Len() == 0 {
		t.Error("nothing cached")
	}
}

// settle waits until every block offered to c has been taken in or
// dropped.
func (c *Cache) settle(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.pending.Load() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d blocks still offered to the cache after 10 s", c.pending.Load())
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// wantRecords reads every record of r at its handle and fails the test
// unless each is the one written there.
func wantRecords(t testing.TB, r *Reader, hs []Handle, recs []Record) {
	t.Helper()
	for i, h := range hs {
		var got Record
		if err := r.Get(h, &got); err != nil || !reflect.DeepEqual(got, recs[i]) {
			t.Fatalf("Get(%s) = %+v, %v; want %+v", h, got, err, recs[i])
		}
	}
}

// TestCacheFillsInBackground checks that a missed block is kept by the
// background fill, that a second Get of it reads the cached copy, and that
// a Body from before the fill stays the record's.
func TestCacheFillsInBackground(t *testing.T) {
	recs := genRecords(rand.New(rand.NewPCG(5, 6)), 300, 0)
	path, hs, _ := writeSegment(t, t.TempDir(), recs, WriterOptions{BlockSize: 2048, Compression: CompressionS2})
	cache := NewCache(64<<20, 2048)
	r, err := Open(path, ReaderOptions{Cache: cache, FileNum: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	first := make([]Record, len(hs))
	blocks := map[uint32]bool{}
	for i, h := range hs {
		if err := r.Get(h, &first[i]); err != nil {
			t.Fatal(err)
		}
		blocks[h.Block] = true
		if i%32 == 31 {
			cache.settle(t) // the queue holds maxFills; keep it from dropping
		}
	}
	cache.settle(t)
	if cache.Len() != len(blocks) {
		t.Fatalf("%d blocks cached after reading %d", cache.Len(), len(blocks))
	}
	for i, h := range hs {
		var again Record
		if err := r.Get(h, &again); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again, recs[i]) || !reflect.DeepEqual(first[i], recs[i]) {
			t.Fatalf("record %d: first %+v, cached %+v, want %+v", i, first[i], again, recs[i])
		}
	}
	if cache.pending.Load() != 0 {
		t.Fatalf("hits offered %d blocks", cache.pending.Load())
	}
}

// TestCacheFillAfterClose races the background fills of missed blocks
// against Close: once every offer is settled, no block of a closed file may
// be left in the cache (its FileNum could name another file later).
func TestCacheFillAfterClose(t *testing.T) {
	recs := genRecords(rand.New(rand.NewPCG(7, 8)), 400, 0)
	dir := t.TempDir()
	path, hs, _ := writeSegment(t, dir, recs, WriterOptions{BlockSize: 1024, Compression: CompressionS2})
	cache := NewCache(64<<20, 1024)
	for round := range 50 {
		file := uint64(round)
		r, err := Open(path, ReaderOptions{Cache: cache, FileNum: file})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				var rec Record
				for i := g; i < len(hs); i += 4 {
					if err := r.Get(hs[i], &rec); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if round%2 == 1 {
			cache.settle(t) // a close after the fills, as well as during them
		}
		r.Close()
		cache.settle(t)
		for i := range cache.shards {
			s := &cache.shards[i]
			s.mu.Lock()
			s.blks.each(func(k cacheKey, _ cached) {
				if k.file == file {
					t.Errorf("round %d: block %d of the closed file is cached", round, k.block)
				}
			})
			s.mu.Unlock()
		}
	}
}

// TestPrefetch checks that Prefetch puts a block in the cache, once, that
// a Get of its records then reads the cached block, and that a closed
// reader, a reader without a cache or a block past the end add nothing.
func TestPrefetch(t *testing.T) {
	recs := genRecords(rand.New(rand.NewPCG(9, 10)), 200, 0)
	path, hs, _ := writeSegment(t, t.TempDir(), recs, WriterOptions{BlockSize: 2048, Compression: CompressionS2})
	cache := NewCache(64<<20, 2048)
	r, err := Open(path, ReaderOptions{Cache: cache, FileNum: 3})
	if err != nil {
		t.Fatal(err)
	}
	last := hs[len(hs)-1].Block
	for range 2 {
		for blk := uint32(0); blk <= last+1; blk++ {
			if err := r.Prefetch(blk); err != nil {
				t.Fatalf("Prefetch(%d): %v", blk, err)
			}
		}
		if cache.Len() != int(last)+1 {
			t.Fatalf("%d blocks cached after prefetching %d", cache.Len(), last+1)
		}
	}
	wantRecords(t, r, hs, recs)
	if cache.pending.Load() != 0 {
		t.Fatalf("Gets of prefetched blocks offered %d blocks", cache.pending.Load())
	}
	r.Close()
	if err := r.Prefetch(0); err != nil || cache.Len() != 0 {
		t.Fatalf("Prefetch on a closed reader: %v, %d blocks cached", err, cache.Len())
	}
	plain, err := Open(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.Prefetch(0); err != nil {
		t.Fatalf("Prefetch without a cache: %v", err)
	}
}

// TestCacheSecondChance reads one block between adds, evictions and the
// reuse of its slot: a block read since the last eviction outlives one that
// was not, and each read gives the block's own bytes, or a miss once it is
// gone, never the bytes of the block that took its slot.
func TestCacheSecondChance(t *testing.T) {
	const block = 128
	c := NewCache(2*(block+cacheEntryOverhead), block) // one shard, two slots
	defer c.Close()
	k := func(i uint32) cacheKey { return cacheKey{file: 1, block: i} }
	val := func(i uint32) []byte { return bytes.Repeat([]byte{byte(i)}, block) }
	want := func(i uint32, cached bool) {
		t.Helper()
		v, ok := c.get(k(i))
		if ok != cached || (ok && !bytes.Equal(v, val(i))) {
			t.Fatalf("block %d: cached %v (%v), want cached %v", i, ok, v, cached)
		}
	}
	c.add(k(0), val(0))
	c.add(k(1), val(1))
	want(0, true) // 1 is the one not read
	c.add(k(2), val(2))
	want(1, false)
	want(0, true) // read again: 2 is the one not read
	c.add(k(3), val(3))
	want(2, false)
	want(0, true)
	c.EvictFile(1, 1) // block 0 goes, and its slot is free
	want(0, false)
	c.add(k(4), val(4)) // in block 0's slot
	want(0, false)
	want(4, true)
	c.add(k(5), val(5)) // 3 was not read since it was added
	want(3, false)
	want(4, true)
	want(5, true)
}
