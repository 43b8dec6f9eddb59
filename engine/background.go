package engine

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/ebbdb/ebb/compactor"
	"github.com/ebbdb/ebb/index"
	"golang.org/x/time/rate"
)

// The background compactor: every CompactionInterval it marks what expired,
// asks compactor.Pick what to do with each container's segment files, drops
// the all-dead ones without reading them and rewrites the mostly-dead ones,
// one bounded group at a time, reading at most CompactionRate bytes a
// second. It holds the container's lock only for short steps (see
// Container.rewriteLocked), so readers and writers do not wait on it.

func (db *DB) compactLoop() {
	defer db.workers.Done()
	if db.opts.CompactionInterval < 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-db.quit
		cancel()
	}()
	b := newBudget(db.opts.CompactionRate)
	tick := time.NewTicker(db.opts.CompactionInterval)
	defer tick.Stop()
	for {
		select {
		case <-db.quit:
			return
		case <-tick.C:
		}
		if db.failure.Load() != nil {
			continue // read-only: the files stay as they are until reopened
		}
		for _, c := range db.containerList() {
			if err := c.compactStep(ctx, b.wait); err != nil && ctx.Err() == nil &&
				!errors.Is(err, ErrNotFound) && !errors.Is(err, ErrClosed) {
				db.log.Error("ebb: background compaction failed; will retry", "container", c.ID(), "err", err)
			}
		}
	}
}

// compactStep does one round of background compaction on the container.
func (c *Container) compactStep(ctx context.Context, throttle func(context.Context, int) error) error {
	db := c.db
	now := db.clock.now()
	c.advanceInSteps(now)
	c.mu.Lock()
	if c.deleted {
		c.mu.Unlock()
		return nil
	}
	c.advanceLocked(now)
	c.mu.Unlock()
	keep, err := c.feedNeededCached(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.deleted {
		c.mu.Unlock()
		return nil
	}
	files := c.fileStatsLocked(keep)
	// Records that died in the memtable still hold journal space; a seal
	// turns them into files that die whole. (Not with the change feed's
	// retention: a seal keeps them all.)
	memLive := c.idx.Usage(index.MemFile | c.mem.gen).Bytes
	memDead := keep == nil && c.mem.bytes > 0 && 2*memLive < c.mem.bytes && (memLive == 0 || c.mem.bytes >= minSealFileBytes)
	c.mu.Unlock()
	if memDead {
		db.kickSeal()
	}
	plan := compactor.Pick(files, compactor.PickOptions{RewriteThreshold: db.opts.RewriteThreshold, Now: now})
	if len(plan.Drop) == 0 && len(plan.Rewrite) == 0 {
		return nil
	}
	db.log.Debug("ebb: compaction plan", "container", c.ID(), "files", len(files), "drop", plan.Drop, "rewrite", plan.Rewrite)
	db.sealMu.Lock()
	err = c.dropFilesLocked(plan.Drop, keep)
	db.sealMu.Unlock()
	if err != nil {
		return err
	}
	for _, group := range plan.Rewrite {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Seals may run between groups.
		db.sealMu.Lock()
		err := c.rewriteLocked(ctx, group, keep, throttle)
		db.sealMu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// fileStatsLocked describes the container's segment files for the picker,
// counting the records the change feed needs (keep, nil without retention)
// as live; c.mu is held.
func (c *Container) fileStatsLocked(keep *feedKeep) []compactor.FileStats {
	out := make([]compactor.FileStats, 0, len(c.files))
	for n, f := range c.files {
		st := f.r.Stats()
		u := c.idx.Usage(n)
		switch {
		case keep == nil:
		case !keep.known[n]:
			u.Records, u.Bytes = st.Records, st.RawBytes // sealed since: left alone this time
		default:
			u.Records += keep.perFile[n].records
			u.Bytes += keep.perFile[n].bytes
		}
		out = append(out, compactor.FileStats{
			Num: n, FileBytes: st.FileBytes, RawBytes: st.RawBytes,
			LiveBytes: u.Bytes, LiveRecords: u.Records, Puts: st.Puts,
			HidesLive: f.hidesAny(c.files), ExpiresBy: f.expiresBy,
		})
	}
	return out
}

// budget paces compaction reads to a rate in bytes per second. It asks the
// limiter once per 64 KiB, not once per record, and yields the processor
// as often.
type budget struct {
	lim     *rate.Limiter
	pending int
}

const budgetChunk = 64 << 10

// newBudget returns a budget of bytesPerSec whose burst is a second's
// worth, so that it starts full: a burst of 256 KiB instead, pacing a
// storm's first rewrites from their first byte, changed the foreground
// p99 within the noise and gave the disk back later (bench/RESULTS.md,
// "The disk in a storm").
func newBudget(bytesPerSec int64) *budget {
	return &budget{lim: rate.NewLimiter(rate.Limit(bytesPerSec), int(max(bytesPerSec, 4*budgetChunk)))}
}

func (b *budget) wait(ctx context.Context, n int) error {
	b.pending += n
	for b.pending >= budgetChunk {
		if err := b.lim.WaitN(ctx, budgetChunk); err != nil {
			return err
		}
		b.pending -= budgetChunk
		// Reading, decoding and re-encoding a chunk is a fraction of a
		// millisecond of CPU that never blocks: yield, so that readers
		// and writers woken meanwhile need not wait for the scheduler to
		// preempt a compaction (see advanceChunk).
		runtime.Gosched()
	}
	return nil
}
