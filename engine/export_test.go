package engine

// Hooks for the black-box tests of package engine_test: the few things
// they need that the public API does not give. Each is a small function or
// name, so that a change to DB's or Container's fields touches this file
// only.

import (
	"context"
	"fmt"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/internal/docfmt"
	"github.com/ebbdb/ebb/engine/journal"
	"github.com/ebbdb/ebb/index"
)

// Names of the files and directories in a database directory.
const (
	JournalDir   = dbfile.JournalDir
	SegmentDir   = dbfile.SegmentDir
	BrokenDir    = dbfile.BrokenDir
	ManifestName = dbfile.ManifestName
	ClockName    = dbfile.ClockName
)

// Manifest is the decoded MANIFEST.
type Manifest = dbfile.Manifest

// ReadManifest reads dir's MANIFEST; WriteManifest replaces it.
var (
	ReadManifest  = readManifest
	WriteManifest = writeManifest
)

// ETagOf is the _etag of the write with journal sequence number seq.
var ETagOf = docfmt.ETag

// ClockFileHigh is the high mark dir's CLOCK file holds (0 without one).
func ClockFileHigh(dir string) int64 { return dbfile.ReadClockFile(dir).High }

// Now is the engine's now: the instant reads are answered at.
func Now(db *DB) int64 { return db.clock.now() }

// HighestNow is the highest now the engine has handed out.
func HighestNow(db *DB) int64 { return db.clock.highest() }

// PersistClock writes the CLOCK file, as the sealer does every second.
func PersistClock(db *DB) error { return db.persistClock() }

// JournalRepair is what Open repaired of the journal's tail, or nil.
func JournalRepair(db *DB) *journal.RepairInfo { return db.jnl.Repair() }

// JournalNextSeq is the sequence number the next write will get.
func JournalNextSeq(db *DB) uint64 { return db.jnl.NextSeq() }

// HoldSeals keeps seals and compactions from changing files until release
// is called.
func HoldSeals(db *DB) (release func()) {
	db.sealMu.Lock()
	return db.sealMu.Unlock
}

// DrainJournal waits until the journal queue (Options.NoSync) has written
// every write applied so far to the journal.
func DrainJournal(db *DB) { db.drainJournal() }

// CompactStep runs one round of the background compactor on c now, as
// its loop does: with what the change feed needs as found up to
// feedKeepMaxAge ago (of real time, however far the DB's clock moved).
func CompactStep(ctx context.Context, c *Container) error { return c.compactStep(ctx, nil) }

// SealNow seals every container's memtable now, as the sealer does.
func SealNow(ctx context.Context, db *DB) error {
	db.sealMu.Lock()
	defer db.sealMu.Unlock()
	return db.sealNowLocked(ctx)
}

// IndexBuilt reports whether c's index has caught up with its writes.
func IndexBuilt(c *Container) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return !c.indexLaggingLocked()
}

// ItemLoc is where c's index places item id.
func ItemLoc(c *Container, id string) (index.Loc, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.idx.Get(id)
	return s.Loc, ok
}

// SegmentNums lists the numbers of c's segment files.
func SegmentNums(c *Container) []uint32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	nums := make([]uint32, 0, len(c.files))
	for n := range c.files {
		nums = append(nums, n)
	}
	return nums
}

// CachedBlocks is the number of blocks in db's block cache.
func CachedBlocks(db *DB) int { return db.cache.Len() }

// WaitWarmup waits until db's block cache warm-up has ended.
func WaitWarmup(db *DB) { <-db.warmed }

// CheckIndex runs the index's consistency check (index.Index.Check) on
// the container, and checks that every item, live or marked expired, is
// in a segment file the container has or in one of its memtables: a seal
// or a compaction that takes records away forgets their expired items
// before it lets go of db.sealMu, which the check holds.
func CheckIndex(c *Container) error {
	c.db.sealMu.Lock()
	defer c.db.sealMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.idx.Check(); err != nil {
		return err
	}
	var bad error
	c.idx.Each(func(s *index.Slot, expired bool) bool {
		f := s.Loc.File
		if _, ok := c.files[f]; ok || f == index.MemFile|c.mem.gen || (c.frozen != nil && f == index.MemFile|c.frozen.gen) {
			return true
		}
		bad = fmt.Errorf("item %q (marked expired: %v) is in file %#x, which the container no longer has", s.ID, expired, f)
		return false
	})
	return bad
}
