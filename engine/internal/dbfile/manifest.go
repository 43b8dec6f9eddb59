package dbfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sort"
	"strconv"

	"github.com/ebbdb/ebb/policy"
	"github.com/ebbdb/ebb/segment"
	"github.com/vmihailenco/msgpack/v5"
)

// The manifest is the root of a database directory: the containers with
// their policy history, the segment files that hold each one's sealed
// records, and where journal replay starts. The file is a snapshot of all
// that, followed by an edit log of the container changes made since
// (see ManifestEdit). The snapshot is rewritten whole, through a temporary
// file, fsync and rename, so a crash leaves either the old file or the new
// one; an edit is appended and fsynced.
//
//	+------------+---------+--------+--------+------------------+
//	| "EBBMANIF" | version | crc32c | length | msgpack manifest |
//	|  8 bytes   | u32 LE  | u32 LE | u32 LE |  length bytes    |
//	+------------+---------+--------+--------+------------------+
//
// The crc covers the msgpack body. Edits follow the body.
//
// Version 2 is version 1 with containers that have a partition key path,
// whose item keys are composites (package engine/internal/pkey). A snapshot
// is written as version 1 when no container has a key, so that builds from
// before partition keys still open such a database, and as version 2
// otherwise, so that they refuse it rather than take composite keys for
// ids. An edit that puts a keyed container after a version 1 snapshot is
// never appended: the engine rewrites the snapshot instead.
const (
	ManifestMagic   = "EBBMANIF"
	ManifestVersion = 2 // the newest version this build reads and writes
	ManifestHeader  = 8 + 4 + 4 + 4

	// ManifestVersionPlain is the version of a snapshot without keyed
	// containers.
	ManifestVersionPlain = 1
)

// Manifest is what a MANIFEST file holds, its edits applied.
type Manifest struct {
	NextFile      uint32          `msgpack:"next_file"`
	NextContainer uint32          `msgpack:"next_container"`
	JournalFrom   uint64          `msgpack:"journal_from"` // first journal seq not sealed into segments
	Clock         int64           `msgpack:"clock"`        // highest time persisted
	Containers    []ContainerMeta `msgpack:"containers"`
	// Version is the snapshot's version as read (DecodeManifest); not
	// stored in the body, and ignored by EncodeManifest, which writes
	// m.NeededVersion().
	Version uint32 `msgpack:"-"`
}

// NeededVersion is the version a snapshot of m is written as: 2 when a
// container has a partition key path, else 1.
func (m *Manifest) NeededVersion() uint32 {
	for i := range m.Containers {
		if m.Containers[i].PartitionKey != "" {
			return ManifestVersion
		}
	}
	return ManifestVersionPlain
}

// ContainerMeta is one container's entry in the MANIFEST.
type ContainerMeta struct {
	Num      uint32 `msgpack:"num"`
	ID       string `msgpack:"id"`
	Indexing uint8  `msgpack:"indexing"` // an engine.IndexingMode

	Included []string       `msgpack:"included,omitempty"` // ContainerProperties.IncludedPaths
	Excluded []string       `msgpack:"excluded,omitempty"` // ContainerProperties.ExcludedPaths
	History  []HistoryEntry `msgpack:"history"`
	Files    []uint32       `msgpack:"files"`
	// Hides lists, per file, the files that may hold older versions of its
	// ids (the engine's segFile.hides); files hiding nothing are absent.
	Hides map[uint32][]uint32 `msgpack:"hides,omitempty"`
	// FeedRetention is ContainerProperties.ChangeFeedRetention in
	// nanoseconds; absent (0) when off.
	FeedRetention int64 `msgpack:"feedRetention,omitempty"`
	// FeedSince is the first instant the change feed covers when retention
	// was turned on for a container that had it off (the versions before
	// were not kept); 0 when it was on from the container's creation.
	FeedSince int64 `msgpack:"feedSince,omitempty"`
	// FeedMarks records, for each DefaultTTL change the container's change
	// feed may still report, the instant it took effect and the journal
	// position (the next seq) at that moment; absent when none.
	FeedMarks []FeedMark `msgpack:"feedMarks,omitempty"`
	// PartitionKey is ContainerProperties.PartitionKeyPath; absent when
	// the container has none. Item keys of a container with one are
	// composites (package engine/internal/pkey).
	PartitionKey string `msgpack:"partitionKey,omitempty"`
}

// FeedMark is one entry of ContainerMeta.FeedMarks.
type FeedMark struct {
	At  int64  `msgpack:"at"`
	Seq uint64 `msgpack:"seq"`
}

// HistoryEntry is one entry of a container's policy history.
type HistoryEntry struct {
	At         int64  `msgpack:"at"`
	DefaultTTL *int32 `msgpack:"ttl"`
}

// ToHistory is the policy history that h records.
func ToHistory(h []HistoryEntry) policy.History {
	out := make(policy.History, len(h))
	for i, e := range h {
		out[i] = policy.Change{At: e.At, DefaultTTL: e.DefaultTTL}
	}
	return out
}

// FromHistory is h as the MANIFEST records it.
func FromHistory(h policy.History) []HistoryEntry {
	out := make([]HistoryEntry, len(h))
	for i, e := range h {
		out[i] = HistoryEntry{At: e.At, DefaultTTL: e.DefaultTTL}
	}
	return out
}

// DecodeManifest decodes a MANIFEST file's bytes b, read from path: the
// snapshot at the start of b, with the edits that follow it applied. It
// also returns the length of b's sound prefix: less than len(b) when the
// file ends in a torn last edit, which is left out. Damage is an error
// wrapping segment.ErrCorrupt (the engine's ErrCorrupt) that names path.
func DecodeManifest(b []byte, path string) (*Manifest, int, error) {
	if len(b) < ManifestHeader || string(b[:8]) != ManifestMagic {
		return nil, 0, fmt.Errorf("%s: not an ebb manifest (bad magic or short file): %w", path, segment.ErrCorrupt)
	}
	v := binary.LittleEndian.Uint32(b[8:])
	if v < ManifestVersionPlain || v > ManifestVersion {
		return nil, 0, fmt.Errorf("%s: manifest version %d, this build reads %d to %d: %w", path, v, ManifestVersionPlain, ManifestVersion, segment.ErrCorrupt)
	}
	sum := binary.LittleEndian.Uint32(b[12:])
	n := binary.LittleEndian.Uint32(b[16:])
	if uint64(n) > uint64(len(b)-ManifestHeader) {
		return nil, 0, fmt.Errorf("%s: manifest length %d, file holds %d: %w", path, n, len(b)-ManifestHeader, segment.ErrCorrupt)
	}
	body := b[ManifestHeader : ManifestHeader+int(n)]
	if crc32.Checksum(body, Castagnoli) != sum {
		return nil, 0, fmt.Errorf("%s: manifest checksum mismatch: %w", path, segment.ErrCorrupt)
	}
	if err := msgpackLengthsFit(body); err != nil {
		return nil, 0, fmt.Errorf("%s: decode manifest: %v: %w", path, err, segment.ErrCorrupt)
	}
	var m Manifest
	if err := msgpack.Unmarshal(body, &m); err != nil {
		return nil, 0, fmt.Errorf("%s: decode manifest: %v: %w", path, err, segment.ErrCorrupt)
	}
	m.Version = v
	snap := ManifestHeader + int(n)
	sound, err := applyEdits(&m, b[snap:], snap, path)
	if err != nil {
		return nil, 0, err
	}
	return &m, snap + sound, nil
}

// EncodeManifest encodes m as a MANIFEST snapshot without edits.
func EncodeManifest(m *Manifest) ([]byte, error) {
	body, err := msgpack.Marshal(m)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteString(ManifestMagic)
	binary.Write(&buf, binary.LittleEndian, m.NeededVersion())
	binary.Write(&buf, binary.LittleEndian, crc32.Checksum(body, Castagnoli))
	binary.Write(&buf, binary.LittleEndian, uint32(len(body)))
	buf.Write(body)
	return buf.Bytes(), nil
}

// Castagnoli is the crc32c table of the MANIFEST's and the CLOCK file's
// checksums.
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// The MANIFEST's edit log. A change to the containers appends one edit,
// the new state of the containers it touches and of the few counters
// outside the containers, rather than rewriting the whole file; the
// engine rewrites the snapshot once the edits outgrow it. Each edit is
// framed as
//
//	+--------+--------+----------------+
//	| crc32c | length | msgpack edit   |
//	| u32 LE | u32 LE | length bytes   |
//	+--------+--------+----------------+
//
// where the crc covers the length and the edit. Only the last edit can be
// torn by a crash (each one is fsynced before the change is acknowledged
// and before the next is written), so a frame that is cut off or fails its
// checksum, with no sound frame anywhere after it, is the unacknowledged
// last edit: DecodeManifest leaves it out of the sound prefix it reports,
// and Open cuts it. A bad frame followed by a sound one is damage to an
// acknowledged edit: ErrCorrupt.
const editHeader = 8

// ManifestEdit is one record of the edit log: the counters outside the
// containers as they are after the change, the containers it puts (whole,
// replacing any with the same number) and the numbers it deletes.
//
// JournalFrom 0 leaves the replay start as it was, and the edits of every
// change but a seal do: only a seal's edit, which lists the files of every
// container the seal wrote to, and a snapshot, which lists every
// container's files, move it. A seal sets the DB's journalFrom once its
// files are written but before the MANIFEST lists them; an edit of another
// change written in between that carried it would, after a crash, start
// replay past records that no listed file holds. (Edit logs written before
// carry a JournalFrom in every edit, and it is applied.)
type ManifestEdit struct {
	NextFile      uint32          `msgpack:"next_file"`
	NextContainer uint32          `msgpack:"next_container"`
	JournalFrom   uint64          `msgpack:"journal_from"`
	Clock         int64           `msgpack:"clock"`
	Put           []ContainerMeta `msgpack:"put,omitempty"`
	Del           []uint32        `msgpack:"del,omitempty"`
}

// AppendEdit appends e's frame to dst.
func AppendEdit(dst []byte, e *ManifestEdit) ([]byte, error) {
	body, err := msgpack.Marshal(e)
	if err != nil {
		return dst, err
	}
	return AppendFrame(dst, body), nil
}

// AppendFrame appends body framed as an edit to dst.
func AppendFrame(dst, body []byte) []byte {
	var h [editHeader]byte
	binary.LittleEndian.PutUint32(h[4:], uint32(len(body)))
	binary.LittleEndian.PutUint32(h[:4], crc32.Update(crc32.Checksum(h[4:], Castagnoli), Castagnoli, body))
	return append(append(dst, h[:]...), body...)
}

// applyEdits applies the edit log log (the bytes after the snapshot, which
// starts at file offset base) to m. It returns the length of the sound
// prefix of log: less than len(log) when the tail is a torn last edit.
func applyEdits(m *Manifest, log []byte, base int, path string) (int, error) {
	if len(log) == 0 {
		return 0, nil
	}
	pos := make(map[uint32]int, len(m.Containers))
	for i, cm := range m.Containers {
		pos[cm.Num] = i
	}
	gone := make(map[uint32]bool)
	p := 0
	for p < len(log) {
		rest := log[p:]
		end, ok := editFrame(rest)
		if !ok {
			if allZero(rest) {
				break // the file grew, but the last edit's bytes never came
			}
			// A bad frame is the torn last edit when no sound edit
			// follows it; otherwise an acknowledged edit was damaged.
			for q := 1; q < len(rest); q++ {
				if _, ok := editFrame(rest[q:]); ok {
					return 0, fmt.Errorf("%s: manifest edit at offset %d is damaged, and a sound edit follows at offset %d: %w",
						path, base+p, base+p+q, segment.ErrCorrupt)
				}
			}
			break
		}
		body := rest[editHeader:end]
		var e ManifestEdit
		err := msgpackLengthsFit(body)
		if err == nil {
			err = msgpack.Unmarshal(body, &e)
		}
		if err != nil {
			return 0, fmt.Errorf("%s: manifest edit at offset %d: %v: %w", path, base+p, err, segment.ErrCorrupt)
		}
		m.NextFile, m.NextContainer, m.Clock = e.NextFile, e.NextContainer, e.Clock
		if e.JournalFrom != 0 {
			m.JournalFrom = e.JournalFrom
		}
		for _, cm := range e.Put {
			if i, ok := pos[cm.Num]; ok {
				m.Containers[i] = cm
			} else {
				pos[cm.Num] = len(m.Containers)
				m.Containers = append(m.Containers, cm)
			}
			delete(gone, cm.Num)
		}
		for _, num := range e.Del {
			if _, ok := pos[num]; !ok || gone[num] {
				return 0, fmt.Errorf("%s: manifest edit at offset %d deletes container %d, which does not exist: %w",
					path, base+p, num, segment.ErrCorrupt)
			}
			gone[num] = true
		}
		p += end
	}
	if len(gone) > 0 {
		kept := m.Containers[:0]
		for _, cm := range m.Containers {
			if !gone[cm.Num] {
				kept = append(kept, cm)
			}
		}
		m.Containers = kept
	}
	if len(m.Containers) == 0 {
		m.Containers = nil
	}
	sort.SliceStable(m.Containers, func(i, j int) bool { return m.Containers[i].Num < m.Containers[j].Num })
	return p, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// editFrame reports whether b starts with a whole edit frame whose checksum
// holds, and its length.
func editFrame(b []byte) (int, bool) {
	if len(b) < editHeader {
		return 0, false
	}
	n := binary.LittleEndian.Uint32(b[4:])
	if uint64(n) > uint64(len(b)-editHeader) {
		return 0, false
	}
	end := editHeader + int(n)
	sum := crc32.Update(crc32.Checksum(b[4:8], Castagnoli), Castagnoli, b[editHeader:end])
	return end, sum == binary.LittleEndian.Uint32(b)
}

// The indexing modes a ContainerMeta records: the values of
// engine.IndexingMode.
const (
	IndexingConsistent uint8 = iota
	IndexingLazy
	IndexingNone
)

// IndexingName names indexing mode m as engine.IndexingMode's String does.
func IndexingName(m uint8) string {
	switch m {
	case IndexingConsistent:
		return "consistent"
	case IndexingLazy:
		return "lazy"
	case IndexingNone:
		return "none"
	}
	return "IndexingMode(" + strconv.Itoa(int(m)) + ")"
}
