package tool

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/journal"
	"github.com/ebbdb/ebb/engine/vfs"
	"github.com/ebbdb/ebb/segment"
)

// Offline reading. Inspect and Verify read a database directory without
// opening the database: they never take its LOCK, never write, and open
// every file read-only, so they work on a directory another process has
// open. Such a directory changes under them (seals add segment files and cut
// the journal, compactions swap files, the journal's last file grows), so
// they build a snapshot optimistically: read the MANIFEST, the files it
// names and the journal, then read the MANIFEST again; if it changed, or a
// file it named vanished, start over. After a few attempts they report what
// they found as it is.

// snapshotAttempts bounds how often a snapshot is retaken when the
// directory changes under it.
const snapshotAttempts = 16

// snapshot is what a database directory held at one moment, as far as
// reading it without a lock can tell.
type snapshot struct {
	dir       string
	manRaw    []byte
	man       *dbfile.Manifest // nil when the MANIFEST is missing or damaged
	manErr    error            // why man is nil
	clockFile dbfile.ClockFile
	segs      []*segView   // the files the MANIFEST names, by container then number
	orphans   []string     // files in seg/ the MANIFEST does not name
	journal   []*jFileView // journal files in seq order
}

// segView is one segment file the MANIFEST names.
type segView struct {
	cont    int // index into man.Containers
	num     uint32
	rel     string
	r       *segment.Reader // nil when Open failed
	index   []segment.IndexEntry
	err     error // opening or decoding the index failed
	missing bool
}

// jFileView is one journal file, decoded.
type jFileView struct {
	rel     string
	path    string
	size    int64
	first   uint64 // from the name
	entries int64
	seqs    *SeqRange
	sealed  int64
	recs    []jRecord
	err     error // a *journal.CorruptError, or a failure to read
	torn    bool  // err is a torn tail of the journal's last file
	missing bool
}

// jRecord is a record decoded from a journal entry.
type jRecord struct {
	rec    segment.Record
	seq    uint64 // the entry's seq
	size   int64
	offset int64 // offset of the entry in its file
	index  int   // position of the record in its entry
}

// errMoved says the directory changed while a snapshot was taken.
var errMoved = errors.New("ebb: database directory changed while being read")

// takeSnapshot reads dir, retrying while it changes underneath.
func takeSnapshot(dir string) (*snapshot, error) {
	if err := checkDatabaseDir(dir); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		s, err := readSnapshot(dir, attempt == snapshotAttempts)
		if errors.Is(err, errMoved) {
			s.close()
			time.Sleep(time.Duration(attempt) * 10 * time.Millisecond)
			continue
		}
		return s, err
	}
}

// checkDatabaseDir fails with engine.ErrNoDatabase unless dir holds a MANIFEST or
// a non-empty journal/ or seg/ folder.
func checkDatabaseDir(dir string) error {
	fi, err := vfs.OS.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s does not exist", dbfile.ErrNoDatabase, dir)
	case err != nil:
		return fmt.Errorf("%w: %v", dbfile.ErrNoDatabase, err)
	case !fi.IsDir():
		return fmt.Errorf("%w: %s is not a directory", dbfile.ErrNoDatabase, dir)
	}
	ents, err := vfs.OS.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%w: %v", dbfile.ErrNoDatabase, err)
	}
	if len(ents) == 0 {
		return fmt.Errorf("%w: %s is empty", dbfile.ErrNoDatabase, dir)
	}
	if _, err := vfs.OS.Stat(filepath.Join(dir, dbfile.ManifestName)); err == nil {
		return nil
	}
	for _, sub := range []string{dbfile.JournalDir, dbfile.SegmentDir} {
		if ents, _ := vfs.OS.ReadDir(filepath.Join(dir, sub)); len(ents) > 0 {
			return nil // a database that lost its MANIFEST: damage, reported later
		}
	}
	return fmt.Errorf("%w: %s holds no %s, %s/ or %s/", dbfile.ErrNoDatabase, dir, dbfile.ManifestName, dbfile.JournalDir, dbfile.SegmentDir)
}

// readSnapshot reads dir once. Unless final, it returns errMoved when the
// MANIFEST changed or a file it names vanished meanwhile.
func readSnapshot(dir string, final bool) (*snapshot, error) {
	s := &snapshot{dir: dir}
	if regularFile(filepath.Join(dir, dbfile.ClockName)) == nil {
		s.clockFile = dbfile.ReadClockFile(dir)
	}
	mpath := filepath.Join(dir, dbfile.ManifestName)
	raw, err := readSmallFile(mpath, maxManifestRead)
	switch {
	case errors.Is(err, errTooLarge) || errors.Is(err, errNotRegular):
		s.manErr = fmt.Errorf("ebb: %w: %w", err, segment.ErrCorrupt)
	case errors.Is(err, fs.ErrNotExist):
		s.manErr = fmt.Errorf("ebb: %s: the %s is missing (journal/ or seg/ hold files): %w", dir, dbfile.ManifestName, segment.ErrCorrupt)
	case err != nil:
		return s, fmt.Errorf("ebb: read %s: %w", mpath, err)
	default:
		s.manRaw = raw
		if s.man, _, err = dbfile.DecodeManifest(raw, mpath); err != nil {
			s.manErr = fmt.Errorf("ebb: %w", err)
		}
	}
	moved := func() bool {
		if final {
			return false
		}
		b, err := readSmallFile(mpath, maxManifestRead)
		return (err == nil) != (s.manRaw != nil) || !bytes.Equal(b, s.manRaw)
	}

	if err := s.readSegments(moved); err != nil {
		return s, err
	}

	jdir := filepath.Join(dir, dbfile.JournalDir)
	before, busy := journalNames(jdir)
	if busy && !final {
		return s, errMoved
	}
	if err := s.readJournal(); err != nil {
		return s, err
	}
	if after, busy := journalNames(jdir); !final {
		// A truncation removes files, then renames its ".START" file.
		if busy {
			return s, errMoved
		}
		for name := range before {
			if !after[name] {
				return s, errMoved
			}
		}
	}
	if s.man != nil && len(s.journal) > 0 {
		// A seal moves JournalFrom and then cuts the journal: entries
		// missing before JournalFrom mean the MANIFEST read is stale.
		if first := s.journal[0].first; first > s.man.JournalFrom && moved() {
			return s, errMoved
		}
	}
	if moved() {
		return s, errMoved
	}
	return s, nil
}

// readSegments opens the segment files the MANIFEST names and decodes
// their index blocks, and lists the other files in seg/ as orphans. It
// returns errMoved when a file is missing and moved reports that the
// MANIFEST changed meanwhile.
func (s *snapshot) readSegments(moved func() bool) error {
	referenced := make(map[string]bool)
	if s.man != nil {
		for ci, cm := range s.man.Containers {
			nums := slices.Clone(cm.Files)
			slices.Sort(nums)
			for _, num := range nums {
				v := &segView{cont: ci, num: num, rel: dbfile.SegmentRel(num)}
				referenced[v.rel] = true
				s.segs = append(s.segs, v)
				path := filepath.Join(s.dir, v.rel)
				if v.err = regularFile(path); v.err == nil {
					v.r, v.err = segment.Open(path, segment.ReaderOptions{})
				}
				if errors.Is(v.err, fs.ErrNotExist) {
					if moved() {
						return errMoved
					}
					v.missing = true
					continue
				}
				if v.err == nil {
					v.index, v.err = v.r.Index()
				}
			}
		}
	}
	ents, err := vfs.OS.ReadDir(filepath.Join(s.dir, dbfile.SegmentDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("ebb: %w", err)
	}
	for _, e := range ents {
		if rel := dbfile.SegmentDir + "/" + e.Name(); !referenced[rel] {
			s.orphans = append(s.orphans, rel)
		}
	}
	return nil
}

// journalNames returns the names of the files in the journal folder, and
// whether tidwall is amid a truncation there (a ".START" or ".END" file
// exists: the old files are being replaced).
func journalNames(jdir string) (map[string]bool, bool) {
	ents, _ := vfs.OS.ReadDir(jdir)
	names := make(map[string]bool, len(ents))
	busy := false
	for _, e := range ents {
		name := e.Name()
		names[name] = true
		busy = busy || strings.HasSuffix(name, ".START") || strings.HasSuffix(name, ".END")
	}
	return names, busy
}

// readJournal decodes every journal file.
func (s *snapshot) readJournal() error {
	jdir := filepath.Join(s.dir, dbfile.JournalDir)
	paths, err := journal.Files(jdir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ebb: %w", err)
	}
	from := uint64(1)
	if s.man != nil {
		from = s.man.JournalFrom
	}
	for i, path := range paths {
		f := &jFileView{path: path, rel: dbfile.JournalDir + "/" + filepath.Base(path)}
		f.first, _ = strconv.ParseUint(filepath.Base(path)[:20], 10, 64)
		s.journal = append(s.journal, f)
		if fi, err := vfs.OS.Stat(path); err == nil {
			f.size = fi.Size()
		}
		for e, err := range journal.ReadFile(path) {
			if err != nil {
				f.err = err
				if errors.Is(err, fs.ErrNotExist) {
					f.missing = true
				}
				var ce *journal.CorruptError
				f.torn = errors.As(err, &ce) && ce.Torn && i == len(paths)-1
				break
			}
			f.entries++
			if f.seqs == nil {
				f.seqs = &SeqRange{First: e.Seq}
			}
			f.seqs.Last = e.Seq
			if e.Seq < from {
				f.sealed++
				continue
			}
			plain, err := segment.DecodePayload(e.Payload, nil)
			if err != nil {
				f.err = entryRecordError(path, e, 0, err)
				break
			}
			for off, n, k := 0, 0, 0; off < len(plain); off, k = off+n, k+1 {
				jr := jRecord{seq: e.Seq, offset: e.Offset, index: k}
				if n, err = segment.DecodeRecord(plain[off:], &jr.rec); err != nil {
					f.err = entryRecordError(path, e, off, err)
					break
				}
				jr.size = int64(n)
				f.recs = append(f.recs, jr)
			}
			if f.err != nil {
				break
			}
		}
	}
	return nil
}

// entryRecordError says that the record at byte off of journal entry e,
// in the file at path, does not decode.
func entryRecordError(path string, e journal.Entry, off int, err error) error {
	return fmt.Errorf("journal: %s: entry seq %d at offset %d: record at byte %d: %w", path, e.Seq, e.Offset, off, err)
}

func (s *snapshot) close() {
	if s == nil {
		return
	}
	for _, v := range s.segs {
		if v.r != nil {
			v.r.Close()
		}
	}
}

// now is the instant the database would judge expiry against if it opened
// with wall clock time wall: never before its persisted clock or any _ts
// (but those of records stamped before a ResetClock).
func (s *snapshot) now(wall int64) int64 {
	reset := s.clockFile.ResetSeq
	now := max(wall, s.clockFile.High)
	if s.man != nil {
		now = max(now, s.man.Clock)
	}
	for _, v := range s.segs {
		if v.r == nil {
			continue
		}
		switch st := v.r.Stats(); {
		case st.MinSeq > reset:
			now = max(now, st.MaxTS)
		case st.MaxSeq > reset:
			for _, e := range v.index {
				if e.Seq > reset {
					now = max(now, e.TS)
				}
			}
		}
	}
	for _, f := range s.journal {
		for i := range f.recs {
			if f.recs[i].rec.Seq > reset {
				now = max(now, f.recs[i].rec.TS)
			}
		}
	}
	return now
}

// maxManifestRead bounds the MANIFEST the offline tools read: far more than
// any database's (a few bytes per container and segment file).
const maxManifestRead = 64 << 20

var (
	errNotRegular = errors.New("not a regular file")
	errTooLarge   = errors.New("larger than any such file ebb writes")
)

// regularFile returns an error wrapping errNotRegular when path exists and
// is not a regular file (a fifo or device could block or never end), and
// the error of Stat for a path that cannot be described.
func regularFile(path string) error {
	fi, err := vfs.OS.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: %w (%s)", path, errNotRegular, fi.Mode().Type())
	}
	return nil
}

// readSmallFile reads a file ebb keeps small (MANIFEST, CLOCK) for the
// offline tools: a path that is not a regular file, or holds more than max
// bytes, is refused without being read.
func readSmallFile(path string, max int64) ([]byte, error) {
	fi, err := vfs.OS.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", path, errNotRegular, fi.Mode().Type())
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s: %d bytes, %w (%d)", path, fi.Size(), errTooLarge, max)
	}
	f, err := vfs.OS.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max+1))
}
