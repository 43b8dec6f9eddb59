package engine

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// A query reads its candidates one by one, and each one whose segment block
// is not in the block cache costs a decompression (and, the first time the
// block's memory is written, page faults) before its row can go out. While
// the query's goroutine works on a row (and its caller on the row before),
// a prefetcher on another goroutine reads the blocks of the next few
// candidates into the cache, so that on a machine with a core to spare the
// rows find their blocks there. It is started at the first row whose block
// was not cached: a query over cached blocks (the usual case) does not pay
// for a goroutine that would find nothing to do.

// prefetchMin is the fewest candidates a query reads for which a
// prefetcher is started: below it the goroutine costs more than it saves.
const prefetchMin = 64

// prefetchAhead is how many candidates the prefetcher may run ahead of the
// query: enough to keep ahead of it, few enough that a query stopping early
// (TOP, LIMIT) leaves little read for nothing, and that the blocks read are
// still cached when the query comes to them.
const prefetchAhead = 32

// prefetcher reads the blocks of slots into the block cache a little ahead
// of the query reading them.
type prefetcher struct {
	c     *Container
	slots []cand
	base  int           // the query's index of slots[0]
	next  atomic.Int64  // the index in slots of the slot the query reads next
	stop  atomic.Bool   // the query is done
	moved chan struct{} // the query moved on (or is done); one pending signal at most
	wg    sync.WaitGroup
}

// startPrefetch starts a prefetcher for the slots a query reads after
// slots[i], where it found a block not cached, or returns nil when there
// are too few of them, or no second core for it to run on.
func (c *Container) startPrefetch(slots []cand, i int) *prefetcher {
	if len(slots)-i-1 < prefetchMin || runtime.GOMAXPROCS(0) < 2 {
		return nil
	}
	p := &prefetcher{c: c, slots: slots[i+1:], base: i + 1, moved: make(chan struct{}, 1)}
	p.wg.Go(p.run)
	return p
}

// at tells the prefetcher that the query reads slot i (the query's index)
// next.
func (p *prefetcher) at(i int) {
	if p == nil {
		return
	}
	i -= p.base
	p.next.Store(int64(i))
	if i%(prefetchAhead/2) == 0 {
		p.signal()
	}
}

// done stops the prefetcher and waits for it, so that nothing of the query
// runs after it returns.
func (p *prefetcher) done() {
	if p == nil {
		return
	}
	p.stop.Store(true)
	p.signal()
	p.wg.Wait()
}

func (p *prefetcher) signal() {
	select {
	case p.moved <- struct{}{}:
	default:
	}
}

// prefetchWarm is how many blocks in a row the prefetcher finds cached
// before it concludes that the query's blocks are warm and stops.
const prefetchWarm = 64

func (p *prefetcher) run() {
	var last cand // the block read last: consecutive slots often share it
	warm := 0     // blocks found cached in a row
	for i := range p.slots {
		for int64(i) >= p.next.Load()+prefetchAhead {
			if p.stop.Load() {
				return
			}
			<-p.moved
		}
		if p.stop.Load() {
			return
		}
		s := &p.slots[i]
		if s.Loc.InMem() || (i > 0 && s.Loc.File == last.Loc.File && s.Loc.Block == last.Loc.Block) {
			continue
		}
		last = *s
		if p.c.db.cache.Has(uint64(s.Loc.File), s.Loc.Block) {
			if warm++; warm == prefetchWarm {
				return
			}
			continue
		}
		warm = 0
		p.c.prefetchBlock(s.Loc.File, s.Loc.Block)
	}
}

// prefetchBlock reads block blk of segment file num into the block cache,
// if the file is still the container's. A failure is left for the query's
// own read of the block to report.
func (c *Container) prefetchBlock(num, blk uint32) {
	c.mu.RLock()
	f := c.files[num]
	if f != nil {
		f.acquire()
	}
	c.mu.RUnlock()
	if f == nil {
		return
	}
	defer f.release()
	_ = f.r.Prefetch(blk)
}
