package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/journal"
	"github.com/ebbdb/ebb/engine/vfs"
)

// recover builds the DB's state from dir: the manifest, then each segment
// file's index block (never its data blocks), then the journal from where
// the manifest says sealed records end.
func (db *DB) recover() error {
	m, err := loadManifest(db.fs, db.dir, db.log)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := db.checkEmpty(); err != nil {
			return err
		}
		m = &dbfile.Manifest{NextFile: 1, NextContainer: 1, JournalFrom: 1, Version: dbfile.ManifestVersionPlain}
		db.clock = newClock(db.opts.Clock, 0, db.log)
		if err := writeManifest(db.fs, db.dir, m); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("ebb: open %s: %w", db.dir, err)
	}
	db.man.nextFile, db.man.nextContainer, db.man.journalFrom = m.NextFile, m.NextContainer, m.JournalFrom
	db.man.log.version = m.Version
	cf, damaged, err := dbfile.LoadClockFile(db.fs, db.dir)
	if err != nil {
		return err
	}
	if damaged >= 0 {
		// Open goes on: the CLOCK file only raises the floor between
		// manifest writes, and the MANIFEST and the records' _ts still bound
		// it from below, so an expired item can come back only for the
		// seconds since the last manifest write. The next clock write
		// replaces the file.
		db.log.Warn("ebb: the CLOCK file does not decode; ignored, the MANIFEST's clock is the floor until it is rewritten",
			"file", filepath.Join(db.dir, dbfile.ClockName), "size", damaged)
	}
	floor := max(m.Clock, cf.High)
	db.clock = newClock(db.opts.Clock, floor, db.log)
	db.clockPersisted.Store(floor)
	db.clockInFile.Store(cf.High)
	db.clockResetSeq.Store(cf.ResetSeq)

	referenced := make(map[uint32]bool)
	for _, cm := range m.Containers {
		h := dbfile.ToHistory(cm.History)
		if len(h) == 0 {
			return fmt.Errorf("ebb: manifest: container %q has no policy history: %w", cm.ID, ErrCorrupt)
		}
		props := ContainerProperties{ID: cm.ID, DefaultTTL: h.Current(), Indexing: IndexingMode(cm.Indexing), IncludedPaths: cm.Included, ExcludedPaths: cm.Excluded,
			ChangeFeedRetention: time.Duration(cm.FeedRetention), PartitionKeyPath: cm.PartitionKey}
		if _, err := parseKeyPath(cm.ID, cm.PartitionKey); err != nil {
			return fmt.Errorf("ebb: manifest: %v: %w", err, ErrCorrupt)
		}
		if cm.FeedRetention < 0 {
			return fmt.Errorf("ebb: manifest: container %q: change feed retention %d is negative: %w", cm.ID, cm.FeedRetention, ErrCorrupt)
		}
		c := newContainer(db, cm.Num, props, h)
		c.feed.marks, c.feed.since = cm.FeedMarks, cm.FeedSince
		db.mu.containers[cm.ID] = c
		db.mu.byNum[cm.Num] = c
		for _, num := range cm.Files {
			referenced[num] = true
		}
		if err := c.openFiles(cm.Files); err != nil {
			return err
		}
		for num, hidden := range cm.Hides {
			if f := c.files[num]; f != nil {
				for _, h := range hidden {
					f.hides[h] = struct{}{}
				}
			}
		}
		if err := c.loadFiles(); err != nil {
			return err
		}
	}
	if err := db.removeOrphans(referenced); err != nil {
		return err
	}

	jdir := filepath.Join(db.dir, dbfile.JournalDir)
	db.jnl, err = journal.Open(jdir, filepath.Join(db.dir, dbfile.BrokenDir), journal.Options{
		SegmentSize: db.opts.JournalSegmentSize,
		NoSync:      db.opts.NoSync,
		Preallocate: true,
		Logger:      db.log,
		FS:          db.fs,
	})
	if err != nil {
		return fmt.Errorf("ebb: open journal: %w", err)
	}
	if r := db.jnl.Repair(); r != nil {
		db.log.Warn("ebb: repaired torn journal tail", "file", r.File, "offset", r.Offset, "cut", r.CutBytes, "copy", r.Copy)
	}
	if err := db.replay(); err != nil {
		return err
	}
	now := db.clock.now()
	for _, c := range db.mu.byNum {
		c.mu.Lock()
		c.nextDue.Store(c.idx.NextDue())
		c.advanceLocked(now)
		c.mu.Unlock()
	}
	return nil
}

// checkEmpty refuses to create a new database over files that look like
// one whose manifest is missing: that would lose its data.
func (db *DB) checkEmpty() error {
	for _, sub := range []string{dbfile.JournalDir, dbfile.SegmentDir} {
		ents, err := db.fs.ReadDir(filepath.Join(db.dir, sub))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("ebb: open %s: %w", db.dir, err)
		}
		if len(ents) > 0 {
			return fmt.Errorf("ebb: open %s: %s/ holds files but the MANIFEST is missing: %w", db.dir, sub, ErrCorrupt)
		}
	}
	return nil
}

// removeOrphans deletes segment files the manifest does not name: outputs
// of a seal or compaction that crashed before its manifest write, or inputs
// of one that crashed after it. Only names ebb writes (NNNNNNNN.seg) are
// candidates; any other file in the folder is not ebb's, and is left alone
// with a warning.
func (db *DB) removeOrphans(referenced map[uint32]bool) error {
	dir := filepath.Join(db.dir, dbfile.SegmentDir)
	ents, err := db.fs.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("ebb: open %s: %w", dir, err)
	}
	removed := 0
	for _, e := range ents {
		name := e.Name()
		num, ok := dbfile.SegmentFileNum(name)
		if !ok || e.IsDir() {
			db.log.Warn("ebb: left alone a file ebb did not write in its segment folder", "file", filepath.Join(dir, name))
			continue
		}
		if referenced[num] {
			continue
		}
		if err := db.fs.Remove(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("ebb: remove orphan %s: %w", name, err)
		}
		db.log.Info("ebb: removed orphan segment file", "file", name)
		removed++
	}
	if removed > 0 {
		return vfs.SyncDir(db.fs, dir)
	}
	return nil
}
