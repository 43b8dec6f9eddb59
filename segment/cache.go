package segment

import (
	"bytes"
	"sync"
	"sync/atomic"
)

// Cache holds decompressed data blocks shared by Readers, keyed by
// (ReaderOptions.FileNum, block number) and bounded by the bytes it holds,
// evicting the least recently used roughly (second chance, see clock). It
// is safe for concurrent use.
//
// Blocks of about the size the files are written with (more than half of
// it, up to all of it) live in slots of memory the cache reserves for
// itself outside the Go heap (slotArena); others are copies on the heap. A
// slot is reused once its block is evicted, so a block is only ever read
// under its shard's lock, and what a Reader returns is copied out of it.
//
// The cache is split into shards, each with its own index of blocks, lock,
// an equal share of the budget and its own slots. Reads of a shard share
// its lock; adding and evicting blocks take it alone, briefly. A block
// larger than a shard's share is not cached.
//
// Close gives the memory back; a closed cache holds nothing and takes
// nothing in.
type Cache struct {
	shards []cacheShard
	mask   uint64
	max    int64        // the budget, in cost bytes
	used   atomic.Int64 // bytes held, by cost, across shards

	// closed is set by Close before it takes alive; alive is held for
	// reading while a slot is filled outside its shard's lock (addFor), so
	// that Close never gives the memory back under a copy.
	closed atomic.Bool
	alive  sync.RWMutex

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

// cached is one block of a shard: in slot slot of the shard's arena, its
// first n bytes, or, when heap is not nil, heap.
type cached struct {
	heap []byte
	slot int32
	n    int32
}

type cacheShard struct {
	// mu is held for reading by views of the shard's blocks (see lock and
	// rlock), and for writing by whatever changes which blocks it holds:
	// a slot is reused only once no view can be reading it.
	mu    sync.RWMutex
	blks  clock
	slots slotArena
	// hasSlots is set when the shard's slots were reserved (they are given
	// back at Close, hasSlots stays).
	hasSlots bool
	size     int64 // bytes held, by cost
	max      int64
	closed   bool
	used     *atomic.Int64 // the cache's
}

// cacheEntryOverhead approximates the memory of one entry beyond its block:
// its clock entry, map slot and slice header.
const cacheEntryOverhead = 128

// minShardBytes is the smallest budget worth a shard of its own.
const minShardBytes = 8 << 20

// maxCacheShards bounds the number of shards.
const maxCacheShards = 16

// cost is the memory b takes in s: its slot, or its heap copy.
func (s *cacheShard) cost(b cached) int64 {
	if b.heap != nil {
		return int64(cap(b.heap)) + cacheEntryOverhead
	}
	return int64(s.slots.slotSize) + cacheEntryOverhead
}

// bytes returns b's block. s.mu is held, and must stay held while the block
// is read.
func (s *cacheShard) bytes(b cached) []byte {
	if b.heap != nil {
		return b.heap
	}
	return s.slots.bytes(b.slot)[:b.n]
}

// NewCache returns a cache that holds at most maxBytes of blocks (counting
// a small per-entry overhead), for files written with data blocks of
// blockSize bytes (WriterOptions.BlockSize; 0: DefaultBlockSize), the size
// of its slots. maxBytes <= 0 gives a cache that holds nothing.
func NewCache(maxBytes int64, blockSize int) *Cache {
	if blockSize <= 0 {
		blockSize = DefaultBlockSize
	}
	maxBytes = max(maxBytes, 0)
	n := 1
	for n < maxCacheShards && maxBytes/int64(2*n) >= minShardBytes {
		n *= 2
	}
	c := &Cache{shards: make([]cacheShard, n), mask: uint64(n - 1), max: maxBytes, fills: make(chan fill, maxFills)}
	for i := range c.shards {
		s := &c.shards[i]
		s.max = maxBytes / int64(n)
		s.used = &c.used
		s.slots = newSlotArena(s.max/int64(blockSize+cacheEntryOverhead), blockSize)
		s.hasSlots = s.slots.mem != nil
		s.blks = newClock()
	}
	return c
}

// evictedLocked accounts for b, just uncached, and gives its slot back.
// s.mu is held for writing.
func (s *cacheShard) evictedLocked(b cached) {
	cost := s.cost(b)
	s.size -= cost
	s.used.Add(-cost)
	if b.heap == nil {
		s.slots.put(b.slot)
	}
}

// lock and rlock take s.mu, trying a little while before they block. The
// shard's critical sections last a microsecond or two, and a goroutine
// that parks for one costs the one that wakes it a system call: a read
// that ends while the warm-up waits to add a block would pay it.
func (s *cacheShard) lock() {
	for range lockSpins {
		if s.mu.TryLock() {
			return
		}
	}
	s.mu.Lock()
}

func (s *cacheShard) rlock() {
	for range lockSpins {
		if s.mu.TryRLock() {
			return
		}
	}
	s.mu.RLock()
}

// lockSpins is how many times lock and rlock try before they block: about
// a microsecond on the machines ebb is measured on.
const lockSpins = 100

// Close empties the cache and gives its memory back. Reads after Close
// miss, and blocks offered are not taken in.
func (c *Cache) Close() {
	c.closed.Store(true)
	c.alive.Lock() // no slot is being filled from here on
	defer c.alive.Unlock()
	for i := range c.shards {
		s := &c.shards[i]
		s.lock()
		s.closed = true
		s.blks.each(func(_ cacheKey, b cached) { s.evictedLocked(b) })
		s.blks.reset()
		s.slots.close()
		s.mu.Unlock()
	}
}

func (c *Cache) shard(k cacheKey) *cacheShard {
	h := (k.file*0x9E3779B97F4A7C15 ^ uint64(k.block)) * 0xBF58476D1CE4E5B9
	return &c.shards[(h>>32)&c.mask]
}

// view calls fn with block k, if it is cached, and reports whether it was.
// fn runs under the shard's read lock, alongside other views, and must not
// keep raw, nor any part of it, beyond its return: the memory is reused
// once the block is evicted.
func (c *Cache) view(k cacheKey, fn func(raw []byte) error) (bool, error) {
	s := c.shard(k)
	s.rlock()
	defer s.mu.RUnlock()
	b, ok := s.blks.get(k)
	if !ok {
		return false, nil
	}
	return true, fn(s.bytes(b))
}

// offer hands the cache block key of r, decompressed into bb (raw), to keep
// a copy of; bb is the cache's from then on. The copy is made on another
// goroutine, so that the read that missed does not wait for it. While a
// warm-up runs (Reader.Warm), a block a read offers is one the warm-up will
// find cached and skip: the copy costs a fraction of the decompression it
// saves the warm-up, which then ends sooner.
func (c *Cache) offer(r *Reader, key cacheKey, bb *blockBuf, raw []byte) {
	if c.shard(key).max == 0 { // a cache that holds nothing
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
	c.addFor(f.r, f.key, f.raw, true)
}

// wants reports whether block key of r is worth reading into the cache:
// the cache has room for blocks, r is open and the block is not cached.
// It is advice: addFor checks again as it adds.
func (c *Cache) wants(r *Reader, key cacheKey) bool {
	return c.shard(key).max > 0 && !r.closed.Load() && !c.Has(key.file, key.block)
}

// hasRoom reports whether block key's shard can take a full-size block
// without evicting anything.
func (c *Cache) hasRoom(key cacheKey) bool {
	s := c.shard(key)
	s.rlock()
	defer s.mu.RUnlock()
	return !s.closed && s.size+int64(s.slots.slotSize)+cacheEntryOverhead <= s.max
}

// full reports whether the cache is within a block per shard of its
// budget: a warm-up stops there.
func (c *Cache) full() bool {
	s := &c.shards[0]
	return c.used.Load()+int64(len(c.shards))*(int64(s.slots.slotSize)+cacheEntryOverhead) > c.max
}

// addFor adds a copy of raw as block key of r (nil: of a file being
// written), unless r was closed, the block is cached already, or the cache
// was closed; without evict, also unless the shard would have to evict a
// block to make room. It reports whether the block was added. Reader.Close
// sets closed before it evicts the file's blocks, and the check and the add
// hold the shard's lock that the eviction takes, so a block of a closed
// file is never left behind.
//
// A slotted block is copied with no lock of the shard held: the slot is
// taken (and its cost counted) under the lock, filled outside it, and
// indexed under it again. The first write to a slot's memory may take a
// page fault of a whole huge page, which costs milliseconds on a virtual
// machine; readers of the shard must not wait for it. c.alive keeps Close
// from giving the memory back during the copy.
func (c *Cache) addFor(r *Reader, key cacheKey, raw []byte, evict bool) bool {
	s := c.shard(key)
	b := cached{n: int32(len(raw))}
	if !s.slotted(len(raw)) {
		b.heap = bytes.Clone(raw) // outside the lock: the allocation may wait on the collector
	}
	s.lock()
	if !s.makeRoomLocked(r, key, b, evict) {
		s.mu.Unlock()
		return false
	}
	if b.heap != nil {
		s.insertLocked(key, b)
		s.mu.Unlock()
		return true
	}
	var ok bool
	if b.slot, ok = s.slots.alloc(); !ok {
		s.mu.Unlock()
		return false // cannot happen: the budget allows no more slotted blocks than there are slots
	}
	cost := s.cost(b)
	s.size += cost // the slot's, from now on
	s.mu.Unlock()

	c.alive.RLock()
	if !c.closed.Load() {
		copy(s.slots.bytes(b.slot), raw) // the slot is this call's alone until inserted
	}
	c.alive.RUnlock()

	s.lock()
	defer s.mu.Unlock()
	if s.closed {
		return false // the memory was given back, and the slot with it
	}
	s.size -= cost
	if (r != nil && r.closed.Load()) || s.blks.has(key) {
		s.slots.put(b.slot) // closed, or added by another meanwhile
		return false
	}
	s.insertLocked(key, b)
	return true
}

// makeRoomLocked checks that b may be added as block key of r (see
// addFor) and evicts, if evict allows, what makes room for it. s.mu is
// held for writing.
func (s *cacheShard) makeRoomLocked(r *Reader, key cacheKey, b cached, evict bool) bool {
	if s.closed || (r != nil && r.closed.Load()) || s.blks.has(key) {
		return false
	}
	cost := s.cost(b)
	if cost > s.max {
		return false // larger than the shard
	}
	for s.size+cost > s.max {
		if !evict {
			return false
		}
		old, ok := s.blks.evict()
		if !ok {
			return false // not reached: size counts only blocks indexed, and slots being filled
		}
		s.evictedLocked(old)
	}
	return true
}

// insertLocked indexes b as block key and counts its cost. s.mu is held for
// writing.
func (s *cacheShard) insertLocked(key cacheKey, b cached) {
	cost := s.cost(b)
	s.blks.add(key, b)
	s.size += cost
	s.used.Add(cost)
}

// slotted reports whether a block of n bytes goes in a slot of s. What it
// reads of s is set when the cache is made, so no lock is needed.
func (s *cacheShard) slotted(n int) bool { return s.hasSlots && s.slots.fits(n) }

// EvictFile drops blocks 0 to blocks-1 of file (all a file has: its
// Stats().Blocks), each with its shard's lock held only for its own
// removal. Reader.Close and Writer.Abort call it. It costs the file's
// blocks rather than the whole cache, so that dropping many files at once
// (an expiry storm) never holds a shard for long.
func (c *Cache) EvictFile(file uint64, blocks uint32) {
	for blk := range blocks {
		k := cacheKey{file, blk}
		s := c.shard(k)
		s.lock()
		if b, ok := s.blks.remove(k); ok {
			s.evictedLocked(b)
		}
		s.mu.Unlock()
	}
}

// Size returns the bytes the cache holds, counting per-entry overhead.
func (c *Cache) Size() int64 { return c.used.Load() }

// Has reports whether block blk of file (a ReaderOptions.FileNum) is
// cached, without making it recently used.
func (c *Cache) Has(file uint64, blk uint32) bool {
	k := cacheKey{file, blk}
	s := c.shard(k)
	s.rlock()
	defer s.mu.RUnlock()
	return s.blks.has(k)
}

// Len returns the number of cached blocks.
func (c *Cache) Len() int {
	var n int
	for i := range c.shards {
		s := &c.shards[i]
		s.rlock()
		n += s.blks.len()
		s.mu.RUnlock()
	}
	return n
}
