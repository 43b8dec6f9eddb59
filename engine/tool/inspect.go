package tool

import (
	"fmt"
	"slices"
	"time"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/vfs"
	"github.com/ebbdb/ebb/policy"
	"github.com/ebbdb/ebb/segment"
)

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
	// DiskBytes is the size of every file under the directory: ebb's, any
	// orphan segment file, and files ebb did not write.
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
	// PartitionKeyPath is the container's partition key path ("/tenant"),
	// "" when it has none.
	PartitionKeyPath string `json:"partition_key_path,omitempty"`
	// History is the policy history: each DefaultTTL and when it started.
	// After more than a few changes the entries before the newest are
	// condensed into up to three that expire exactly the same items.
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
	// share of every other file under the directory (journal, MANIFEST,
	// CLOCK, LOCK, broken/, orphans, files ebb did not write), as engine.Stats
	// counts it: the containers' DiskBytes add up to DiskBytes above.
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
	// waiting for compaction (engine.Stats.ExpiredPending).
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
	// Hides lists the segment files that may hold older versions of this
	// file's ids, as the MANIFEST records them for the compactor (which
	// keeps a file's tombstones while a file it hides remains); absent when
	// it hides none.
	Hides []uint32 `json:"hides,omitempty"`
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
// It fails with engine.ErrNoDatabase when dir is not an ebb database, and with an
// error wrapping engine.ErrCorrupt when the MANIFEST is missing or damaged. Other
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

// report builds the Report at wall clock time wall.
func (s *snapshot) report(wall int64) *Report {
	m := s.man
	rep := &Report{
		Dir:           s.dir,
		Now:           s.now(wall),
		Clock:         max(m.Clock, s.clockFile.High),
		NextFile:      m.NextFile,
		NextContainer: m.NextContainer,
		JournalFrom:   m.JournalFrom,
		Containers:    []ContainerReport{},
		Orphans:       append([]string{}, s.orphans...),
		Notes:         []string{},
		Errors:        []string{},
	}
	if rep.Now-wall > dbfile.ClockWarnBehind {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the database's clock is %s ahead of the wall clock: its now goes on from there; ebb clock reset brings it back",
			time.Duration(rep.Now-wall)*time.Second))
	}
	if len(s.orphans) > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d file(s) in %s/ are not in the %s: a seal or compaction in progress, or left by a crash (removed at the next open)",
			len(s.orphans), dbfile.SegmentDir, dbfile.ManifestName))
	}
	s.reportJournalFiles(rep)
	rep.DiskBytes = dbfile.TreeSize(vfs.OS, s.dir)
	counted := make(map[uint32]bool, len(s.segs)) // in a container's DiskBytes
	for _, v := range s.segs {
		counted[v.num] = v.r != nil
	}
	shared := dbfile.SharedFileBytes(vfs.OS, s.dir, func(num uint32) bool { return counted[num] })

	known := make(map[uint32]bool, len(m.Containers))
	for ci, cm := range m.Containers {
		known[cm.Num] = true
		cr := s.reportContainer(rep, ci)
		cr.DiskBytes += dbfile.ShareOf(shared, len(m.Containers), ci)
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

// reportJournalFiles describes the journal files in rep.Journal, with their
// torn tails in rep.Notes and other damage in rep.Errors.
func (s *snapshot) reportJournalFiles(rep *Report) {
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
}

// judge tells, for one container, when its items expire and which records
// are live at now.
type judge struct {
	h      policy.History
	now    int64
	newest map[string]version // as snapshot.rebuild returns it
}

// expiry is when an item written at ts with its own ttl expires.
func (j *judge) expiry(ts int64, ttl int32) int64 {
	if len(j.h) == 0 {
		return policy.Never
	}
	return j.h.ExpiresAt(ts, ttl)
}

// live reports whether the record of id with seq, found at at, is the
// item's newest version and a put that has not expired.
func (j *judge) live(id string, seq uint64, at place) bool {
	v, ok := j.newest[id]
	return ok && v.seq == seq && v.where == at && v.op == segment.OpPut && !policy.Expired(j.expiry(v.ts, v.ttl), j.now)
}

// reportContainer describes container ci at rep.Now, adding the errors met
// to rep.Errors; its DiskBytes holds its segment files' size.
func (s *snapshot) reportContainer(rep *Report, ci int) ContainerReport {
	cm := &s.man.Containers[ci]
	j := &judge{h: dbfile.ToHistory(cm.History), now: rep.Now, newest: s.rebuild(ci)}
	cr := ContainerReport{
		ID:               cm.ID,
		Num:              cm.Num,
		DefaultTTL:       j.h.Current(),
		Indexing:         dbfile.IndexingName(cm.Indexing),
		PartitionKeyPath: cm.PartitionKey,
		History:          []PolicyChange{},
		Segments:         []SegmentReport{},
	}
	for _, c := range j.h {
		cr.History = append(cr.History, PolicyChange{At: c.At, DefaultTTL: c.DefaultTTL})
	}
	for _, v := range j.newest {
		if v.op != segment.OpPut {
			cr.Items.Tombstones++
			continue
		}
		cr.TS = cr.TS.add(v.ts)
		exp := j.expiry(v.ts, v.ttl)
		if exp != policy.Never {
			cr.Expiry = cr.Expiry.add(exp)
		}
		if policy.Expired(exp, j.now) {
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
		sr := s.reportSegment(rep, v, j)
		cr.DiskBytes += sr.Bytes
		all.Records += sr.Records
		all.RawBytes += sr.RawBytes
		all.DeadBytes += sr.DeadBytes
		cr.Segments = append(cr.Segments, sr)
	}
	for _, f := range s.journal {
		for i := range f.recs {
			r := &f.recs[i]
			if r.rec.Container == cm.Num {
				cr.Journal.count(r.size, j.live(r.rec.ID, r.rec.Seq, place{jrec: r}))
			}
		}
	}
	cr.Journal.finish()
	cr.DeadBytes = all.DeadBytes + cr.Journal.DeadBytes
	cr.DeadShare = share(cr.DeadBytes, all.RawBytes+cr.Journal.RawBytes)
	return cr
}

// reportSegment describes segment file v, adding why it could not be read,
// if it could not, to rep.Errors.
func (s *snapshot) reportSegment(rep *Report, v *segView, j *judge) SegmentReport {
	cm := &s.man.Containers[v.cont]
	sr := SegmentReport{File: v.rel, Num: v.num}
	if h := cm.Hides[v.num]; len(h) > 0 {
		sr.Hides = slices.Sorted(slices.Values(h))
	}
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
	}
	for _, e := range v.index {
		sr.count(int64(e.Size), j.live(e.ID, e.Seq, place{seg: v}))
		if e.Op == segment.OpPut {
			if exp := j.expiry(e.TS, e.TTL); exp != policy.Never {
				sr.Expiry = sr.Expiry.add(exp)
			}
		}
	}
	sr.finish()
	return sr
}
