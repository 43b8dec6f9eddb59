package tool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/internal/docfmt"
	"github.com/ebbdb/ebb/engine/internal/pkey"
	"github.com/ebbdb/ebb/engine/journal"
	"github.com/ebbdb/ebb/engine/vfs"
	"github.com/ebbdb/ebb/segment"
)

// VerifyReport is what Verify found. Its JSON form is stable.
type VerifyReport struct {
	// Dir is the directory as given.
	Dir string `json:"dir"`
	// Checked counts what was read and checked.
	Checked VerifyCounts `json:"checked"`
	// Problems is the damage found, in the order it was found. The
	// database is sound when there is none.
	Problems []Problem `json:"problems"`
	// Notes are findings that are not damage: a torn tail of the journal's
	// last file (repaired on open), files the next open removes, copies
	// kept by earlier repairs.
	Notes []string `json:"notes"`
}

// VerifyCounts count what Verify checked.
type VerifyCounts struct {
	Containers     int   `json:"containers"`
	Segments       int   `json:"segments"`
	SegmentRecords int64 `json:"segment_records"`
	JournalFiles   int   `json:"journal_files"`
	JournalEntries int64 `json:"journal_entries"`
	JournalRecords int64 `json:"journal_records"`
	// Items is the number of items (live or expired) the index rebuild
	// found, over all containers.
	Items int64 `json:"items"`
}

// Problem is one piece of damage: what is wrong and where.
type Problem struct {
	// File is the path relative to the database directory.
	File string `json:"file"`
	// Offset is the byte offset in File where the damage is, or -1 when
	// it is not known or the problem is not at one place.
	Offset int64 `json:"offset"`
	// Record names the record, entry or part of the file concerned, or is
	// "" when the problem is with the file as a whole.
	Record string `json:"record"`
	// What says what is wrong.
	What string `json:"what"`
}

// String formats p as "file@offset record: what".
func (p Problem) String() string {
	s := p.File
	if p.Offset >= 0 {
		s += "@" + strconv.FormatInt(p.Offset, 10)
	}
	if p.Record != "" {
		s += " " + p.Record
	}
	return s + ": " + p.What
}

// Clean reports whether Verify found no damage.
func (r *VerifyReport) Clean() bool { return len(r.Problems) == 0 }

// Verify checks the database in dir without opening it: the MANIFEST, the
// CLOCK file, every segment file (every block's checksum, every record, the
// index block against the records, the footer's statistics), every journal
// file (every entry's checksum, every record, the sequence of seqs across
// files), that every stored body decodes as queries decode it, and that
// recovery's index rebuild would succeed: the MANIFEST,
// the segment files and the journal agree. It takes no lock and writes
// nothing, so it may run while another process has the database open; a
// torn tail of the journal's last file is then a write in progress and is
// reported as a note, as it is after a crash (the next open repairs it).
//
// The error is engine.ErrNoDatabase when dir is not an ebb database, or a failure
// to read the directory; damage is reported in VerifyReport.Problems.
func Verify(dir string) (*VerifyReport, error) {
	s, err := takeSnapshot(dir)
	if err != nil {
		return nil, err
	}
	defer s.close()
	v := &verifier{s: s, rep: &VerifyReport{Dir: dir, Problems: []Problem{}, Notes: []string{}}}
	v.manifest()
	v.clock()
	v.segments()
	v.journal()
	v.rebuild()
	v.journalBodies()
	v.extras()
	return v.rep, nil
}

type verifier struct {
	s   *snapshot
	rep *VerifyReport
}

func (v *verifier) problem(file string, offset int64, record, format string, args ...any) {
	v.rep.Problems = append(v.rep.Problems, Problem{File: file, Offset: offset, Record: record, What: fmt.Sprintf(format, args...)})
}

func (v *verifier) note(format string, args ...any) {
	v.rep.Notes = append(v.rep.Notes, fmt.Sprintf(format, args...))
}

// manifest checks the MANIFEST and what it says.
func (v *verifier) manifest() {
	s := v.s
	if s.man == nil {
		what := strings.TrimSuffix(strings.TrimPrefix(s.manErr.Error(), "ebb: "), ": "+segment.ErrCorrupt.Error())
		what = strings.TrimPrefix(strings.TrimPrefix(what, filepath.Join(s.dir, dbfile.ManifestName)+": "), s.dir+": ")
		v.problem(dbfile.ManifestName, -1, "", "%s", what)
		return
	}
	m := s.man
	v.rep.Checked.Containers = len(m.Containers)
	if m.JournalFrom == 0 {
		v.problem(dbfile.ManifestName, -1, "", "journal_from is 0; journal seqs start at 1")
	}
	ids := make(map[string]bool)
	nums := make(map[uint32]bool)
	owner := make(map[uint32]string)
	for _, cm := range m.Containers {
		what := fmt.Sprintf("container %q", cm.ID)
		if err := docfmt.ValidateID(cm.ID); err != nil {
			v.problem(dbfile.ManifestName, -1, what, "invalid id: %v", err)
		}
		if ids[cm.ID] {
			v.problem(dbfile.ManifestName, -1, what, "id used by two containers")
		}
		ids[cm.ID] = true
		if nums[cm.Num] {
			v.problem(dbfile.ManifestName, -1, what, "number %d used by two containers", cm.Num)
		}
		nums[cm.Num] = true
		if cm.Num >= m.NextContainer {
			v.problem(dbfile.ManifestName, -1, what, "number %d is not below next_container %d", cm.Num, m.NextContainer)
		}
		if cm.Indexing > dbfile.IndexingNone {
			v.problem(dbfile.ManifestName, -1, what, "unknown indexing mode %d", cm.Indexing)
		}
		h := dbfile.ToHistory(cm.History)
		if len(h) == 0 {
			v.problem(dbfile.ManifestName, -1, what, "no policy history (open refuses)")
		} else if err := h.Validate(); err != nil {
			v.problem(dbfile.ManifestName, -1, what, "policy history: %v", err)
		}
		for _, n := range cm.Files {
			if o, ok := owner[n]; ok {
				v.problem(dbfile.ManifestName, -1, what, "segment file %d is also named by container %q", n, o)
			}
			owner[n] = cm.ID
			if n >= m.NextFile {
				v.problem(dbfile.ManifestName, -1, what, "segment file %d is not below next_file %d", n, m.NextFile)
			}
		}
	}
}

// clock checks the CLOCK file, if there is one.
func (v *verifier) clock() {
	b, err := readSmallFile(filepath.Join(v.s.dir, dbfile.ClockName), 64)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		v.problem(dbfile.ClockName, -1, "", "%v", err)
	case len(b) != 12 && len(b) != 20:
		v.problem(dbfile.ClockName, 0, "", "%d bytes, want 12, or 20 after a clock reset (the clock floor falls back to the %s)", len(b), dbfile.ManifestName)
	case crc32.Checksum(b[:len(b)-4], dbfile.Castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]):
		v.problem(dbfile.ClockName, int64(len(b)-4), "", "checksum mismatch (the clock floor falls back to the %s)", dbfile.ManifestName)
	}
}

// segments checks every segment file the MANIFEST names, or, without a
// MANIFEST, every file in seg/.
func (v *verifier) segments() {
	s := v.s
	if s.man == nil {
		for _, rel := range s.orphans {
			path := filepath.Join(s.dir, rel)
			err := regularFile(path)
			var r *segment.Reader
			if err == nil {
				r, err = segment.Open(path, segment.ReaderOptions{})
			}
			if err == nil {
				err = r.Verify()
				v.rep.Checked.Segments++
				v.rep.Checked.SegmentRecords += r.Stats().Records
				r.Close()
			}
			if err != nil {
				v.segmentProblem(rel, err)
			}
		}
		return
	}
	for _, sv := range s.segs {
		cm := s.man.Containers[sv.cont]
		switch {
		case sv.missing:
			v.problem(sv.rel, -1, "", "missing: the %s names it for container %q", dbfile.ManifestName, cm.ID)
			continue
		case sv.err != nil:
			v.segmentProblem(sv.rel, sv.err)
			continue
		}
		v.rep.Checked.Segments++
		st := sv.r.Stats()
		v.rep.Checked.SegmentRecords += st.Records
		if st.Container != cm.Num {
			v.problem(sv.rel, st.FileBytes-128, "", "footer says container %d, the %s names it for container %q (%d)", st.Container, dbfile.ManifestName, cm.ID, cm.Num)
		}
		if err := sv.r.VerifyEach(v.bodyCheck(sv.rel)); err != nil {
			v.segmentProblem(sv.rel, err)
			sv.index = nil // not to be trusted for the rebuild
		}
	}
}

// segmentProblem records err, met reading segment file rel, with where
// it is: a *segment.CorruptError says where the damage is.
func (v *verifier) segmentProblem(rel string, err error) {
	var ce *segment.CorruptError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		v.problem(rel, -1, "", "missing")
	case errors.As(err, &ce):
		v.problem(rel, ce.Offset, ce.Where(), "%s", ce.Reason)
	default: // not damage: the file could not be read
		v.problem(rel, -1, "", "%s", strings.TrimPrefix(err.Error(), "segment "+filepath.Join(v.s.dir, rel)+": "))
	}
}

// journal checks every journal file, the seqs across files, and that
// replay can start where the MANIFEST says.
func (v *verifier) journal() {
	s := v.s
	var next uint64                    // seq the next file must start with; 0 before the first
	keyedNums := make(map[uint32]bool) // container number → has a partition key
	if s.man != nil {
		for _, cm := range s.man.Containers {
			keyedNums[cm.Num] = cm.PartitionKey != ""
		}
	}
	for i, f := range s.journal {
		v.rep.Checked.JournalFiles++
		v.rep.Checked.JournalEntries += f.entries
		v.rep.Checked.JournalRecords += int64(len(f.recs))
		if next != 0 && f.first != next {
			if f.first > next {
				v.problem(f.rel, -1, "", "starts at seq %d, but the previous file ends at seq %d: entries %d..%d are missing", f.first, next-1, next, f.first-1)
				// The previous file ended early (cut short, or a file after it
				// is gone): name it too, where its entries stop.
				prev := s.journal[i-1]
				v.problem(prev.rel, prev.size, fmt.Sprintf("entry seq %d", next), "ends after entry seq %d, but the next file starts at seq %d: the file was cut short or a file after it is missing", next-1, f.first)
			} else {
				v.problem(f.rel, -1, "", "starts at seq %d, inside the previous file, which ends at seq %d", f.first, next-1)
			}
		}
		next = f.first + uint64(f.entries)
		if f.err != nil && !f.torn {
			next = 0 // where it ends is unknown
		}
		var ce *journal.CorruptError
		switch {
		case f.missing:
			v.problem(f.rel, -1, "", "missing")
		case f.torn:
			errors.As(f.err, &ce)
			v.note("%s: torn tail at offset %d, entry seq %d (would be repaired on open): %s", f.rel, ce.Offset, ce.Seq, ce.Reason)
		case errors.As(f.err, &ce):
			what := ce.Reason
			if ce.Torn && i < len(s.journal)-1 {
				what += "; not the last file, so not a torn write"
			}
			v.problem(f.rel, ce.Offset, fmt.Sprintf("entry seq %d", ce.Seq), "%s", what)
		case f.err != nil:
			v.problem(f.rel, -1, "", "%v", f.err)
		}
		if s.man == nil {
			continue
		}
		for j := range f.recs {
			r := &f.recs[j]
			where := fmt.Sprintf("entry seq %d record %d (%s %q)", r.seq, r.index, r.rec.Op, r.rec.ID)
			if keyed, ok := keyedNums[r.rec.Container]; ok {
				if err := pkey.CheckItemKey(r.rec.ID, keyed); err != nil {
					v.problem(f.rel, r.offset, where, "%v", err)
				}
			}
			if r.rec.Seq != r.seq {
				v.problem(f.rel, r.offset, where, "record carries seq %d", r.rec.Seq)
			}
			if r.rec.Container >= s.man.NextContainer {
				v.problem(f.rel, r.offset, where, "container %d was never created (next_container is %d)", r.rec.Container, s.man.NextContainer)
			}
		}
	}
	if s.man == nil {
		return
	}
	from := s.man.JournalFrom
	var first, last uint64
	if n := len(s.journal); n > 0 {
		first, last = s.journal[0].first, s.journal[n-1].first+uint64(s.journal[n-1].entries)-1
		if s.journal[n-1].entries == 0 {
			last = s.journal[n-1].first - 1
		}
	}
	switch {
	case last == 0 && from > 1:
		v.problem(dbfile.JournalDir, -1, "", "the journal is empty, but the %s says entries up to seq %d were written", dbfile.ManifestName, from-1)
	case last == 0:
	case from < first:
		v.problem(dbfile.JournalDir, -1, "", "the journal starts at seq %d, but replay must start at seq %d (the %s's journal_from): entries are missing", first, from, dbfile.ManifestName)
	case from > last+1:
		v.problem(dbfile.JournalDir, -1, "", "the journal ends at seq %d, but the %s says %d were sealed", last, dbfile.ManifestName, from-1)
	}
}

// rebuild does what recovery does to build the index, and checks that the
// files agree.
func (v *verifier) rebuild() {
	s := v.s
	if s.man == nil {
		return
	}
	for ci := range s.man.Containers {
		keyed := s.man.Containers[ci].PartitionKey != ""
		seen := make(map[string]*segView) // id and seq → the file holding it
		for _, sv := range s.segs {
			if sv.cont != ci {
				continue
			}
			for n, e := range sv.index {
				if err := pkey.CheckItemKey(e.ID, keyed); err != nil {
					v.problem(sv.rel, -1, fmt.Sprintf("index entry %d (%s seq %d)", n, e.Op, e.Seq), "%v", err)
				}
				key := e.ID + "\x00" + strconv.FormatUint(e.Seq, 10)
				if other, ok := seen[key]; ok && other != sv {
					v.problem(sv.rel, -1, fmt.Sprintf("index entry %d (%s %q seq %d)", n, e.Op, e.ID, e.Seq),
						"the same version is also in %s: the %s names both a compaction's input and its output", other.rel, dbfile.ManifestName)
				}
				seen[key] = sv
			}
		}
		for _, ver := range s.rebuild(ci) {
			if ver.op == segment.OpPut {
				v.rep.Checked.Items++
			}
		}
	}
}

// extras notes what the next open would clean up.
func (v *verifier) extras() {
	s := v.s
	if s.man != nil && len(s.orphans) > 0 {
		v.note("%d file(s) in %s/ are not in the %s, not checked: a seal or compaction in progress, or left by a crash (removed at the next open)", len(s.orphans), dbfile.SegmentDir, dbfile.ManifestName)
	}
	if ents, err := vfs.OS.ReadDir(filepath.Join(s.dir, dbfile.BrokenDir)); err == nil && len(ents) > 0 {
		v.note("%s/ keeps %d copy(ies) of journal files cut by earlier repairs", dbfile.BrokenDir, len(ents))
	}
}
