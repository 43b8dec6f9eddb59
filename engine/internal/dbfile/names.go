// Package dbfile is what the engine and its offline tools (package
// engine/tool) both know about the files of an ebb database directory:
// their names, the formats of the MANIFEST and the CLOCK file, the rule by
// which the index entries of a container's segment files combine into its
// newest versions, and how the directory's bytes are shared among the
// containers. The engine writes and repairs these files; the tools only
// read them, without opening the database.
package dbfile

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Names of the files and folders at the top of a database directory.
const (
	ManifestName = "MANIFEST" // the root: containers, segment files, replay start
	ClockName    = "CLOCK"    // the clock's high mark between MANIFEST writes
	LockName     = "LOCK"     // held by the one DB that has the directory open
	JournalDir   = "journal"  // tidwall/wal's files, with ebb's framing
	SegmentDir   = "seg"      // sealed segment files, NNNNNNNN.seg
	BrokenDir    = "broken"   // copies of damaged files that open repaired
)

// ErrNoDatabase is the engine's ErrNoDatabase (it documents it): a
// directory that holds no ebb database.
var ErrNoDatabase = errors.New("ebb: not an ebb database")

// SegmentFileName is the name of segment file num in the segment folder.
func SegmentFileName(num uint32) string { return fmt.Sprintf("%08d.seg", num) }

// SegmentRel is the path of segment file num relative to the database
// directory, with a forward slash, as reports name it.
func SegmentRel(num uint32) string { return SegmentDir + "/" + SegmentFileName(num) }

// SegmentFileNum parses the name of a segment file ebb wrote, NNNNNNNN.seg
// (eight or more decimal digits). Anything else is not ebb's.
func SegmentFileNum(name string) (uint32, bool) {
	digits, ok := strings.CutSuffix(name, ".seg")
	if !ok || len(digits) < 8 {
		return 0, false
	}
	for _, r := range digits {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(digits, 10, 32)
	if err != nil || SegmentFileName(uint32(n)) != name {
		return 0, false
	}
	return uint32(n), true
}
