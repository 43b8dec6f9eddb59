package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// SyncDir fsyncs the folder dir through fsys, making the creation, renaming
// and removal of its entries durable (tidwall/wal never does it for the
// journal's files). The error names the folder.
func SyncDir(fsys FS, dir string) error {
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("fsync folder %s: %w", dir, err)
	}
	return nil
}

// WriteFileAtomic replaces name in dir with data, atomically and durably:
// it writes name+".tmp" in dir, fsyncs it, renames it over name, and then
// fsyncs dir. When it fails before the rename, name is as it was and the
// temporary file is removed. A failed fsync of dir after the rename leaves
// the new file in place but perhaps not durable: a crash may bring back
// either version, each whole.
func WriteFileAtomic(fsys FS, dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	err = writeSyncClose(f, data)
	if err == nil {
		err = fsys.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		fsys.Remove(tmp) //nolint:errcheck // best effort: the error that matters is err
		return err
	}
	return SyncDir(fsys, dir)
}

// writeSyncClose writes data to f, fsyncs and closes it, and returns the
// first error; f is closed either way.
func writeSyncClose(f File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// WalkDir walks the tree rooted at root through fsys, as filepath.WalkDir
// does through package os: fn is called for root and for every entry below
// it, folders before their entries and entries in lexical order (the order
// of fsys.ReadDir); fs.SkipDir from fn skips a folder (or the rest of the
// entry's folder, for a file), fs.SkipAll ends the walk. An error reading
// a folder is passed to a second call of fn for that folder. Symbolic links
// are not followed.
func WalkDir(fsys FS, root string, fn fs.WalkDirFunc) error {
	info, err := fsys.Stat(root)
	if err != nil {
		err = fn(root, nil, err)
	} else {
		err = walkDir(fsys, root, fs.FileInfoToDirEntry(info), fn)
	}
	if errors.Is(err, fs.SkipDir) || errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

func walkDir(fsys FS, path string, d fs.DirEntry, fn fs.WalkDirFunc) error {
	if err := fn(path, d, nil); err != nil || !d.IsDir() {
		if err == fs.SkipDir && d.IsDir() {
			err = nil // the folder is skipped
		}
		return err
	}
	ents, err := fsys.ReadDir(path)
	if err != nil {
		// Second call, to report the failed listing.
		if err = fn(path, d, err); err != nil {
			if err == fs.SkipDir && d.IsDir() {
				err = nil
			}
			return err
		}
	}
	for _, e := range ents {
		if err := walkDir(fsys, filepath.Join(path, e.Name()), e, fn); err != nil {
			if err == fs.SkipDir {
				break // the rest of this folder is skipped
			}
			return err
		}
	}
	return nil
}
