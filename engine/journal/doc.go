// Package journal is ebb's durable log: an append-only sequence of opaque
// payloads numbered by consecutive sequence numbers (seqs), kept on disk by
// github.com/tidwall/wal and made safe by what this package adds around it.
//
// The journal does not know what a payload means; the engine stores encoded
// records in them. It owns the framing of each entry, checksums, repair of a
// torn tail, directory fsyncs, failure handling after a write error, and the
// offline reading of journal files for `ebb dump` and `ebb verify`.
//
// # Files
//
// The journal lives in one folder (named "journal" by the engine). Its files
// are tidwall/wal segments, each named by the seq of its first entry in 20
// decimal digits ("00000000000000000001"), holding consecutive entries. The
// last segment is the tail: new entries are appended to it, and tidwall keeps
// it in memory whole (up to Options.SegmentSize bytes). Names ending in
// ".START" or ".END" are tidwall's truncations in progress; tidwall finishes
// or discards them when it opens the folder, and this package leaves them to
// it. Cycle ends the tail early and starts an empty one, so that
// TruncateFront can remove every entry before it: the engine does so at
// each seal, and the journal then holds only unsealed entries.
//
// # Format
//
// A segment file is a sequence of tidwall entries, each a uvarint length
// followed by that many bytes. Every entry holds exactly one frame:
//
//	segment file (tidwall/wal binary format)
//	+---------------+-------------------+---------------+-------------------+--
//	| uvarint(len)  | frame (len bytes) | uvarint(len)  | frame (len bytes) | ...
//	+---------------+-------------------+---------------+-------------------+--
//
//	frame
//	0                4                 12                         len
//	+----------------+-----------------+--------------------------+
//	| crc  uint32 LE | seq  uint64 LE  | payload (len-12 >= 1 B)  |
//	+----------------+-----------------+--------------------------+
//	                 |<--------------- crc covers --------------->|
//
//	crc  CRC-32C (Castagnoli) of the bytes [4, len): seq || payload.
//	seq  the entry's wal index. Entry i of the file named N carries N+i.
//
// # Guarantees
//
//   - Every payload read back (Replay, ReadFile) has passed its checksum and
//     carries the seq it was written with. A mismatch is corruption: the
//     error wraps ErrCorrupt (segment.ErrCorrupt, ebb's single corruption
//     sentinel) and names the file, offset or seq. Damaged data is never
//     returned and never skipped silently.
//   - Append writes all its payloads in one tidwall batch followed by one
//     fsync (unless Options.NoSync) and returns only after it, so a returned
//     seq is durable. A batch is not atomic: a crash during Append can leave
//     any prefix of its entries on disk, each entry whole or absent. When a
//     write creates a new segment file, the folder is fsynced too before
//     Append returns; the folder is also fsynced after Open creates or
//     repairs files and after TruncateFront.
//   - A zero-length or all-zero entry is the end of the log: tidwall would
//     parse zero bytes (a file whose size reached the disk before its data)
//     as phantom empty entries, but no valid frame is shorter than 13 bytes
//     or has the checksum of zeros. Zeros from the end of an entry to the
//     end of a file (at most maxAhead of them) are what is left of the
//     zeros the tail is written ahead with (see Preallocation below), by a
//     crash in the last file: Open cuts them off before tidwall reads the
//     file, keeps no copy and reports no repair, and ReadFile ends the
//     file's entries there without an error. A file of zeros only, or more
//     zeros than that, is a torn tail.
//   - A torn tail is repaired on Open. Open scans the last segment file; at
//     its first bad entry it looks for any later valid frame (a frame whose
//     seq lies in the next 2^20 seqs and whose checksum holds). If none is
//     found, the damage is a write cut short by a crash: Open keeps a copy of
//     the bytes it cuts (at most MaxBrokenCopy, so a repair needs little free
//     space) in the broken folder, cuts the file at the end of the last good
//     entry, fsyncs the file and the folder, logs a warning and reports it in
//     Repair. A copy that cannot be written (a full disk) is removed, logged,
//     and the cut made without it. A crash can only tear entries that were not yet
//     acknowledged, since every acknowledged one was fsynced before Append
//     returned (with NoSync: entries not yet synced by Sync).
//   - Any other damage (a bad entry followed by a valid one, damage in a
//     segment other than the last) is reported, never repaired: Open or
//     Replay returns a *CorruptError wrapping ErrCorrupt and leaves the
//     files as they are.
//   - After a failed write or fsync the journal is failed: tidwall does not
//     roll back a failed write, so what is on disk is unknown. Every later
//     call returns an error wrapping ErrFailed; closing and reopening the
//     journal repairs the tail and recovers every acknowledged entry.
//
// # Preallocation
//
// An append that grows a file makes its fsync commit the file system's
// metadata too (the blocks just allocated, the new size), and on ext4 that
// commit waits for the data of every other file written meanwhile, such as
// a segment file being sealed. Writing over blocks the file already holds
// needs none of it: on the machines ebb is measured on, a 40 KiB write and
// fsync took about 680 µs as an append and 320 µs in place. So, with
// Options.Preallocate, the journal keeps a window of zeros written ahead of
// the tail's entries (64 KiB at first in each file, doubling as the file
// fills, up to 1 MiB, never past Options.SegmentSize), which tidwall's
// appends overwrite; and SyncTo uses fdatasync (vfs.SyncData), which
// leaves the file's timestamps out. A file stops being the tail with its
// zeros cut off (the next file is started by Write or Cycle), Close cuts
// the tail's, and Open cuts what a crash left after the last entry of the
// last file. Size counts the zeros: they are on disk. A failed write of
// zeros is only logged; zeros after an entry of any file, up to the end of
// the file and at most one and a half windows of them, are read as the end
// of its entries (more are a torn write, as before).
//
// # Concurrency
//
// A Journal is safe for concurrent use. It is the one owner of its tidwall
// log: every call into tidwall runs under one mutex, because tidwall's reads
// mutate a cache under a read lock. Append holds that mutex across its write
// and fsync, so concurrent writers should be gathered by the caller into one
// Append (group commit): one fsync then acknowledges them all.
//
// # Caveats
//
//   - Telling a torn tail from corruption is a judgement: damage to the very
//     last entry of the log looks exactly like a torn write and is repaired
//     (the copy in the broken folder keeps the bytes). Conversely, if a crash
//     let the disk persist a later page of an unacknowledged batch but not an
//     earlier one, Open finds a valid frame after the damage and refuses to
//     repair, leaving the files untouched; ReadFile shows the damage and an
//     operator decides.
//   - tidwall holds the tail segment in memory, and the segment before it
//     in its cache (the journal sets the cache to one segment), so the
//     journal's memory is up to about twice Options.SegmentSize. tidwall
//     grows the tail's buffer with append, which allocates about five bytes
//     for each byte written (garbage, not retained memory).
package journal
