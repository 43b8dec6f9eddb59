package engine

import (
	"fmt"
	"log/slog"
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
	if err := vfs.WriteFileAtomic(fsys, dir, dbfile.ManifestName, b); err != nil {
		return fmt.Errorf("ebb: write manifest: %w", err)
	}
	return nil
}
