package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ebbdb/ebb/engine/journal"
	"github.com/ebbdb/ebb/policy"
	"github.com/ebbdb/ebb/segment"
)

// Inspection. Inspect and Verify read a database directory without opening
// the database: they never take its LOCK, never write, and open every file
// read-only, so they work on a directory another process has open. Such a
// directory changes under them (seals add segment files and cut the
// journal, compactions swap files, the journal's last file grows), so they
// build a snapshot optimistically: read the MANIFEST, the files it names
// and the journal, then read the MANIFEST again; if it changed, or a file it
// named vanished, start over. After a few attempts they report what they
// found as it is.

// ErrNoDatabase: the directory given to Inspect or Verify does not exist,
// is not a directory, is empty, or holds no ebb database.
var ErrNoDatabase = errors.New("ebb: not an ebb database")

// snapshotAttempts bounds how often a snapshot is retaken when the
// directory changes under it.
const snapshotAttempts = 8

// InspectOptions adjust Inspect. A nil *InspectOptions means the defaults.
type InspectOptions struct {
	// Clock is the wall clock against which items are judged live or
	// expired. As when the database opens, the instant used is never before
	// the highest time the database persisted or any _ts on disk. Default:
	// time.Now.
	Clock func() time.Time
}

// Report is what Inspect found in a database directory. Its JSON form
// (field names in snake_case) is stable: fields are added, never renamed or
// removed. Times are unix seconds; sizes are bytes.
type Report struct {
	// Dir is the directory as given.
	Dir string `json:"dir"`
	// Now is the instant against which items were judged live or expired.
	Now int64 `json:"now"`
	// Clock is the highest time the database persisted (MANIFEST or CLOCK).
	Clock int64 `json:"clock"`
	// NextFile, NextContainer and JournalFrom are the MANIFEST's counters:
	// JournalFrom is the first journal seq not yet sealed into segments.
	NextFile      uint32 `json:"next_file"`
	NextContainer uint32 `json:"next_container"`
	JournalFrom   uint64 `json:"journal_from"`
	// DiskBytes is the size of the MANIFEST, the segment files and the
	// journal files.
	DiskBytes int64 `json:"disk_bytes"`
	// Containers are the containers the MANIFEST names, in creation order.
	Containers []ContainerReport `json:"containers"`
	// Journal describes the journal files.
	Journal JournalReport `json:"journal"`
	// Orphans are files in seg/ that the MANIFEST does not name: outputs of
	// a seal or compaction in progress, or left by a crash (the next open
	// removes them).
	Orphans []string `json:"orphans"`
	// Notes are things worth knowing that are not damage, such as a torn
	// tail of the journal's last file (a write in progress, or cut short by
	// a crash and repaired at the next open).
	Notes []string `json:"notes"`
	// Errors are problems met while reading (a missing or unreadable file).
	// Run Verify for a full check.
	Errors []string `json:"errors"`
}

// ContainerReport describes one container.
type ContainerReport struct {
	ID  string `json:"id"`
	Num uint32 `json:"num"`
	// DefaultTTL is the DefaultTTL in force: null (TTL off), -1 or seconds.
	DefaultTTL *int32 `json:"default_ttl"`
	// Indexing is "consistent", "lazy" or "none".
	Indexing string `json:"indexing"`
	// History is the policy history: each DefaultTTL and when it started.
	History []PolicyChange `json:"policy_history"`
	// Items counts the items as the database would see them at Now.
	Items ItemCounts `json:"items"`
	// TS is the range of _ts of the items (live or expired); null when
	// there are none.
	TS *TimeRange `json:"ts"`
	// Expiry is the range of expiry instants of the items that expire;
	// null when none does.
	Expiry *TimeRange `json:"expiry"`
	// DiskBytes is the size of the container's segment files plus its
	// records waiting in the journal, as Stats counts it.
	DiskBytes int64 `json:"disk_bytes"`
	// DeadBytes is the part of the container's records (uncompressed) that
	// compaction would drop: expired, deleted or superseded versions and
	// tombstones. DeadShare is DeadBytes over all its record bytes.
	DeadBytes int64   `json:"dead_bytes"`
	DeadShare float64 `json:"dead_share"`
	// Segments are the container's segment files, in file order.
	Segments []SegmentReport `json:"segments"`
	// Journal counts the container's records waiting in the journal.
	Journal RecordUsage `json:"journal"`
}

// PolicyChange is one entry of a container's policy history.
type PolicyChange struct {
	At         int64  `json:"at"`
	DefaultTTL *int32 `json:"default_ttl"`
}

// ItemCounts count a container's items.
type ItemCounts struct {
	// Live items are visible; LiveBytes is the size of their records.
	Live      int64 `json:"live"`
	LiveBytes int64 `json:"live_bytes"`
	// Expired items are invisible but their records are still on disk,
	// waiting for compaction (Stats.ExpiredPending).
	Expired      int64 `json:"expired"`
	ExpiredBytes int64 `json:"expired_bytes"`
	// NeverExpire counts the live items that never expire under the
	// current policy history.
	NeverExpire int64 `json:"never_expire"`
	// Tombstones counts the deletes whose records are still on disk.
	Tombstones int64 `json:"tombstones"`
}

// TimeRange is a closed range of unix seconds.
type TimeRange struct {
	Min int64 `json:"min"`
	Max int64 `json:"max"`
}

func (r *TimeRange) add(t int64) *TimeRange {
	if r == nil {
		return &TimeRange{Min: t, Max: t}
	}
	r.Min, r.Max = min(r.Min, t), max(r.Max, t)
	return r
}

// RecordUsage counts records and how many of them are dead.
type RecordUsage struct {
	Records     int64   `json:"records"`
	RawBytes    int64   `json:"raw_bytes"`
	LiveRecords int64   `json:"live_records"`
	DeadRecords int64   `json:"dead_records"`
	DeadBytes   int64   `json:"dead_bytes"`
	DeadShare   float64 `json:"dead_share"`
}

func (u *RecordUsage) count(size int64, live bool) {
	u.Records++
	u.RawBytes += size
	if live {
		u.LiveRecords++
	} else {
		u.DeadRecords++
		u.DeadBytes += size
	}
}

func (u *RecordUsage) finish() { u.DeadShare = share(u.DeadBytes, u.RawBytes) }

func share(part, whole int64) float64 {
	if whole <= 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

// SegmentReport describes one segment file.
type SegmentReport struct {
	// File is the path relative to the database directory.
	File string `json:"file"`
	Num  uint32 `json:"num"`
	// Bytes is the file's size; Blocks its number of data blocks.
	Bytes  int64 `json:"bytes"`
	Blocks int64 `json:"blocks"`
	// Compression is the codec of its blocks; CompressionRatio is the
	// records' uncompressed bytes over the file's size.
	Compression      string  `json:"compression"`
	CompressionRatio float64 `json:"compression_ratio"`
	Puts             int64   `json:"puts"`
	Deletes          int64   `json:"deletes"`
	// Seq, TS and Expiry are the ranges of the records' seqs, _ts and
	// expiry instants (of the puts that expire); null when empty.
	Seq    *SeqRange  `json:"seq"`
	TS     *TimeRange `json:"ts"`
	Expiry *TimeRange `json:"expiry"`
	RecordUsage
	// Error says why the file could not be read, if it could not ("" when
	// it could).
	Error string `json:"error"`
}

// SeqRange is a closed range of journal seqs.
type SeqRange struct {
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
}

// JournalReport describes the journal.
type JournalReport struct {
	Files []JournalFileReport `json:"files"`
	Bytes int64               `json:"bytes"`
	// Seq is the range of seqs found in the journal; null when it is empty.
	Seq *SeqRange `json:"seq"`
	// Records and the rest count the records not yet sealed (seq at or
	// after JournalFrom).
	RecordUsage
}

// JournalFileReport describes one journal file.
type JournalFileReport struct {
	File    string    `json:"file"`
	Bytes   int64     `json:"bytes"`
	Entries int64     `json:"entries"`
	Seq     *SeqRange `json:"seq"`
	// Sealed counts the entries already sealed into segments (seq before
	// JournalFrom), which the next truncation drops.
	Sealed int64 `json:"sealed_entries"`
	// Records counts the records of the entries not yet sealed, and TS is
	// the range of their _ts (null when there are none).
	Records int64      `json:"records"`
	TS      *TimeRange `json:"ts"`
	// Note reports a torn tail in the last file, Error any other damage;
	// both are "" when there is none.
	Note  string `json:"note"`
	Error string `json:"error"`
}

// Inspect reports what dir holds, read without opening the database: see
// InspectWithOptions.
func Inspect(dir string) (*Report, error) { return InspectWithOptions(dir, nil) }

// InspectWithOptions reports what dir holds: its containers with their
// properties and item counts, and its segment and journal files with their
// sizes, record counts, time ranges and dead shares. It reads the MANIFEST,
// the segment files' footers and index blocks (never their data blocks) and
// the journal; it takes no lock and writes nothing, so it works while
// another process has the database open.
//
// It fails with ErrNoDatabase when dir is not an ebb database, and with an
// error wrapping ErrCorrupt when the MANIFEST is missing or damaged. Other
// problems (a segment file that is missing or unreadable, a damaged journal
// file) are listed in Report.Errors.
func InspectWithOptions(dir string, opts *InspectOptions) (*Report, error) {
	wall := time.Now
	if opts != nil && opts.Clock != nil {
		wall = opts.Clock
	}
	s, err := takeSnapshot(dir)
	if err != nil {
		return nil, err
	}
	defer s.close()
	if s.manErr != nil {
		return nil, s.manErr
	}
	return s.report(wall().Unix()), nil
}

// snapshot is what a database directory held at one moment, as far as
// reading it without a lock can tell.
type snapshot struct {
	dir       string
	manRaw    []byte
	man       *manifest // nil when the MANIFEST is missing or damaged
	manErr    error     // why man is nil
	clockFile int64
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

// checkDatabaseDir fails with ErrNoDatabase unless dir holds a MANIFEST or
// a non-empty journal/ or seg/ folder.
func checkDatabaseDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s does not exist", ErrNoDatabase, dir)
	case err != nil:
		return fmt.Errorf("%w: %v", ErrNoDatabase, err)
	case !fi.IsDir():
		return fmt.Errorf("%w: %s is not a directory", ErrNoDatabase, dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoDatabase, err)
	}
	if len(ents) == 0 {
		return fmt.Errorf("%w: %s is empty", ErrNoDatabase, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, manifestName)); err == nil {
		return nil
	}
	for _, sub := range []string{journalDir, segmentDir} {
		if ents, _ := os.ReadDir(filepath.Join(dir, sub)); len(ents) > 0 {
			return nil // a database that lost its MANIFEST: damage, reported later
		}
	}
	return fmt.Errorf("%w: %s holds no %s, %s/ or %s/", ErrNoDatabase, dir, manifestName, journalDir, segmentDir)
}

// readSnapshot reads dir once. Unless final, it returns errMoved when the
// MANIFEST changed or a file it names vanished meanwhile.
func readSnapshot(dir string, final bool) (*snapshot, error) {
	s := &snapshot{dir: dir, clockFile: readClockFile(dir)}
	mpath := filepath.Join(dir, manifestName)
	raw, err := os.ReadFile(mpath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.manErr = fmt.Errorf("ebb: %s: the %s is missing (journal/ or seg/ hold files): %w", dir, manifestName, ErrCorrupt)
	case err != nil:
		return s, fmt.Errorf("ebb: read %s: %w", mpath, err)
	default:
		s.manRaw = raw
		if s.man, err = decodeManifest(raw, mpath); err != nil {
			s.manErr = fmt.Errorf("ebb: %w", err)
		}
	}
	moved := func() bool {
		if final {
			return false
		}
		b, err := os.ReadFile(mpath)
		return (err == nil) != (s.manRaw != nil) || !bytes.Equal(b, s.manRaw)
	}

	referenced := make(map[string]bool)
	if s.man != nil {
		for ci, cm := range s.man.Containers {
			nums := slices.Clone(cm.Files)
			slices.Sort(nums)
			for _, num := range nums {
				v := &segView{cont: ci, num: num, rel: segmentRel(num)}
				referenced[v.rel] = true
				s.segs = append(s.segs, v)
				v.r, v.err = segment.Open(filepath.Join(dir, v.rel), segment.ReaderOptions{})
				if errors.Is(v.err, fs.ErrNotExist) {
					if moved() {
						return s, errMoved
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
	ents, err := os.ReadDir(filepath.Join(dir, segmentDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return s, fmt.Errorf("ebb: %w", err)
	}
	for _, e := range ents {
		if rel := segmentDir + "/" + e.Name(); !referenced[rel] {
			s.orphans = append(s.orphans, rel)
		}
	}

	jdir := filepath.Join(dir, journalDir)
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

// journalNames returns the names of the files in the journal folder, and
// whether tidwall is amid a truncation there (a ".START" or ".END" file
// exists: the old files are being replaced).
func journalNames(jdir string) (map[string]bool, bool) {
	ents, _ := os.ReadDir(jdir)
	names := make(map[string]bool, len(ents))
	busy := false
	for _, e := range ents {
		name := e.Name()
		names[name] = true
		busy = busy || strings.HasSuffix(name, ".START") || strings.HasSuffix(name, ".END")
	}
	return names, busy
}

func segmentRel(num uint32) string { return segmentDir + "/" + fmt.Sprintf("%08d.seg", num) }

// readJournal decodes every journal file.
func (s *snapshot) readJournal() error {
	jdir := filepath.Join(s.dir, journalDir)
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
		f := &jFileView{path: path, rel: journalDir + "/" + filepath.Base(path)}
		f.first, _ = strconv.ParseUint(filepath.Base(path)[:20], 10, 64)
		s.journal = append(s.journal, f)
		if fi, err := os.Stat(path); err == nil {
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
			for off, n, k := 0, 0, 0; off < len(e.Payload); off, k = off+n, k+1 {
				jr := jRecord{seq: e.Seq, offset: e.Offset, index: k}
				if n, err = segment.DecodeRecord(e.Payload[off:], &jr.rec); err != nil {
					f.err = fmt.Errorf("journal: %s: entry seq %d at offset %d: record at byte %d: %w", path, e.Seq, e.Offset, off, err)
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
// with wall clock time wall: never before its persisted clock or any _ts.
func (s *snapshot) now(wall int64) int64 {
	now := max(wall, s.clockFile)
	if s.man != nil {
		now = max(now, s.man.Clock)
	}
	for _, v := range s.segs {
		if v.r != nil {
			now = max(now, v.r.Stats().MaxTS)
		}
	}
	for _, f := range s.journal {
		for i := range f.recs {
			now = max(now, f.recs[i].rec.TS)
		}
	}
	return now
}

// place says where a record is: a segView, or a journal record.
type place struct {
	seg  *segView
	jrec *jRecord
}

// version is the newest record of an id, as recovery would index it.
type version struct {
	seq   uint64
	op    segment.Op
	ts    int64
	ttl   int32
	size  int64
	where place
}

// rebuild computes, for container ci, the newest version of every id, as
// recovery does: segment index entries first, then the journal records
// from JournalFrom on, the highest seq winning.
func (s *snapshot) rebuild(ci int) map[string]version {
	num := s.man.Containers[ci].Num
	newest := make(map[string]version)
	for _, v := range s.segs {
		if v.cont != ci {
			continue
		}
		for _, e := range v.index {
			if cur, ok := newest[e.ID]; ok && cur.seq >= e.Seq {
				continue
			}
			newest[e.ID] = version{seq: e.Seq, op: e.Op, ts: e.TS, ttl: e.TTL, size: int64(e.Size), where: place{seg: v}}
		}
	}
	for _, f := range s.journal {
		for i := range f.recs {
			r := &f.recs[i]
			if r.rec.Container != num {
				continue
			}
			if cur, ok := newest[r.rec.ID]; ok && cur.seq > r.rec.Seq {
				continue
			}
			newest[r.rec.ID] = version{seq: r.rec.Seq, op: r.rec.Op, ts: r.rec.TS, ttl: r.rec.TTL, size: r.size, where: place{jrec: r}}
		}
	}
	return newest
}

// report builds the Report at wall clock time wall.
func (s *snapshot) report(wall int64) *Report {
	m := s.man
	now := s.now(wall)
	rep := &Report{
		Dir:           s.dir,
		Now:           now,
		Clock:         max(m.Clock, s.clockFile),
		NextFile:      m.NextFile,
		NextContainer: m.NextContainer,
		JournalFrom:   m.JournalFrom,
		DiskBytes:     int64(len(s.manRaw)),
		Containers:    []ContainerReport{},
		Orphans:       append([]string{}, s.orphans...),
		Notes:         []string{},
		Errors:        []string{},
	}
	if len(s.orphans) > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d file(s) in %s/ are not in the %s: a seal or compaction in progress, or left by a crash (removed at the next open)",
			len(s.orphans), segmentDir, manifestName))
	}

	// Journal files.
	rep.Journal.Files = []JournalFileReport{}
	for _, f := range s.journal {
		jf := JournalFileReport{File: f.rel, Bytes: f.size, Entries: f.entries, Seq: f.seqs, Sealed: f.sealed, Records: int64(len(f.recs))}
		for i := range f.recs {
			jf.TS = jf.TS.add(f.recs[i].rec.TS)
		}
		switch {
		case f.torn:
			jf.Note = "torn tail: " + f.err.Error() + " (a write in progress, or cut short by a crash: repaired at the next open)"
			rep.Notes = append(rep.Notes, f.rel+": "+jf.Note)
		case f.err != nil:
			jf.Error = f.err.Error()
			rep.Errors = append(rep.Errors, jf.Error)
		}
		rep.Journal.Files = append(rep.Journal.Files, jf)
		rep.Journal.Bytes += f.size
		if f.seqs != nil {
			if rep.Journal.Seq == nil {
				rep.Journal.Seq = &SeqRange{First: f.seqs.First}
			}
			rep.Journal.Seq.Last = f.seqs.Last
		}
	}
	rep.DiskBytes += rep.Journal.Bytes

	known := make(map[uint32]bool, len(m.Containers))
	for ci, cm := range m.Containers {
		known[cm.Num] = true
		h := toHistory(cm.History)
		cr := ContainerReport{
			ID:         cm.ID,
			Num:        cm.Num,
			DefaultTTL: h.Current(),
			Indexing:   cm.Indexing.String(),
			History:    []PolicyChange{},
			Segments:   []SegmentReport{},
		}
		for _, c := range h {
			cr.History = append(cr.History, PolicyChange{At: c.At, DefaultTTL: c.DefaultTTL})
		}
		newest := s.rebuild(ci)
		expiry := func(ts int64, ttl int32) int64 {
			if len(h) == 0 {
				return policy.Never
			}
			return h.ExpiresAt(ts, ttl)
		}
		live := func(id string, seq uint64, at place) bool {
			v, ok := newest[id]
			return ok && v.seq == seq && v.where == at && v.op == segment.OpPut && !policy.Expired(expiry(v.ts, v.ttl), now)
		}
		for _, v := range newest {
			if v.op != segment.OpPut {
				cr.Items.Tombstones++
				continue
			}
			cr.TS = cr.TS.add(v.ts)
			exp := expiry(v.ts, v.ttl)
			if exp != policy.Never {
				cr.Expiry = cr.Expiry.add(exp)
			}
			if policy.Expired(exp, now) {
				cr.Items.Expired++
				cr.Items.ExpiredBytes += v.size
			} else {
				cr.Items.Live++
				cr.Items.LiveBytes += v.size
				if exp == policy.Never {
					cr.Items.NeverExpire++
				}
			}
		}
		var all RecordUsage
		for _, v := range s.segs {
			if v.cont != ci {
				continue
			}
			sr := SegmentReport{File: v.rel, Num: v.num}
			switch {
			case v.missing:
				sr.Error = "missing"
				rep.Errors = append(rep.Errors, fmt.Sprintf("%s: container %q names it, but it is missing", v.rel, cm.ID))
			case v.err != nil:
				sr.Error = v.err.Error()
				rep.Errors = append(rep.Errors, sr.Error)
			}
			if v.r != nil {
				st := v.r.Stats()
				sr.Bytes, sr.Blocks, sr.Puts, sr.Deletes = st.FileBytes, st.Blocks, st.Puts, st.Deletes
				sr.Compression = st.Compression.String()
				sr.CompressionRatio = share(st.RawBytes, st.FileBytes)
				if st.Records > 0 {
					sr.Seq = &SeqRange{First: st.MinSeq, Last: st.MaxSeq}
					sr.TS = &TimeRange{Min: st.MinTS, Max: st.MaxTS}
				}
				cr.DiskBytes += st.FileBytes
				rep.DiskBytes += st.FileBytes
			}
			for _, e := range v.index {
				sr.count(int64(e.Size), live(e.ID, e.Seq, place{seg: v}))
				if e.Op == segment.OpPut {
					if exp := expiry(e.TS, e.TTL); exp != policy.Never {
						sr.Expiry = sr.Expiry.add(exp)
					}
				}
			}
			sr.finish()
			all.Records += sr.Records
			all.RawBytes += sr.RawBytes
			all.DeadBytes += sr.DeadBytes
			cr.Segments = append(cr.Segments, sr)
		}
		for _, f := range s.journal {
			for i := range f.recs {
				r := &f.recs[i]
				if r.rec.Container == cm.Num {
					cr.Journal.count(r.size, live(r.rec.ID, r.rec.Seq, place{jrec: r}))
				}
			}
		}
		cr.Journal.finish()
		cr.DiskBytes += cr.Journal.RawBytes
		cr.DeadBytes = all.DeadBytes + cr.Journal.DeadBytes
		cr.DeadShare = share(cr.DeadBytes, all.RawBytes+cr.Journal.RawBytes)
		rep.Journal.Records += cr.Journal.Records
		rep.Journal.RawBytes += cr.Journal.RawBytes
		rep.Journal.LiveRecords += cr.Journal.LiveRecords
		rep.Journal.DeadRecords += cr.Journal.DeadRecords
		rep.Journal.DeadBytes += cr.Journal.DeadBytes
		rep.Containers = append(rep.Containers, cr)
	}
	// Records of deleted containers are dead.
	for _, f := range s.journal {
		for i := range f.recs {
			if r := &f.recs[i]; !known[r.rec.Container] {
				rep.Journal.count(r.size, false)
			}
		}
	}
	rep.Journal.finish()
	return rep
}

// ErrUnknownFile: the file given to DumpFile does not exist or is neither a
// segment file nor a journal file.
var ErrUnknownFile = errors.New("ebb: not a segment or journal file")

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
	TTL  int32  `json:"ttl"`
	ID   string `json:"id"`
	Size int    `json:"size"`
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
	return renderBody(nil, r.Body, r.TS, etagOf(r.Seq))
}

func dumpRecord(rec *segment.Record, size int, offset int64) DumpRecord {
	return DumpRecord{
		Op: rec.Op.String(), Container: rec.Container, Seq: rec.Seq, TS: rec.TS, TTL: rec.TTL,
		ID: rec.ID, Size: size, Offset: offset, Body: rec.Body,
	}
}

// DumpFile decodes a segment or journal file without opening its database:
// it reads the file only, takes no lock and writes nothing. It tells the
// kind of file from its contents (a segment file opens; a journal file is
// named by its first seq, or starts with a valid journal entry) and returns
// the records in file order. The sequence yields the first damage found
// (wrapping ErrCorrupt) and stops; for a journal file that is a
// *journal.CorruptError, whose Torn field tells a torn tail.
//
// It fails with ErrUnknownFile when path does not exist or is neither kind,
// and with an error wrapping ErrCorrupt when a segment file cannot be opened.
func DumpFile(path string) (FileKind, iter.Seq2[DumpRecord, error], error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil, fmt.Errorf("%w: %s does not exist", ErrUnknownFile, path)
	case err != nil:
		return "", nil, fmt.Errorf("ebb: %w", err)
	case fi.IsDir():
		return "", nil, fmt.Errorf("%w: %s is a directory", ErrUnknownFile, path)
	}
	r, serr := segment.Open(path, segment.ReaderOptions{})
	if serr == nil {
		r.Close()
		return FileSegment, dumpSegment(path), nil
	}
	if strings.HasSuffix(path, ".seg") {
		return "", nil, fmt.Errorf("ebb: %w", serr)
	}
	if !isJournalFile(path) {
		return "", nil, fmt.Errorf("%w: %s", ErrUnknownFile, path)
	}
	return FileJournal, dumpJournal(path), nil
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
	for _, err := range journal.ReadFile(path) {
		return err == nil
	}
	return false
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
			d := dumpRecord(&at.Record, segment.RecordSize(&at.Record), at.Offset)
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
			for off, n, k := 0, 0, 0; off < len(e.Payload); off, k = off+n, k+1 {
				if n, err = segment.DecodeRecord(e.Payload[off:], &rec); err != nil {
					yield(DumpRecord{}, fmt.Errorf("journal: %s: entry seq %d at offset %d: record at byte %d: %w", path, e.Seq, e.Offset, off, err))
					return
				}
				d := dumpRecord(&rec, n, e.Offset)
				d.Entry = k
				if !yield(d, nil) {
					return
				}
			}
		}
	}
}
