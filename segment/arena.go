package segment

// slotArena is the memory of one cache shard's block slots: equal slots of
// slotSize bytes in one reservation made when the cache is created
// (reserveArena), handed out lowest first so that the memory touched stays
// as small as the blocks held. The reservation is outside the Go heap where
// the platform allows (see arena_linux.go): the cache's blocks then neither
// count toward the garbage collector's heap goal, which would double the
// memory a large cache costs, nor take a page fault per 4 KiB page as they
// are first written. Every use holds the owning shard's lock.
type slotArena struct {
	mem      []byte // the reservation; nil when none could be made
	slotSize int
	next     int32   // slots below next have been handed out at least once
	free     []int32 // slots below next free again, reused first
	release  func()  // gives the reservation back
}

// newSlotArena reserves room for slots slots of slotSize bytes; with none
// to be had (slots < 1, or the reservation failed) the arena holds nothing
// and every block goes to the Go heap.
func newSlotArena(slots int64, slotSize int) slotArena {
	a := slotArena{slotSize: slotSize}
	if slots < 1 || slotSize < 1 {
		return a
	}
	mem, release, err := reserveArena(int(slots) * slotSize)
	if err != nil {
		return a
	}
	a.mem, a.release = mem, release
	return a
}

// fits reports whether a block of n bytes belongs in a slot: one that fills
// more than half of it. Smaller and larger blocks (a file's last block, a
// record larger than a block) go to the Go heap, so that no slot wastes
// more than half its memory.
func (a *slotArena) fits(n int) bool {
	return n > a.slotSize/2 && n <= a.slotSize
}

// alloc returns a free slot, or false when every slot is taken.
func (a *slotArena) alloc() (int32, bool) {
	if n := len(a.free); n > 0 {
		s := a.free[n-1]
		a.free = a.free[:n-1]
		return s, true
	}
	if int(a.next+1)*a.slotSize > len(a.mem) {
		return 0, false
	}
	a.next++
	return a.next - 1, true
}

// put gives slot s back.
func (a *slotArena) put(s int32) { a.free = append(a.free, s) }

// bytes returns slot s's memory.
func (a *slotArena) bytes(s int32) []byte {
	off := int(s) * a.slotSize
	return a.mem[off : off+a.slotSize : off+a.slotSize]
}

// close gives the reservation back; the arena holds nothing afterwards.
// slotSize stays as it was: it is read without the shard's lock.
func (a *slotArena) close() {
	if a.release != nil {
		a.release()
	}
	a.mem, a.next, a.free, a.release = nil, 0, nil, nil
}
