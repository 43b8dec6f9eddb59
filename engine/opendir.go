package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/vfs"
)

// ownNames are the entries ebb creates at the top of a database directory:
// what a directory may hold without a MANIFEST and still be taken for an
// interrupted creation of a database rather than someone else's files.
var ownNames = map[string]bool{
	dbfile.LockName:              true,
	dbfile.ManifestName:          true,
	dbfile.ManifestName + ".tmp": true,
	dbfile.ClockName:             true,
	dbfile.ClockName + ".tmp":    true,
	dbfile.JournalDir:            true,
	dbfile.SegmentDir:            true,
	dbfile.BrokenDir:             true,
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
		if e.Name() == dbfile.ManifestName {
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
		ErrNoDatabase, dir, dbfile.ManifestName, strings.Join(quoteAll(shown), ", "), more)
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strconv.Quote(n)
	}
	return out
}
