package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/ebbdb/ebb/engine/vfs"
)

// Names of the files ebb keeps at the top of a database directory, besides
// the folders journalDir, segmentDir and brokenDir.
const lockName = "LOCK"

// ownNames are the entries ebb creates at the top of a database directory:
// what a directory may hold without a MANIFEST and still be taken for an
// interrupted creation of a database rather than someone else's files.
var ownNames = map[string]bool{
	lockName:              true,
	manifestName:          true,
	manifestName + ".tmp": true,
	clockName:             true,
	clockName + ".tmp":    true,
	journalDir:            true,
	segmentDir:            true,
	brokenDir:             true,
}

// checkOpenDir decides, before Open writes anything, whether dir may hold
// an ebb database: a path that does not exist yet, an empty directory, a
// directory with a MANIFEST, or one holding only names ebb creates (a
// creation cut short, or a database whose MANIFEST is lost, which recover
// reports). Anything else is refused with ErrNoDatabase, naming what was
// found, so that Open never takes over a directory of other files.
func checkOpenDir(fsys vfs.FS, dir string) error {
	if dir == "" {
		return fmt.Errorf("%w: Open needs a directory path, got an empty one", ErrNoDatabase)
	}
	fi, err := fsys.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("ebb: open %s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("%w: %s is not a directory", ErrNoDatabase, dir)
	}
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("ebb: open %s: %w", dir, err)
	}
	var foreign []string
	for _, e := range ents {
		if e.Name() == manifestName {
			return nil
		}
		if !ownNames[e.Name()] {
			foreign = append(foreign, e.Name())
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	shown := foreign
	if len(shown) > 3 {
		shown = shown[:3]
	}
	more := ""
	if len(foreign) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(foreign)-len(shown))
	}
	return fmt.Errorf("%w: %s is not empty and has no %s; it holds %s%s, which ebb did not create (give a new or empty directory)",
		ErrNoDatabase, dir, manifestName, strings.Join(quoteAll(shown), ", "), more)
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strconv.Quote(n)
	}
	return out
}

// segmentFileName is the name of segment file num in the segment folder.
func segmentFileName(num uint32) string { return fmt.Sprintf("%08d.seg", num) }

// segmentFileNum parses the name of a segment file ebb wrote, NNNNNNNN.seg
// (eight or more decimal digits). Anything else is not ebb's.
func segmentFileNum(name string) (uint32, bool) {
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
	if err != nil || segmentFileName(uint32(n)) != name {
		return 0, false
	}
	return uint32(n), true
}
