package segment

import "fmt"

// Verify reads the whole segment and checks it: the checksum of every block
// and of the index, that every record decodes and fills its block exactly,
// that the index agrees with the records entry for entry, and that the
// footer's Stats agree with both. It returns the first problem found, a
// *CorruptError (wrapping ErrCorrupt) when it is damage.
func (r *Reader) Verify() error { return r.VerifyEach(nil) }

// VerifyEach is Verify that also hands each record to fn, when fn is not
// nil, once the record has passed its checks, so that a caller can check
// what it needs of every record in the same read of the file. The record's
// Body is valid only during the call. An error from fn ends the check and
// is returned as it is.
func (r *Reader) VerifyEach(fn func(*RecordAt) error) error {
	entries, err := r.Index()
	if err != nil {
		return err
	}
	want := r.ft.stats
	got := Stats{
		Container:   want.Container,
		FileBytes:   want.FileBytes,
		Compression: want.Compression,
	}
	blocks := int64(0)
	i := 0
	for at, err := range r.records(false) {
		if err != nil {
			return err
		}
		if i >= len(entries) {
			return r.corrupt(atRecord(int(at.Handle.Block), at.Offset, int(at.Handle.Off)),
				"block %d: record at %d: more records than the index's %d entries",
				at.Handle.Block, at.Handle.Off, len(entries))
		}
		rec, e := &at.Record, &entries[i]
		size := RecordSize(rec)
		if e.Op != rec.Op || e.Seq != rec.Seq || e.TS != rec.TS || e.TTL != rec.TTL ||
			e.ID != rec.ID || e.Handle != at.Handle || int(e.Size) != size {
			w := atRecord(int(at.Handle.Block), at.Offset, int(at.Handle.Off))
			w.part, w.entry = partIndex, i
			return r.corrupt(w, "index entry %d %s disagrees with the record at %s %s",
				i, describeEntry(e), at.Handle, describeEntry(&IndexEntry{
					Op: rec.Op, Seq: rec.Seq, TS: rec.TS, TTL: rec.TTL, ID: rec.ID,
					Handle: at.Handle, Size: uint32(size),
				}))
		}
		if got.Records == 0 {
			got.MinSeq, got.MaxSeq, got.MinTS, got.MaxTS = rec.Seq, rec.Seq, rec.TS, rec.TS
		}
		got.MinSeq, got.MaxSeq = min(got.MinSeq, rec.Seq), max(got.MaxSeq, rec.Seq)
		got.MinTS, got.MaxTS = min(got.MinTS, rec.TS), max(got.MaxTS, rec.TS)
		got.Records++
		if rec.Op == OpPut {
			got.Puts++
		} else {
			got.Deletes++
		}
		got.RawBytes += int64(size)
		blocks = int64(at.Handle.Block) + 1
		i++
		if fn != nil {
			if err := fn(&at); err != nil {
				return err
			}
		}
	}
	got.Blocks = blocks
	if i != len(entries) {
		return r.corrupt(atIndex(int64(r.ft.indexOff)), "%d records, but the index has %d entries", i, len(entries))
	}
	if got != want {
		return r.corrupt(atFooter(want.FileBytes), "footer stats %+v, records say %+v", want, got)
	}
	return nil
}

func describeEntry(e *IndexEntry) string {
	return fmt.Sprintf("{%s id=%q seq=%d ts=%d ttl=%d at %s size %d}",
		e.Op, e.ID, e.Seq, e.TS, e.TTL, e.Handle, e.Size)
}
