package tool

import (
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ebbdb/ebb/engine/internal/docfmt"
	"github.com/ebbdb/ebb/engine/internal/pkey"
	"github.com/ebbdb/ebb/engine/journal"
	"github.com/ebbdb/ebb/engine/vfs"
	"github.com/ebbdb/ebb/segment"
)

// FileKind is the kind of file DumpFile decodes.
type FileKind string

// The kinds of file DumpFile decodes.
const (
	FileSegment FileKind = "segment"
	FileJournal FileKind = "journal"
)

// DumpRecord is one record of a segment or journal file, decoded offline.
type DumpRecord struct {
	Op        string `json:"op"`
	Container uint32 `json:"container"`
	Seq       uint64 `json:"seq"`
	TS        int64  `json:"_ts"`
	// TTL is the item's own ttl: 0 when absent, -1, or seconds.
	TTL int32  `json:"ttl"`
	ID  string `json:"id"`
	// PartitionKey is the item's partition key value in header form
	// (`["a"]`, `[{}]` for None), "" for an item of a container without a
	// partition key.
	PartitionKey string `json:"partitionKey,omitempty"`
	Size         int    `json:"size"`
	// Offset is where the record is in the file: the offset of its block in
	// a segment file, of its entry in a journal file.
	Offset int64 `json:"offset"`
	// Handle is a segment record's block/offset in the decompressed block;
	// Entry a journal record's position in its entry.
	Handle string `json:"handle"`
	Entry  int    `json:"entry"`
	// Body is the stored body: the document without its system properties,
	// nil for a delete.
	Body []byte `json:"-"`
}

// Document returns the record's document as a read would return it, with
// its system properties _ts and _etag, or nil for a delete.
func (r *DumpRecord) Document() []byte {
	if r.Body == nil {
		return nil
	}
	return docfmt.RenderSeq(nil, r.Body, r.TS, r.Seq)
}

// dumpRecord describes rec; an item key that does not decode (package
// engine/internal/pkey) is damage, an error wrapping segment.ErrCorrupt.
func dumpRecord(rec *segment.Record, size int, offset int64) (DumpRecord, error) {
	id, key, err := pkey.Show(rec.ID)
	if err != nil {
		return DumpRecord{}, fmt.Errorf("ebb: record at offset %d (seq %d): %v: %w", offset, rec.Seq, err, segment.ErrCorrupt)
	}
	return DumpRecord{
		Op: rec.Op.String(), Container: rec.Container, Seq: rec.Seq, TS: rec.TS, TTL: rec.TTL,
		ID: id, PartitionKey: key, Size: size, Offset: offset, Body: rec.Body,
	}, nil
}

// DumpFile decodes a segment or journal file without opening its database:
// it reads the file only, takes no lock and writes nothing. It tells the
// kind of file from its name and first bytes (a segment file starts or ends
// with the segment magic, or is named *.seg; a journal file is named by its
// first seq, or starts with a valid journal entry) and returns the records
// in file order, streaming: its memory does not grow with the file. The sequence yields the first damage found (wrapping
// engine.ErrCorrupt) and stops: for a segment file that is a
// *segment.CorruptError, for a journal file a *journal.CorruptError, whose
// Torn field tells a torn tail.
//
// It fails with ErrUnknownFile when path does not exist, is not a regular
// file (a fifo, a device) or is neither kind,
// and with an error wrapping engine.ErrCorrupt when a segment file cannot
// be opened.
func DumpFile(path string) (FileKind, iter.Seq2[DumpRecord, error], error) {
	fi, err := vfs.OS.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil, fmt.Errorf("%w: %s does not exist", ErrUnknownFile, path)
	case err != nil:
		return "", nil, fmt.Errorf("ebb: %w", err)
	case fi.IsDir():
		return "", nil, fmt.Errorf("%w: %s is a directory", ErrUnknownFile, path)
	case !fi.Mode().IsRegular():
		// A fifo or a device could block, or never end (/dev/zero).
		return "", nil, fmt.Errorf("%w: %s is not a regular file (%s)", ErrUnknownFile, path, fi.Mode().Type())
	}
	if isSegmentFile(path) || strings.HasSuffix(path, ".seg") {
		r, err := segment.Open(path, segment.ReaderOptions{})
		if err != nil {
			return "", nil, fmt.Errorf("ebb: %w", err)
		}
		r.Close()
		return FileSegment, dumpSegment(path), nil
	}
	if !isJournalFile(path) {
		return "", nil, fmt.Errorf("%w: %s", ErrUnknownFile, path)
	}
	return FileJournal, dumpJournal(path), nil
}

// isSegmentFile reports whether the file at path can be read and has a
// segment file's magic (segment.IsSegment).
func isSegmentFile(path string) bool {
	f, err := vfs.OS.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	return err == nil && segment.IsSegment(f, fi.Size())
}

// isJournalFile reports whether path is named like a journal file or starts
// with a valid journal entry.
func isJournalFile(path string) bool {
	name := filepath.Base(path)
	if len(name) >= 20 {
		if _, err := strconv.ParseUint(name[:20], 10, 64); err == nil {
			return true
		}
	}
	return journal.StartsWithEntry(path)
}

func dumpSegment(path string) iter.Seq2[DumpRecord, error] {
	return func(yield func(DumpRecord, error) bool) {
		r, err := segment.Open(path, segment.ReaderOptions{})
		if err != nil {
			yield(DumpRecord{}, fmt.Errorf("ebb: %w", err))
			return
		}
		defer r.Close()
		for at, err := range r.Records() {
			if err != nil {
				yield(DumpRecord{}, err)
				return
			}
			d, err := dumpRecord(&at.Record, segment.RecordSize(&at.Record), at.Offset)
			if err != nil {
				yield(DumpRecord{}, err)
				return
			}
			d.Handle = at.Handle.String()
			if !yield(d, nil) {
				return
			}
		}
	}
}

func dumpJournal(path string) iter.Seq2[DumpRecord, error] {
	return func(yield func(DumpRecord, error) bool) {
		var rec segment.Record
		for e, err := range journal.ReadFile(path) {
			if err != nil {
				yield(DumpRecord{}, err)
				return
			}
			plain, err := segment.DecodePayload(e.Payload, nil)
			if err != nil {
				yield(DumpRecord{}, entryRecordError(path, e, 0, err))
				return
			}
			for off, n, k := 0, 0, 0; off < len(plain); off, k = off+n, k+1 {
				if n, err = segment.DecodeRecord(plain[off:], &rec); err != nil {
					yield(DumpRecord{}, entryRecordError(path, e, off, err))
					return
				}
				d, err := dumpRecord(&rec, n, e.Offset)
				if err != nil {
					yield(DumpRecord{}, err)
					return
				}
				d.Entry = k
				if !yield(d, nil) {
					return
				}
			}
		}
	}
}
