package engine

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/vfs"
)

// readManifest loads dir's manifest; os.ErrNotExist when there is none.
func readManifest(dir string) (*dbfile.Manifest, error) {
	return loadManifest(vfs.OS, dir, slog.New(slog.DiscardHandler))
}

// loadManifest is readManifest through fsys. A torn last edit is cut off
// the file (see repairManifest), keeping a copy of it under broken/ when
// there is room, and the cut is logged to log.
func loadManifest(fsys vfs.FS, dir string, log *slog.Logger) (*dbfile.Manifest, error) {
	path := filepath.Join(dir, dbfile.ManifestName)
	b, err := fsys.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, sound, err := dbfile.DecodeManifest(b, path)
	if err != nil {
		return nil, err
	}
	if sound < len(b) {
		if err := repairManifest(fsys, dir, b, sound, log); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// writeManifest replaces dir's manifest atomically and durably.
func writeManifest(fsys vfs.FS, dir string, m *dbfile.Manifest) error {
	b, err := dbfile.EncodeManifest(m)
	if err != nil {
		return fmt.Errorf("ebb: encode manifest: %w", err)
	}
	if err := writeFileAtomic(fsys, dir, dbfile.ManifestName, b); err != nil {
		return fmt.Errorf("ebb: write manifest: %w", err)
	}
	return nil
}

// writeFileAtomic writes name in dir through a temporary file, fsync and
// rename, then fsyncs dir. When it fails before the rename, name is as it
// was and the temporary file is removed. A failed fsync of dir after the
// rename leaves the new file in place but perhaps not durable: a crash may
// bring back either version, each whole.
func writeFileAtomic(fsys vfs.FS, dir, name string, b []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		fsys.Remove(tmp)
		return err
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}
