package engine

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"

	"github.com/ebbdb/ebb/compactor"
	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/index"
	"github.com/ebbdb/ebb/segment"
)

// Open-time loading of a container's index from its segment files' index
// blocks. Most of the work on one file depends on that file alone:
// reading and decoding its index block, building its id filter, finding
// when all its records expire. Loader goroutines do it a few files ahead,
// while the goroutine running Open adds the decoded entries to the index,
// which is not safe for concurrent use, in file order.

// warmBatch is how many entries indexEntries warms the index for at a time
// (index.Warm), one batch ahead of those it adds.
const warmBatch = 16

// decodedFile is one segment file's index block, decoded by a loader.
type decodedFile struct {
	entries   []segment.IndexEntry
	hashes    []index.IDHash // of the entries' ids in the index
	ids       *compactor.IDFilter
	expiresBy int64
	err       error
}

// openFiles opens the container's segment files nums, those the MANIFEST
// names, into c.files, a few at a time. It returns the error of the first
// of nums that does not open; the files that did are in c.files, for Open
// to close.
func (c *Container) openFiles(nums []uint32) error {
	type opened struct {
		f   *segFile
		err error
	}
	workers := runtime.GOMAXPROCS(0)
	var first error
	open := func(i int) opened {
		f, err := c.db.openSegment(nums[i])
		return opened{f, err}
	}
	inOrder(len(nums), workers, 2*workers, open, func(i int, o opened) error {
		num := nums[i]
		switch err := o.err; {
		case err == nil:
			c.files[num] = o.f
		case first == nil:
			if errors.Is(err, os.ErrNotExist) {
				err = fmt.Errorf("%w: the MANIFEST names it but it is missing", ErrCorrupt)
			}
			first = fmt.Errorf("ebb: open container %q: segment %d: %w", c.id, num, err)
		}
		return nil
	})
	return first
}

// loadFiles rebuilds the index from the container's segment index blocks.
// Files overlap in any order after compaction, so the version with the
// highest sequence wins, and a tombstone hides older puts in other files.
func (c *Container) loadFiles() error {
	nums := make([]uint32, 0, len(c.files))
	var puts, records int64
	for num, f := range c.files {
		nums = append(nums, num)
		puts += f.r.Stats().Puts
		records += f.r.Stats().Records
	}
	slices.Sort(nums)
	c.idx.Reserve(int(puts))
	defer c.idx.Reserve(0) // later writes allocate their slots page by page
	ids := segment.NewIDArena(records)

	tomb := make(dbfile.Tombstones)
	workers := max(1, runtime.GOMAXPROCS(0)-1)
	free := make(chan decodedFile, workers+2) // spent results, whose slices are reused
	decode := func(i int) decodedFile {
		var d decodedFile
		select {
		case d = <-free:
		default:
		}
		c.decodeFile(c.files[nums[i]], ids, &d)
		return d
	}
	return inOrder(len(nums), workers, workers+1, decode, func(i int, d decodedFile) error {
		num := nums[i]
		if d.err != nil {
			return fmt.Errorf("ebb: open container %q: segment %d: %w", c.id, num, d.err)
		}
		f := c.files[num]
		f.ids, f.expiresBy = d.ids, d.expiresBy
		c.indexEntries(num, d.entries, d.hashes, tomb)
		select {
		case free <- d:
		default:
		}
		return nil
	})
}

// decodeFile decodes f's index block into d, reusing the room of d's
// slices, with the ids in ids, and derives from it what depends on f
// alone. It does not touch f, which the goroutine building the index owns:
// it runs on a loader goroutine.
func (c *Container) decodeFile(f *segFile, ids *segment.IDArena, d *decodedFile) {
	entries, err := f.r.AppendIndexIn(d.entries[:0], ids)
	*d = decodedFile{entries: entries, hashes: d.hashes[:0], err: err}
	if err != nil {
		return
	}
	d.ids = compactor.NewIDFilter(len(entries))
	for i := range entries {
		e := &entries[i]
		if err := c.checkItemKey(e.ID); err != nil {
			d.err = err
			return
		}
		d.hashes = append(d.hashes, c.idx.Hash(e.ID))
		d.ids.Add(e.ID)
		expire := index.Never
		if e.Op == segment.OpPut {
			expire = c.history.ExpiresAt(e.TS, e.TTL) // the history does not change during Open
		}
		d.expiresBy = max(d.expiresBy, expire)
	}
}

// indexEntries adds the entries of segment file num, whose ids have the
// hashes hs, to the index by the rule of tombstones.apply.
func (c *Container) indexEntries(num uint32, entries []segment.IndexEntry, hs []index.IDHash, tomb dbfile.Tombstones) {
	c.idx.Warm(hs[:min(warmBatch, len(hs))])
	for i := range entries {
		if i%warmBatch == 0 && i+warmBatch < len(hs) {
			c.idx.Warm(hs[i+warmBatch : min(i+2*warmBatch, len(hs))])
		}
		e := &entries[i]
		at, cur, ok := c.idx.SeekHashed(e.ID, hs[i])
		switch tomb.Apply(e, cur, ok) {
		case dbfile.RebuildSkip:
			continue
		case dbfile.RebuildDelete:
			c.idx.DeleteAt(at)
			continue
		}
		c.idx.PutAt(at, index.Slot{
			ID: e.ID, Seq: e.Seq, TS: e.TS, TTL: e.TTL, Size: e.Size,
			Loc: index.Loc{File: num, Block: e.Handle.Block, Off: e.Handle.Off},
		})
		if c.db.raisesFloor(e.Seq) {
			c.db.clock.observe(e.TS)
		}
	}
}

// inOrder calls work(i) for every i in [0, n) on up to workers goroutines,
// and use(i, work(i)) on the calling goroutine in order of i. The workers
// run at most ahead results beyond the one use waits for. The first error
// use returns stops the rest: inOrder returns it once every goroutine it
// started has returned, so that nothing work touches is still in use.
func inOrder[T any](n, workers, ahead int, work func(i int) T, use func(i int, v T) error) error {
	if n == 0 {
		return nil
	}
	results := make([]chan T, n)
	for i := range results {
		results[i] = make(chan T, 1)
	}
	// A worker takes a token before it starts an i, and use gives one back
	// after each result, so no more than ahead results wait at a time.
	tokens := make(chan struct{}, ahead)
	for range ahead {
		tokens <- struct{}{}
	}
	stop := make(chan struct{})
	var next int // the next i to start, guarded by mu
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-tokens:
				case <-stop:
					return
				}
				select {
				case <-stop: // both were ready: stop wins
					return
				default:
				}
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				results[i] <- work(i)
			}
		}()
	}
	var err error
	for i := range n {
		if err = use(i, <-results[i]); err != nil {
			break
		}
		tokens <- struct{}{}
	}
	close(stop)
	wg.Wait()
	return err
}
