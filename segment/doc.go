// Package segment owns ebb's on-disk record and segment format: how a
// mutation is encoded (msgpack), how records are packed into compressed,
// checksummed blocks, and how a sealed, immutable segment file is written,
// read, iterated and verified. It knows nothing of containers' policies or
// clocks: a Record's TTL and TS are stored, never interpreted.
//
// # File format
//
// All fixed-width integers are little endian. CRCs are CRC-32C (Castagnoli).
//
//	+-------------------------------------------------------------+ offset 0
//	| file header (16 B)                                          |
//	|   magic "\x89EBBSEG\n" [8] | version u32 | crc32c(0..11) u32 |
//	+-------------------------------------------------------------+ 16
//	| data block 0                                                |
//	| data block 1                                                |
//	| ...            (Stats.Blocks blocks, back to back)          |
//	+-------------------------------------------------------------+ indexOff
//	| index block    (one entry per record, in file order)        |
//	+-------------------------------------------------------------+ indexOff+indexLen
//	| table block    (u32 length of each data block; never        |
//	|                 compressed)                                 |
//	+-------------------------------------------------------------+ size-128
//	| footer (128 B)                                              |
//	|   indexOff u64 | indexLen u32 | tableLen u32                |
//	|   Stats: container u32 | compression u8 | 0 [3]             |
//	|          records puts deletes minSeq maxSeq                 |
//	|          minTS maxTS rawBytes fileBytes blocks  (8 B each)  |
//	|   0 [8] | version u32 | crc32c(footer 0..115) u32 | magic[8]|
//	+-------------------------------------------------------------+ size
//
// Every block, data, index or table, has the same frame:
//
//	+-----------+-----------+-------+------+-------+------------+---------------+
//	| stored    | raw       | codec | kind | 0 0   | crc32c u32 | payload       |
//	| len u32   | len u32   | u8    | u8   | [2]   |            | (stored len B)|
//	+-----------+-----------+-------+------+-------+------------+---------------+
//	 0           4           8       9      10      12           16
//
// The CRC covers header bytes 0..11 and the payload, so a damaged length,
// codec or kind is caught before it is trusted. codec is a Compression
// (none, zstd, s2); a block that compression would not shrink is stored
// uncompressed. kind is 1 data, 2 index, 3 table. A data block's payload
// decompresses to raw len bytes (at most MaxBlockSize) of records back to
// back, each the msgpack array
//
//	[op, container, seq, ts, ttl, id, body]
//
// (see Record). A Handle is (block number, byte offset in the decompressed
// block). Records fill a block until it reaches WriterOptions.BlockSize; a
// record larger than that gets a block of its own.
//
// The index block lets Open-time recovery learn every record's op, seq, ts,
// ttl, id, handle and size without reading data blocks; its entry format is
// described in index.go. The table block gives each data block's length, so
// a point read is one pread of exactly one block.
//
// # Reading
//
// Open reads the footer first (the last 128 bytes), checks its magic,
// version and CRC and that every offset, length and count in it fits the
// file, then checks the file header and the table block. Nothing is
// allocated from a length that has not been checked against the file size,
// and nothing is decompressed past its recorded length, so a damaged file
// yields an error wrapping ErrCorrupt: never a panic, a huge allocation or
// wrong data. Data blocks and the index are checked when read; Verify reads
// and checks everything.
//
// A Reader is safe for concurrent use. Get reads through a shared Cache of
// decompressed blocks and returns a private copy of the record's body.
//
// # Writing
//
// Create opens a new file (O_EXCL); Add appends records in any order and
// returns their handles; Finish writes the index, table and footer, fsyncs
// and closes the file. The caller fsyncs the directory. Abort removes an
// unfinished file. Compression uses one process-wide zstd encoder and
// decoder (EncodeAll/DecodeAll) or s2.
package segment
