package segment

import "testing"

// TestClock checks the second-chance order of eviction: unreferenced blocks
// go first, in hand order; a referenced one is passed over once; when every
// block is referenced, the hand clears them all and evicts the first it
// comes back to. Freed entries are reused before the clock grows.
func TestClock(t *testing.T) {
	k := func(i uint32) cacheKey { return cacheKey{file: 7, block: i} }
	b := func(i uint32) cached { return cached{slot: int32(i), n: int32(100 + i)} }
	evict := func(c *clock, want uint32) {
		t.Helper()
		got, ok := c.evict()
		if !ok || !same(got, b(want)) {
			t.Fatalf("evict = %+v, %v; want block %d", got, ok, want)
		}
		if c.has(k(want)) {
			t.Fatalf("block %d still cached after its eviction", want)
		}
	}

	c := newClock()
	if _, ok := c.evict(); ok {
		t.Fatal("evict of an empty clock found a block")
	}
	for i := range uint32(3) {
		c.add(k(i), b(i))
	}
	if got, ok := c.get(k(1)); !ok || !same(got, b(1)) {
		t.Fatalf("get(1) = %+v, %v", got, ok)
	}
	evict(&c, 0) // not read
	evict(&c, 2) // 1 was read: passed over, its bit cleared
	evict(&c, 1)
	if _, ok := c.evict(); ok || c.len() != 0 {
		t.Fatalf("a block left after evicting all three (len %d)", c.len())
	}

	for i := uint32(10); i < 13; i++ {
		c.add(k(i), b(i))
	}
	if len(c.ents) != 3 {
		t.Fatalf("%d entries for 3 blocks after 3 were freed: freed entries not reused", len(c.ents))
	}
	for i := uint32(10); i < 13; i++ {
		c.get(k(i))
	}
	got, ok := c.evict() // all referenced: one turn clears them, the next evicts
	if !ok || c.len() != 2 {
		t.Fatalf("evict with every block referenced = %+v, %v (len %d)", got, ok, c.len())
	}
	if r, ok := c.remove(k(11)); ok != !same(got, b(11)) || (ok && !same(r, b(11))) {
		t.Fatalf("remove(11) = %+v, %v after evicting %+v", r, ok, got)
	}
	if _, ok := c.remove(k(99)); ok {
		t.Fatal("remove of a block never added found it")
	}
	n := 0
	c.each(func(key cacheKey, v cached) {
		n++
		if !c.has(key) || !same(v, b(key.block)) {
			t.Errorf("each gave %v: %+v", key, v)
		}
	})
	if n != c.len() {
		t.Fatalf("each gave %d blocks, len %d", n, c.len())
	}
}

// same reports whether a and b are the same slotted block.
func same(a, b cached) bool { return a.heap == nil && b.heap == nil && a.slot == b.slot && a.n == b.n }
