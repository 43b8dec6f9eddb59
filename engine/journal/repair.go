package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/ebbdb/ebb/engine/vfs"
)

// RepairInfo describes the torn tail that Open cut off the last segment file.
type RepairInfo struct {
	// File is the path of the repaired segment file.
	File string
	// Offset is where the file was cut: the end of its last good entry.
	Offset int64
	// CutBytes is the number of bytes removed from the end of File.
	CutBytes int64
	// Copy is the path of the copy of the bytes cut off (at most
	// MaxBrokenCopy of them, from Offset on), kept in the broken folder and
	// named after Seq so that ReadFile decodes it. It is "" when the copy
	// could not be written (a full disk, say): the cut is made anyway, since
	// a torn tail holds no acknowledged entry, and the failure is logged.
	Copy string
	// Seq is the seq the first dropped entry would have carried; the next
	// Append reuses it.
	Seq uint64
	// Reason says what was wrong with the first dropped entry.
	Reason string
}

// MaxBrokenCopy bounds the bytes a repair keeps in the broken folder: a
// repair needs at most this much free space, however large the file.
const MaxBrokenCopy = 1 << 20

// segmentFile is one of tidwall's segment files.
type segmentFile struct {
	name string
	seq  uint64 // first seq, from the name
	size int64
}

// dirListing is what the journal folder holds, read the way tidwall reads it.
type dirListing struct {
	segments []segmentFile // plain segment files, in seq order
	startSeq uint64        // highest seq of a ".START" file; 0 if none
	hasEnd   bool          // an ".END" file exists
	temps    []string      // leftovers of tidwall's temp-file writes
	bytes    int64         // total size of tidwall's files
}

// listDir reads the journal folder.
func listDir(fsys vfs.FS, dir string) (dirListing, error) {
	var l dirListing
	des, err := fsys.ReadDir(dir)
	if err != nil {
		return l, fmt.Errorf("journal: %w", err)
	}
	for _, de := range des { // os.ReadDir sorts by name, which is seq order
		name := de.Name()
		seq, ok := parseSeqName(name)
		if !ok || de.IsDir() {
			continue
		}
		suffix := name[20:]
		info, err := de.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return l, fmt.Errorf("journal: %w", err)
		}
		switch suffix {
		case "":
			l.segments = append(l.segments, segmentFile{name: name, seq: seq, size: info.Size()})
		case ".START":
			l.startSeq = max(l.startSeq, seq)
		case ".END":
			l.hasEnd = true
		case ".START.TEMP", ".END.TEMP":
			l.temps = append(l.temps, name)
		default:
			continue // not tidwall's (a broken copy, say)
		}
		l.bytes += info.Size()
	}
	return l, nil
}

// tail returns the segment file that will be tidwall's tail, if it is one to
// scan: when a ".START" or ".END" file will become the tail, tidwall wrote it
// whole (to a temp file, fsynced, renamed) and the scan is left to tidwall.
func (l dirListing) tail() (segmentFile, bool) {
	if len(l.segments) == 0 || l.hasEnd {
		return segmentFile{}, false
	}
	last := l.segments[len(l.segments)-1]
	if l.startSeq >= last.seq {
		return segmentFile{}, false
	}
	return last, true
}

// repairTail scans the tail segment file and cuts off a torn tail, keeping
// a copy of the bytes it cuts (at most MaxBrokenCopy) in brokenDir. It
// returns nil when the tail is sound, and a *CorruptError when the damage is
// not a torn tail.
func repairTail(fsys vfs.FS, dir, brokenDir string, l dirListing, logger *slog.Logger) (*RepairInfo, error) {
	tail, ok := l.tail()
	if !ok {
		return nil, nil
	}
	path := filepath.Join(dir, tail.name)
	data, err := fsys.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	d := fileDecoder{data: data, seq: tail.seq}
	var cerr *CorruptError
	for cerr == nil {
		var ok bool
		if _, ok, cerr = d.next(); !ok && cerr == nil {
			return nil, cutZeros(fsys, path, int64(d.off), int64(len(data)), logger)
		}
	}
	cerr.File = path
	if !cerr.Torn {
		return nil, cerr
	}

	info := &RepairInfo{
		File:     path,
		Offset:   cerr.Offset,
		CutBytes: int64(len(data)) - cerr.Offset,
		Seq:      cerr.Seq,
		Reason:   cerr.Reason,
	}
	cut := data[cerr.Offset:]
	kept := cut[:min(len(cut), MaxBrokenCopy)]
	info.Copy, err = keepBrokenCopy(fsys, brokenDir, segmentName(cerr.Seq), kept)
	if err != nil {
		// The cut bytes are unacknowledged: losing the copy loses no
		// entry, while refusing to cut would keep the database from
		// opening until the disk has room for it.
		logger.Warn("journal: could not keep a copy of a torn tail; cutting it anyway", "file", path, "err", err)
	}
	if err := truncateSync(fsys, path, cerr.Offset); err != nil {
		if info.Copy != "" {
			fsys.Remove(info.Copy) // the next Open repairs again and keeps a new copy
		}
		return nil, err
	}
	if err := vfs.SyncDir(fsys, dir); err != nil {
		return nil, err
	}
	logger.Warn("journal: repaired a torn tail",
		"file", info.File, "offset", info.Offset, "cut_bytes", info.CutBytes, "kept_bytes", len(kept),
		"seq", info.Seq, "reason", info.Reason, "copy", info.Copy)
	return info, nil
}

// cutZeros cuts the zeros after the last entry of the tail file at path
// (size bytes long, its entries ending at end), if there are any: zeros the
// journal wrote the file ahead with (see Preallocation in the package
// documentation), left by a crash. They hold no entry, so nothing is kept of
// them and no repair is reported.
func cutZeros(fsys vfs.FS, path string, end, size int64, logger *slog.Logger) error {
	if end >= size {
		return nil
	}
	if err := truncateSync(fsys, path, end); err != nil {
		return err
	}
	logger.Debug("journal: cut the zeros after the last entry of the tail", "file", path, "offset", end, "cut_bytes", size-end)
	return nil
}

// keepBrokenCopy writes data, bytes cut from a damaged segment file, to a
// new file in brokenDir named after name (the segment name of the first cut
// entry) and the time, and makes it durable. On failure it removes what it
// wrote: a failed attempt leaves nothing behind.
func keepBrokenCopy(fsys vfs.FS, brokenDir, name string, data []byte) (string, error) {
	if err := mkdirAllSync(fsys, brokenDir); err != nil {
		return "", err
	}
	path, err := vfs.KeepCopy(fsys, brokenDir, name, data)
	if err != nil {
		return "", fmt.Errorf("journal: keeping a copy of a torn segment: %w", err)
	}
	return path, nil
}

// truncateSync cuts the file at size and fsyncs it.
func truncateSync(fsys vfs.FS, path string, size int64) error {
	f, err := fsys.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("journal: repairing %s: %w", path, err)
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("journal: repairing %s: %w", path, err)
	}
	return nil
}

// removeTemps deletes the temp files that tidwall leaves when it crashes
// while writing a ".START" or ".END" file. Until renamed they mean nothing:
// tidwall never reads them and the truncation they belonged to did not
// happen.
func removeTemps(fsys vfs.FS, dir string, l dirListing) error {
	for _, name := range l.temps {
		if err := fsys.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("journal: %w", err)
		}
	}
	return nil
}

// mkdirAllSync creates dir and any missing parents, fsyncing the parent of
// each folder it creates so that the new folders survive a crash.
func mkdirAllSync(fsys vfs.FS, dir string) error {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := fsys.Stat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := vfs.SyncDir(fsys, filepath.Dir(missing[i])); err != nil {
			return err
		}
	}
	return nil
}
