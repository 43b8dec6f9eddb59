package engine

import (
	"cmp"
	"slices"
)

// warmCache reads the segment files into the block cache in the background
// after Open, newest file first, while the cache has room for their blocks
// without evicting any (segment.Reader.Warm): after a restart the store's
// reads are served from memory within a fraction of a second, instead of
// each decompressing a block until every block has been read once. It is
// one goroutine, stops at Close, and ends when the files are read or the
// cache is full. Files sealed or rewritten while the DB runs go into the
// cache as they are written (segment.WriterOptions.Cache), so this is only
// needed at Open. Reads that miss meanwhile hand their blocks to the cache
// as always, and the warm-up skips the blocks they brought in.
func (db *DB) warmCache() {
	defer db.workers.Done()
	defer close(db.warmed)
	if db.opts.NoWarmup {
		return
	}
	stop := func() bool {
		select {
		case <-db.quit:
			return true
		default:
			return false
		}
	}
	for _, c := range db.containerList() {
		for _, num := range c.fileNumsNewestFirst() {
			if stop() {
				return
			}
			f := c.acquireFile(num)
			if f == nil {
				continue // dropped meanwhile
			}
			full, err := f.r.Warm(stop)
			f.release()
			if err != nil {
				// A damaged block: reads of it report it; the rest may warm.
				db.log.Warn("ebb: block cache warm-up skipped the rest of a segment file", "container", c.ID(), "file", num, "err", err)
			}
			if full {
				return
			}
		}
	}
}

// fileNumsNewestFirst returns the numbers of the container's segment files,
// highest (newest) first.
func (c *Container) fileNumsNewestFirst() []uint32 {
	c.mu.RLock()
	nums := make([]uint32, 0, len(c.files))
	for n := range c.files {
		nums = append(nums, n)
	}
	c.mu.RUnlock()
	slices.SortFunc(nums, func(a, b uint32) int { return cmp.Compare(b, a) })
	return nums
}

// acquireFile returns segment file num with a reference taken (release it),
// or nil when the container no longer has it.
func (c *Container) acquireFile(num uint32) *segFile {
	c.mu.RLock()
	defer c.mu.RUnlock()
	f := c.files[num]
	if f != nil && !c.deleted {
		f.acquire()
		return f
	}
	return nil
}
