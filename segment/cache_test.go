package segment

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
)

func TestCacheEviction(t *testing.T) {
	const block = 1000
	const adds = 20_000
	for _, budget := range []int64{0, 5000, 64 << 20} {
		c := NewCache(budget)
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

func TestCacheLRUOrder(t *testing.T) {
	c := NewCache(3 * (100 + cacheEntryOverhead))
	k := func(i uint32) cacheKey { return cacheKey{file: 1, block: i} }
	for i := range uint32(3) {
		c.add(k(i), make([]byte, 100))
	}
	c.get(k(0)) // 1 is now the least recently used
	c.add(k(3), make([]byte, 100))
	if _, ok := c.get(k(1)); ok {
		t.Error("least recently used block survived")
	}
	for _, i := range []uint32{0, 2, 3} {
		if _, ok := c.get(k(i)); !ok {
			t.Errorf("block %d evicted", i)
		}
	}
	c.add(k(0), make([]byte, 100)) // already present: no double counting
	if want := int64(3 * (100 + cacheEntryOverhead)); c.Size() != want {
		t.Errorf("Size = %d, want %d", c.Size(), want)
	}
	c.add(k(9), make([]byte, 10_000)) // larger than the budget: not cached
	if _, ok := c.get(k(9)); ok || c.Len() != 3 {
		t.Error("oversized block cached")
	}
	c.EvictFile(2)
	if c.Len() != 3 {
		t.Error("EvictFile dropped another file's blocks")
	}
	c.EvictFile(1)
	if c.Len() != 0 || c.Size() != 0 {
		t.Errorf("after EvictFile: %d blocks, %d bytes", c.Len(), c.Size())
	}
}

// TestCacheSharedReaders reads two segments through one small cache from
// many goroutines: the cache stays within budget and data stays right.
func TestCacheSharedReaders(t *testing.T) {
	dir := t.TempDir()
	cache := NewCache(16 << 10)
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
