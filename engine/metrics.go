package engine

import (
	"context"
	"time"

	"github.com/ebbdb/ebb/index"
)

// Metrics describe a container's space on disk and what sealing and
// compaction did with it: the figures to watch for space amplification and
// reclaim lag. Counters accumulate from Open.
type Metrics struct {
	// Items, LiveBytes, DiskBytes and ExpiredPending are as in Stats.
	Items, LiveBytes, DiskBytes, ExpiredPending int64
	// LiveDiskBytes estimates what the live items take on disk: each
	// file's live record bytes at that file's compression ratio, plus the
	// live records still in the journal.
	LiveDiskBytes int64
	// SpaceAmplification is DiskBytes / LiveDiskBytes (0 when nothing is
	// live).
	SpaceAmplification float64
	// Segments is the number of segment files; JournalBytes the
	// container's records waiting in the journal to be sealed.
	Segments     int
	JournalBytes int64
	// SealedBytes: segment bytes written by seals. CompactedReadBytes and
	// CompactedWrittenBytes: record bytes read and segment bytes written by
	// rewrites. Write amplification of compaction is
	// (SealedBytes+CompactedWrittenBytes)/SealedBytes.
	SealedBytes, CompactedReadBytes, CompactedWrittenBytes int64
	// FilesDropped were deleted whole without being read (BytesDropped in
	// all); FilesRewritten were replaced by rewrites.
	FilesDropped, BytesDropped, FilesRewritten int64
	// FeedRetainedBytes is the size (uncompressed records) of what the
	// change feed's retention keeps beyond the live items: superseded
	// versions, tombstones and expired versions that AllVersionsAndDeletes
	// still reports. 0 with ChangeFeedRetention off.
	FeedRetainedBytes int64
	// ReclaimLag is how long the oldest expired record still on disk has
	// been expired: the delay between invisibility and physical deletion.
	ReclaimLag time.Duration
}

// Metrics returns the container's metrics now: the zero Metrics once the
// DB is closed or the container deleted.
func (c *Container) Metrics() Metrics {
	if c.db.usable() != nil {
		return Metrics{}
	}
	now := c.db.clock.now()
	c.advanceInSteps(now)
	c.mu.Lock()
	c.advanceLocked(now)
	c.mu.Unlock()
	c.settleExpiries()
	shared := c.db.sharedDiskBytes(c.num)
	var retained int64
	if keep, err := c.feedNeeded(context.Background()); err == nil && keep != nil {
		retained = keep.bytes
	}
	// The rest only reads (the expired set may be long): writers need not wait.
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.deleted {
		return Metrics{}
	}
	var m Metrics
	m.Items, m.LiveBytes = c.idx.Count()
	m.ExpiredPending = c.idx.ExpiredPending()
	m.Segments = len(c.files)
	segs, journal := c.diskBytesLocked()
	m.DiskBytes, m.JournalBytes = segs+shared, journal
	for n, f := range c.files {
		if st := f.r.Stats(); st.RawBytes > 0 {
			m.LiveDiskBytes += c.idx.Usage(n).Bytes * st.FileBytes / st.RawBytes
		}
	}
	for _, mt := range []*memtable{c.mem, c.frozen} {
		if mt != nil {
			m.LiveDiskBytes += c.idx.Usage(index.MemFile | mt.gen).Bytes
		}
	}
	if m.LiveDiskBytes > 0 {
		m.SpaceAmplification = float64(m.DiskBytes) / float64(m.LiveDiskBytes)
	}
	m.SealedBytes = c.stats.sealedBytes.Load()
	m.CompactedReadBytes = c.stats.compactRead.Load()
	m.CompactedWrittenBytes = c.stats.compactWritten.Load()
	m.FilesDropped = c.stats.filesDropped.Load()
	m.BytesDropped = c.stats.bytesDropped.Load()
	m.FilesRewritten = c.stats.filesRewritten.Load()
	m.FeedRetainedBytes = retained
	if oldest, ok := c.idx.OldestExpired(); ok && oldest < now {
		m.ReclaimLag = time.Duration(now-oldest) * time.Second
	}
	return m
}
