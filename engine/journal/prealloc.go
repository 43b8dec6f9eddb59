package journal

import (
	"os"
)

// zeroChunk is what zeroFillLocked writes at a time; never written to.
var zeroChunk = make([]byte, 64<<10)

// The window of zeros zeroFillLocked keeps ahead of the tail's entries
// starts at minFillStep bytes in each new tail file (or eight times the
// write that asks for it, if larger) and doubles with each extension up to
// maxFillStep: a journal written to slowly holds few zeros (a store of a
// few items stays a few KB on disk), a busy one extends its tail rarely
// (each extension costs the one fsync after it a metadata commit, as an
// append does). Writes larger than a quarter of maxFillStep would run past
// any window: their file is not written ahead.
const (
	minFillStep = 64 << 10
	maxFillStep = 1 << 20
)

// maxAhead bounds the zeros a tail holds after its entries: less than half
// a window left when a window more is written. Zeros after an entry, up to
// the end of a file, are read as the end of its entries when there are at
// most this many of them; more are a torn write.
const maxAhead = maxFillStep + maxFillStep/2

// zeroFillLocked keeps zeros written ahead of the tail's entries, with
// Options.Preallocate (see Preallocation in the package documentation),
// after a write of wrote bytes: when fewer than half a window of them are
// left, it appends a window more, up to Options.SegmentSize. The zeros go
// through Options.FS with O_APPEND, after what is in the file: j.mu is
// held, so tidwall writes nothing meanwhile, and its own descriptor stays
// where its entries end, so its appends overwrite the zeros. A failure is
// only logged, and the file not written ahead again: the appends then grow
// it as they would without.
func (j *Journal) zeroFillLocked(wrote int) {
	if !j.opts.Preallocate {
		return
	}
	tail := int64(j.tailSize)
	if j.filled != j.tailPath {
		j.filled, j.fillEnd, j.fillStep = j.tailPath, tail, 0
	}
	defer func() { j.ahead.Store(max(0, j.fillEnd-tail)) }()
	if j.fillStep < 0 || (j.fillStep > 0 && j.fillEnd-tail >= j.fillStep/2) || int64(wrote) > maxFillStep/4 {
		return // failed before, enough zeros ahead, or a write too large
	}
	from := max(j.fillEnd, tail)
	to := min(from+min(max(2*j.fillStep, minFillStep, 8*int64(wrote)), maxFillStep), int64(j.opts.SegmentSize))
	if to <= from {
		return
	}
	j.fillStep = to - from
	if err := j.appendZeros(from, to); err != nil {
		j.fillStep = -1
		j.opts.Logger.Debug("journal: could not write the tail ahead", "file", j.tailPath, "err", err)
	}
}

// appendZeros appends zeros to the tail file, which must end at from, up to
// to, and records in j.fillEnd how far they reach.
func (j *Journal) appendZeros(from, to int64) error {
	f, err := j.fs.OpenFile(j.tailPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return err
	} else if fi.Size() != from {
		// Not the file the journal expects: leave it alone.
		return &os.PathError{Op: "write ahead", Path: j.tailPath, Err: os.ErrInvalid}
	}
	j.fillEnd = from
	for j.fillEnd < to {
		k, err := f.Write(zeroChunk[:min(to-j.fillEnd, int64(len(zeroChunk)))])
		j.fillEnd += int64(k)
		if err != nil {
			return err
		}
	}
	return nil
}

// cutFillLocked cuts the zeros zeroFillLocked wrote off the file at path,
// whose entries end at size, if it is the file they were written to: the
// file has stopped being the tail, or the journal is closing. A failure is
// only logged: zeros after the last entry of a file are read as its end.
func (j *Journal) cutFillLocked(path string, size int64) {
	if j.filled != path {
		return
	}
	j.filled = ""
	// Size counted the entries and the zeros after them apart; what is
	// left of the zeros now counts as the file's.
	j.ahead.Store(0)
	j.size.Add(max(0, j.fillEnd-size))
	if j.fillEnd <= size {
		return
	}
	f, err := j.fs.OpenFile(path, os.O_WRONLY, 0)
	if err == nil {
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil && fi.Size() > size {
			if err = f.Truncate(size); err == nil {
				j.size.Add(size - fi.Size())
			}
		}
		f.Close()
	}
	if err != nil {
		j.opts.Logger.Debug("journal: could not cut the zeros after the last entry", "file", path, "err", err)
	}
}
