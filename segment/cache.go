package segment

import (
	"bytes"
	"math"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Cache is an LRU of decompressed data blocks shared by Readers, keyed by
// (ReaderOptions.FileNum, block number) and bounded by the bytes it holds.
// It is safe for concurrent use. Cached blocks are immutable; Get copies
// what it returns out of them.
//
// The cache is split into shards, each an LRU with its own lock and an equal
// share of the budget, so that concurrent readers rarely wait on each other.
// A block larger than a shard's share is not cached.
type Cache struct {
	shards []cacheShard
	mask   uint64

	// fills are the blocks Get decompressed on a miss, on their way into
	// the cache; filling is set while a goroutine takes them in (fillLoop);
	// pending counts the fills offered and not yet done.
	fills   chan fill
	filling atomic.Bool
	pending atomic.Int64
}

// fill is a block offered to the cache: raw, decompressed into bb, a pooled
// buffer that the cache returns to the pool once it has copied raw.
type fill struct {
	r   *Reader
	key cacheKey
	bb  *blockBuf
	raw []byte
}

// maxFills is how many offered blocks may wait to be copied in; a miss
// that finds the queue full leaves its block uncached (a later miss offers
// it again).
const maxFills = 64

type cacheKey struct {
	file  uint64
	block uint32
}

type cacheShard struct {
	mu   sync.Mutex
	lru  *simplelru.LRU[cacheKey, []byte]
	size int64 // bytes held, by blockCost
	max  int64
}

// cacheEntryOverhead approximates the memory of one entry beyond its block:
// list element, map slot and slice header.
const cacheEntryOverhead = 128

// minShardBytes is the smallest budget worth a shard of its own.
const minShardBytes = 8 << 20

// maxCacheShards bounds the number of shards.
const maxCacheShards = 16

func blockCost(b []byte) int64 { return int64(cap(b)) + cacheEntryOverhead }

// NewCache returns a cache that holds at most maxBytes of blocks (counting
// a small per-entry overhead). maxBytes <= 0 gives a cache that holds nothing.
func NewCache(maxBytes int64) *Cache {
	n := 1
	for n < maxCacheShards && maxBytes/int64(2*n) >= minShardBytes {
		n *= 2
	}
	c := &Cache{shards: make([]cacheShard, n), mask: uint64(n - 1), fills: make(chan fill, maxFills)}
	for i := range c.shards {
		s := &c.shards[i]
		s.max = max(maxBytes, 0) / int64(n)
		s.lru, _ = simplelru.NewLRU(math.MaxInt, func(_ cacheKey, v []byte) {
			s.size -= blockCost(v)
		})
	}
	return c
}

func (c *Cache) shard(k cacheKey) *cacheShard {
	h := (k.file*0x9E3779B97F4A7C15 ^ uint64(k.block)) * 0xBF58476D1CE4E5B9
	return &c.shards[(h>>32)&c.mask]
}

func (c *Cache) get(k cacheKey) ([]byte, bool) {
	s := c.shard(k)
	s.mu.Lock()
	v, ok := s.lru.Get(k)
	s.mu.Unlock()
	return v, ok
}

// offer hands the cache block key of r, decompressed into bb (raw), to keep
// a copy of; bb is the cache's from then on. The copy is made on another
// goroutine: it is the first write to memory new to the process while the
// cache grows, a page fault per page, which the read that missed should not
// wait for.
func (c *Cache) offer(r *Reader, key cacheKey, bb *blockBuf, raw []byte) {
	if c.shard(key).max == 0 { // a cache that holds nothing: no copy to make
		putBlockBuf(bb)
		return
	}
	c.pending.Add(1)
	select {
	case c.fills <- fill{r, key, bb, raw}:
	default:
		c.pending.Add(-1)
		putBlockBuf(bb)
		return
	}
	if c.filling.CompareAndSwap(false, true) {
		go c.fillLoop()
	}
}

// fillLoop copies offered blocks into the cache until none is waiting.
func (c *Cache) fillLoop() {
	for {
		select {
		case f := <-c.fills:
			c.fill(f)
		default:
			c.filling.Store(false)
			// A block offered after the queue was found empty and before
			// filling was cleared started no loop: take it in.
			if len(c.fills) == 0 || !c.filling.CompareAndSwap(false, true) {
				return
			}
		}
	}
}

// fill copies f's block into the cache, unless it is there already or its
// file was closed (see addFor).
func (c *Cache) fill(f fill) {
	defer c.pending.Add(-1)
	defer putBlockBuf(f.bb)
	if c.wants(f.r, f.key) {
		c.addFor(f.r, f.key, bytes.Clone(f.raw)) // the copy is the page faults
	}
}

// wants reports whether block key of r is worth reading into the cache:
// the cache has room for blocks, r is open and the block is not cached.
// It is advice: addFor checks r again as it adds.
func (c *Cache) wants(r *Reader, key cacheKey) bool {
	return c.shard(key).max > 0 && !r.closed.Load() && !c.Has(key.file, key.block)
}

// addFor adds block key of r unless r was closed meanwhile. Reader.Close
// sets closed before it evicts the file's blocks, and the check and the add
// hold the shard's lock that the eviction takes, so a block of a closed file
// is never left behind.
func (c *Cache) addFor(r *Reader, key cacheKey, block []byte) {
	s := c.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !r.closed.Load() {
		s.addLocked(key, block)
	}
}

// add inserts a block, evicting the least recently used ones to make room.
// The block must not be modified afterwards.
func (c *Cache) add(k cacheKey, v []byte) {
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addLocked(k, v)
}

// addLocked is add with s's lock held.
func (s *cacheShard) addLocked(k cacheKey, v []byte) {
	cost := blockCost(v)
	if cost > s.max || s.lru.Contains(k) {
		return // too large, or another reader filled it first
	}
	for s.size+cost > s.max {
		s.lru.RemoveOldest()
	}
	s.lru.Add(k, v)
	s.size += cost
}

// EvictFile drops every cached block of file. Reader.Close calls it.
func (c *Cache) EvictFile(file uint64) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for _, k := range s.lru.Keys() {
			if k.file == file {
				s.lru.Remove(k)
			}
		}
		s.mu.Unlock()
	}
}

// Size returns the bytes the cache holds, counting per-entry overhead.
func (c *Cache) Size() int64 {
	var n int64
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.size
		s.mu.Unlock()
	}
	return n
}

// Has reports whether block blk of file (a ReaderOptions.FileNum) is
// cached, without making it recently used.
func (c *Cache) Has(file uint64, blk uint32) bool {
	k := cacheKey{file, blk}
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lru.Contains(k)
}

// Len returns the number of cached blocks.
func (c *Cache) Len() int {
	var n int
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.lru.Len()
		s.mu.Unlock()
	}
	return n
}
