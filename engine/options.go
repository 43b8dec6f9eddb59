package engine

import (
	"io"
	"log/slog"
	"time"

	"github.com/ebbdb/ebb/engine/vfs"
	"github.com/ebbdb/ebb/segment"
)

// Options configure a DB. A nil *Options, and every zero field, means the
// default given in the field's comment; the defaults live in one place,
// withDefaults. A value outside what its field allows (a negative size, a
// BlockSize beyond segment.MaxBlockSize, a RewriteThreshold beyond 1, the
// bounds in options_check.go) makes Open fail with ErrInvalidOptions,
// naming every such field, rather than be replaced by the default.
type Options struct {
	// Clock is the wall clock: unix seconds of Clock() are the time of every
	// write (_ts) and the instant against which expiry is judged. The engine
	// never lets its own notion of now run backwards, whatever Clock does:
	// its now is the larger of Clock() and the highest time already seen or
	// persisted advanced by the time elapsed since, which is measured by the
	// monotonic clock when Clock's readings carry one (time.Now's do) and
	// otherwise by how far Clock moved forward. A Clock found behind is
	// logged at warning level; ResetClock brings a database's clock back to
	// it. Default: time.Now.
	Clock func() time.Time

	// NoSync acknowledges writes before their journal entry is written, let
	// alone fsynced: a goroutine of the journal's own compresses and writes
	// the entries behind the writers. Off by default: a write returns only
	// after its fsync (shared with concurrent writes by group commit), so an
	// acknowledged write survives a crash. Turning it on trades that
	// guarantee for speed: a crash of the machine or of the process, or a
	// failed journal write (ErrReadOnly), may then lose the last
	// acknowledged writes (of the process, at most 1 MiB of journal
	// entries), never a part of one and never a write without every write
	// before it. Close writes and fsyncs everything.
	NoSync bool

	// JournalSegmentSize is the size of each journal file. tidwall/wal keeps
	// the newest file in memory and copies it whole each time its buffer
	// grows, so a small file keeps those copies in the processor's caches;
	// a file filled costs an fsync of the file and of the folder. Default
	// 1 MiB; with NoSync, SealThreshold (at most 64 MiB, at least 1 MiB):
	// every seal starts a new file, so a file seldom fills, and the fsyncs
	// of filled files, the only ones NoSync would pay between seals, are
	// left out.
	JournalSegmentSize int

	// SealThreshold is how many bytes of records may wait in memtables (and in
	// the journal, uncompressed) before they are sealed into compressed
	// segment files. Smaller seals bring space back sooner for short TTLs;
	// larger ones write fewer files. Default 16 MiB.
	SealThreshold int64

	// BlockSize is the uncompressed size of a segment block, the unit that is
	// compressed, checksummed and cached: a point read that misses the cache
	// decompresses one block. Default 8 KiB (4.5x the uncached reads/s of
	// 32 KiB blocks, for a slightly larger file).
	BlockSize int

	// Compression is the codec of segment blocks. Default: s2 for the files
	// sealed from the memtable, which serve most point reads and decode
	// several times faster, and zstd for the files compaction rewrites,
	// whose data is older and whose size matters more.
	Compression Compression

	// BlockCacheSize bounds the cache of decompressed segment blocks, in
	// bytes: a point read served from it decompresses nothing. The cache
	// takes blocks as files are written and, after Open, as the warm-up
	// reads them (see NoWarmup), in both cases only while it has room; and
	// as blocks are read, evicting about the least recently used. Its
	// memory is its own, outside the Go heap, given back at Close. Default:
	// an eighth of the machine's memory, at least 64 MiB and at most 8 GiB
	// (64 MiB when the memory cannot be read), so that a store of a few
	// hundred MB is read from memory.
	BlockCacheSize int64

	// NoWarmup turns off the block cache's warm-up. By default Open reads
	// the segment files into the cache in the background, newest first,
	// while the cache has room for them without evicting anything, so
	// that the reads after a restart are served from memory within a
	// fraction of a second instead of each decompressing a block; it costs
	// a core for about as long as decompressing the files takes, and ends
	// at Close. Files written while the DB runs go into the cache as they
	// are written, while it has room, either way.
	NoWarmup bool

	// CompactionInterval is how often the background compactor looks for
	// segment files to drop or rewrite. Default 1 s; negative turns the
	// background compactor off (Container.Compact still works).
	CompactionInterval time.Duration

	// CompactionRate bounds the bytes per second that background rewrites
	// (and Container.Compact's) read, so that compaction never crowds out
	// foreground requests. The bound is an average: after an idle spell a
	// rewrite may read up to a second's worth at once. Dropping a dead
	// file whole costs no I/O and is not counted. Default 64 MiB/s.
	CompactionRate int64

	// RewriteThreshold is the dead share of a segment file (by bytes) at
	// which the background compactor rewrites it. Default 0.5.
	RewriteThreshold float64

	// MaxBatchOperations and MaxBatchBytes bound a transactional batch:
	// how many operations it may hold, and how many bytes of documents
	// (counted as MaxDocumentSize counts them). A batch built with
	// Container.NewBatch stops taking operations at these limits, and
	// ExecuteBatch refuses a batch beyond them with ErrBatchTooLarge: a
	// batch commits as one journal entry held in memory whole. Defaults:
	// DefaultMaxBatchOperations (100) and DefaultMaxBatchBytes (2 MiB), the
	// limits of a Cosmos DB transactional batch.
	MaxBatchOperations int
	MaxBatchBytes      int

	// Logger receives repairs, background decisions and warnings (a wall
	// clock found behind the database's clock). Default: discard.
	Logger *slog.Logger

	// FS is the file layer under the database: every file operation on its
	// own files goes through it, and the journal reports tidwall/wal's
	// writes and fsyncs to it when it implements vfs.Hook. It exists mainly
	// for tests, which inject I/O errors (vfs.FaultFS) or simulate power
	// loss (vfs.CrashFS), like pebble's Options.FS. Default: vfs.OS.
	FS vfs.FS
}

// Compression chooses the codec of segment blocks.
type Compression uint8

const (
	// CompressionDefault is s2 for sealed files, zstd for compacted ones.
	CompressionDefault Compression = iota
	// CompressionZstd: best ratio, fast decoding (github.com/klauspost/compress/zstd).
	CompressionZstd
	// CompressionS2: fastest, a larger file (github.com/klauspost/compress/s2).
	CompressionS2
	// CompressionNone stores blocks as they are.
	CompressionNone
)

// segment returns the codec of a new segment file: cold is true for a file
// that compaction writes, false for one sealed from the memtable.
func (c Compression) segment(cold bool) segment.Compression {
	switch c {
	case CompressionS2:
		return segment.CompressionS2
	case CompressionNone:
		return segment.CompressionNone
	case CompressionDefault:
		if !cold {
			return segment.CompressionS2
		}
	}
	return segment.CompressionZstd
}

// withDefaults returns a copy of o with every unset field at its default.
// Open checks o first (check), so what is not unset here is valid.
func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.Clock == nil {
		out.Clock = time.Now
	}
	if out.SealThreshold <= 0 {
		out.SealThreshold = 16 << 20
	}
	if out.JournalSegmentSize <= 0 {
		out.JournalSegmentSize = defaultJournalSegmentSize(out.NoSync, out.SealThreshold)
	}
	if out.BlockSize <= 0 {
		out.BlockSize = 8 << 10
	}
	if out.BlockCacheSize <= 0 {
		out.BlockCacheSize = defaultBlockCacheSize(physicalMemory())
	}
	if out.CompactionInterval == 0 {
		out.CompactionInterval = time.Second
	}
	if out.CompactionRate <= 0 {
		out.CompactionRate = 64 << 20
	}
	if out.RewriteThreshold <= 0 || out.RewriteThreshold > 1 {
		out.RewriteThreshold = 0.5
	}
	if out.MaxBatchOperations <= 0 {
		out.MaxBatchOperations = DefaultMaxBatchOperations
	}
	if out.MaxBatchBytes <= 0 {
		out.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	out.FS = vfs.Default(out.FS)
	return out
}

// defaultJournalSegmentSize is the default JournalSegmentSize: 1 MiB, or
// with noSync the journal entries of a seal's worth of records, so that
// each seal's new file (DB.cycleJournal) comes before the file fills.
// tidwall/wal fsyncs every file it fills, whatever its NoSync says; with
// fsync on, each commit's fsync has made the file durable already, but
// with NoSync that fsync writes the whole file, about 5 ms on ext4 while a
// seal writes: bench fill --nosync, batches of 100, about 10% more writes/s
// than with 1 MiB files.
func defaultJournalSegmentSize(noSync bool, sealThreshold int64) int {
	const small, large = 1 << 20, 64 << 20
	if !noSync {
		return small
	}
	return int(min(max(sealThreshold, small), large))
}

// defaultBlockCacheSize is the default BlockCacheSize on a machine with mem
// bytes of memory (0: unknown).
func defaultBlockCacheSize(mem int64) int64 {
	return min(max(mem/8, 64<<20), 8<<30)
}
