package engine

import (
	"fmt"
	"runtime"

	"github.com/ebbdb/ebb/internal/hugemem"
	"github.com/ebbdb/ebb/segment"
)

// journalEntry is an entry of the journal read for replay, and, once a
// loader decoded it, its plain form or the error decoding it.
type journalEntry struct {
	seq     uint64
	payload []byte
	room    []byte // where it decodes to, if it is compressed
	plain   []byte
	err     error
}

// replay applies the journal's unsealed entries to memtables and indexes.
//
// The entries are read first and decoded after, so that the compressed ones
// decode into one buffer of the size they need together, which comes in
// huge pages (hugemem): it is as large as the memtables, and new to the
// process. Loader goroutines decompress them a few groups of entries ahead
// of the goroutine in Open, which applies their records in journal order.
func (db *DB) replay() error {
	first, next := db.jnl.FirstSeq(), db.jnl.NextSeq()
	from := db.man.journalFrom
	switch {
	case from > next:
		return fmt.Errorf("ebb: journal ends before entry %d but the manifest says entries up to %d were sealed: %w", next, from-1, ErrCorrupt)
	case from == next:
		return nil // everything is sealed
	case first == 0 || from < first:
		return fmt.Errorf("ebb: journal starts at entry %d but replay must start at %d: %w", first, from, ErrCorrupt)
	}
	var entries []journalEntry
	var sizes []int // plain size of each compressed entry, -1 for a plain one
	total := 0
	err := db.jnl.Replay(from, func(seq uint64, payload []byte) error {
		n, compressed, err := segment.PayloadSize(payload)
		if err != nil {
			return fmt.Errorf("ebb: journal entry %d: %w", seq, err)
		}
		if !compressed {
			n = -1
		}
		total += max(n, 0)
		entries = append(entries, journalEntry{seq: seq, payload: payload})
		sizes = append(sizes, n)
		return nil
	})
	if err != nil {
		return err
	}
	buf := make([]byte, total)
	hugemem.Advise(buf)
	for i, n := range sizes {
		if n >= 0 {
			entries[i].room, buf = buf[:0:n], buf[n:]
		}
	}

	// Loaders take the entries a group at a time, so that a journal of
	// many small commits costs few hand-overs.
	var groups []int // groups[g] is the first entry of group g
	for i, size := 0, 0; i < len(entries); i++ {
		if i == 0 || size >= replayGroupBytes || i-groups[len(groups)-1] >= replayGroupEntries {
			groups, size = append(groups, i), 0
		}
		size += len(entries[i].payload) + max(sizes[i], 0)
	}
	groups = append(groups, len(entries))
	workers := max(1, runtime.GOMAXPROCS(0)-1)
	decode := func(g int) int {
		for i := groups[g]; i < groups[g+1]; i++ {
			e := &entries[i]
			// Into e.room: no two loaders write the same memory.
			e.plain, e.err = segment.DecodePayload(e.payload, e.room)
		}
		return g
	}
	return inOrder(len(groups)-1, workers, workers+1, decode, func(_ int, g int) error {
		for i := groups[g]; i < groups[g+1]; i++ {
			e := &entries[i]
			if e.err != nil {
				return fmt.Errorf("ebb: journal entry %d: %w", e.seq, e.err)
			}
			if err := db.replayEntry(e.seq, e.plain); err != nil {
				return err
			}
		}
		return nil
	})
}

// A replay group ends after this many bytes (stored and plain) or entries.
const (
	replayGroupBytes   = 1 << 20
	replayGroupEntries = 256
)

// replayEntry applies the records of journal entry seq, whose plain form is
// payload, to memtables and indexes. The payload is ours to keep, so the
// records' bodies alias it.
func (db *DB) replayEntry(seq uint64, payload []byte) error {
	var rec segment.Record
	for off := 0; off < len(payload); {
		n, err := segment.DecodeRecord(payload[off:], &rec)
		if err != nil {
			return fmt.Errorf("ebb: journal entry %d offset %d: %w", seq, off, err)
		}
		if rec.Seq != seq {
			return fmt.Errorf("ebb: journal entry %d holds a record of seq %d: %w", seq, rec.Seq, ErrCorrupt)
		}
		off += n
		c := db.mu.byNum[rec.Container]
		if c == nil {
			continue // its container was deleted
		}
		if err := c.checkItemKey(rec.ID); err != nil {
			return fmt.Errorf("ebb: journal entry %d offset %d: %w", seq, off-n, err)
		}
		c.applyRecordLocked(rec, n)
		if db.raisesFloor(rec.Seq) {
			db.clock.observe(rec.TS)
		}
	}
	return nil
}
