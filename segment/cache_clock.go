package segment

import "sync/atomic"

// clock is one shard's index of its cached blocks, with second-chance
// (CLOCK) eviction: an approximation of least-recently-used that lets a hit
// record itself without a write lock. A hit sets its entry's referenced bit
// (get, under the shard's read lock, so readers of a shard never wait for
// each other); eviction, under the write lock, sweeps a hand round the
// entries, clearing the bits it finds set and evicting the first entry whose
// bit is clear. An LRU list would have to move the entry on every hit, which
// needs the shard to itself: eight readers on two cores then queued on the
// shard locks and one read in a hundred took over 100 µs.
//
// Every method but get, has and len needs the shard's write lock.
type clock struct {
	idx  map[cacheKey]int32 // the entry of each cached block
	ents []clockEntry       // live entries and free ones, in hand order
	free []int32            // free entries, reused before ents grows
	hand int                // the next entry eviction looks at
}

// clockEntry is one slot of a clock: a cached block, or free (!live).
type clockEntry struct {
	key  cacheKey
	b    cached
	live bool
	// ref is the referenced bit, 1 when a hit has come since the hand last
	// passed. Hits set it under the read lock, so it is read and written
	// atomically.
	ref uint32
}

func newClock() clock { return clock{idx: make(map[cacheKey]int32)} }

// get returns block k and marks it referenced.
func (c *clock) get(k cacheKey) (cached, bool) {
	i, ok := c.idx[k]
	if !ok {
		return cached{}, false
	}
	e := &c.ents[i]
	if atomic.LoadUint32(&e.ref) == 0 { // a hit on a referenced block writes nothing
		atomic.StoreUint32(&e.ref, 1)
	}
	return e.b, true
}

// has reports whether block k is cached, without marking it.
func (c *clock) has(k cacheKey) bool {
	_, ok := c.idx[k]
	return ok
}

// len returns the number of cached blocks.
func (c *clock) len() int { return len(c.idx) }

// add caches b as block k, which must not be cached already. A new block
// starts unreferenced: one that is never read (a warm-up's, a seal's, a
// scan's) goes before one that was, whatever their order of adding.
func (c *clock) add(k cacheKey, b cached) {
	var i int32
	if n := len(c.free); n > 0 {
		i, c.free = c.free[n-1], c.free[:n-1]
	} else {
		c.ents = append(c.ents, clockEntry{})
		i = int32(len(c.ents) - 1)
	}
	c.ents[i] = clockEntry{key: k, b: b, live: true}
	c.idx[k] = i
}

// remove uncaches block k and returns it, if it was cached.
func (c *clock) remove(k cacheKey) (cached, bool) {
	i, ok := c.idx[k]
	if !ok {
		return cached{}, false
	}
	return c.drop(i), true
}

// evict uncaches the block the hand finds first without its referenced bit,
// clearing the bits it passes, and returns it; false when nothing is cached.
// Two turns of the hand at most: the first clears every bit it passes.
func (c *clock) evict() (cached, bool) {
	if len(c.idx) == 0 {
		return cached{}, false
	}
	for range 2*len(c.ents) + 1 {
		if c.hand >= len(c.ents) {
			c.hand = 0
		}
		i := c.hand
		c.hand++
		e := &c.ents[i]
		if !e.live {
			continue
		}
		if e.ref != 0 {
			e.ref = 0 // the write lock is held: no hit sets it meanwhile
			continue
		}
		return c.drop(int32(i)), true
	}
	return cached{}, false // not reached: the first turn clears every bit it passes
}

// drop frees entry i, which is live, and returns its block.
func (c *clock) drop(i int32) cached {
	e := &c.ents[i]
	b := e.b
	delete(c.idx, e.key)
	*e = clockEntry{}
	c.free = append(c.free, i)
	return b
}

// each calls fn with every cached block.
func (c *clock) each(fn func(k cacheKey, b cached)) {
	for _, i := range c.idx {
		fn(c.ents[i].key, c.ents[i].b)
	}
}

// reset uncaches everything, without telling anyone.
func (c *clock) reset() { *c = newClock() }
