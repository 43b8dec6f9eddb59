package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/ebbdb/ebb/engine/vfs"
	"github.com/ebbdb/ebb/policy"
	"github.com/vmihailenco/msgpack/v5"
)

// The manifest is the root of a database directory: the containers with
// their policy history, the segment files that hold each one's sealed
// records, and where journal replay starts. The file is a snapshot of all
// that, followed by an edit log of the container changes made since
// (manifest_log.go). The snapshot is rewritten whole, through a temporary
// file, fsync and rename, so a crash leaves either the old file or the new
// one; an edit is appended and fsynced.
//
//	+----------+---------+--------+--------+------------------+
//	| "EBBMANI" | version | crc32c | length | msgpack manifest |
//	|  8 bytes  | u32 LE  | u32 LE | u32 LE |  length bytes    |
//	+----------+---------+--------+--------+------------------+
//
// The crc covers the msgpack body. Edits follow the body.
const (
	manifestName    = "MANIFEST"
	manifestMagic   = "EBBMANIF"
	manifestVersion = 1
	manifestHeader  = 8 + 4 + 4 + 4
)

type manifest struct {
	NextFile      uint32          `msgpack:"next_file"`
	NextContainer uint32          `msgpack:"next_container"`
	JournalFrom   uint64          `msgpack:"journal_from"` // first journal seq not sealed into segments
	Clock         int64           `msgpack:"clock"`        // highest time persisted
	Containers    []containerMeta `msgpack:"containers"`
}

type containerMeta struct {
	Num      uint32         `msgpack:"num"`
	ID       string         `msgpack:"id"`
	Indexing IndexingMode   `msgpack:"indexing"`
	Included []string       `msgpack:"included,omitempty"` // ContainerProperties.IncludedPaths
	Excluded []string       `msgpack:"excluded,omitempty"` // ContainerProperties.ExcludedPaths
	History  []historyEntry `msgpack:"history"`
	Files    []uint32       `msgpack:"files"`
	// Hides lists, per file, the files that may hold older versions of its
	// ids (see segFile.hides); files hiding nothing are absent.
	Hides map[uint32][]uint32 `msgpack:"hides,omitempty"`
}

type historyEntry struct {
	At         int64  `msgpack:"at"`
	DefaultTTL *int32 `msgpack:"ttl"`
}

func toHistory(h []historyEntry) policy.History {
	out := make(policy.History, len(h))
	for i, e := range h {
		out[i] = policy.Change{At: e.At, DefaultTTL: e.DefaultTTL}
	}
	return out
}

func fromHistory(h policy.History) []historyEntry {
	out := make([]historyEntry, len(h))
	for i, e := range h {
		out[i] = historyEntry{At: e.At, DefaultTTL: e.DefaultTTL}
	}
	return out
}

// readManifest loads dir's manifest; os.ErrNotExist when there is none.
func readManifest(dir string) (*manifest, error) {
	return loadManifest(vfs.OS, dir, slog.New(slog.DiscardHandler))
}

// loadManifest is readManifest through fsys. A torn last edit is cut off
// the file (see repairManifest), keeping a copy of it under broken/ when
// there is room, and the cut is logged to log.
func loadManifest(fsys vfs.FS, dir string, log *slog.Logger) (*manifest, error) {
	path := filepath.Join(dir, manifestName)
	b, err := fsys.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, sound, err := decodeManifestLog(b, path)
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

// decodeManifest decodes a MANIFEST file's bytes, snapshot and edits, as
// Open would read them: a torn last edit is left out.
func decodeManifest(b []byte, path string) (*manifest, error) {
	m, _, err := decodeManifestLog(b, path)
	return m, err
}

// decodeManifestLog decodes the snapshot at the start of b and applies the
// edits that follow it. It also returns the length of b's sound prefix:
// less than len(b) when the file ends in a torn edit.
func decodeManifestLog(b []byte, path string) (*manifest, int, error) {
	if len(b) < manifestHeader || string(b[:8]) != manifestMagic {
		return nil, 0, fmt.Errorf("%s: not an ebb manifest (bad magic or short file): %w", path, ErrCorrupt)
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != manifestVersion {
		return nil, 0, fmt.Errorf("%s: manifest version %d, this build reads %d: %w", path, v, manifestVersion, ErrCorrupt)
	}
	sum := binary.LittleEndian.Uint32(b[12:])
	n := binary.LittleEndian.Uint32(b[16:])
	if uint64(n) > uint64(len(b)-manifestHeader) {
		return nil, 0, fmt.Errorf("%s: manifest length %d, file holds %d: %w", path, n, len(b)-manifestHeader, ErrCorrupt)
	}
	body := b[manifestHeader : manifestHeader+int(n)]
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, 0, fmt.Errorf("%s: manifest checksum mismatch: %w", path, ErrCorrupt)
	}
	if err := msgpackLengthsFit(body); err != nil {
		return nil, 0, fmt.Errorf("%s: decode manifest: %v: %w", path, err, ErrCorrupt)
	}
	var m manifest
	if err := msgpack.Unmarshal(body, &m); err != nil {
		return nil, 0, fmt.Errorf("%s: decode manifest: %v: %w", path, err, ErrCorrupt)
	}
	snap := manifestHeader + int(n)
	sound, err := applyEdits(&m, b[snap:], snap, path)
	if err != nil {
		return nil, 0, err
	}
	return &m, snap + sound, nil
}

func encodeManifest(m *manifest) ([]byte, error) {
	body, err := msgpack.Marshal(m)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteString(manifestMagic)
	binary.Write(&buf, binary.LittleEndian, uint32(manifestVersion))
	binary.Write(&buf, binary.LittleEndian, crc32.Checksum(body, castagnoli))
	binary.Write(&buf, binary.LittleEndian, uint32(len(body)))
	buf.Write(body)
	return buf.Bytes(), nil
}

// writeManifest replaces dir's manifest atomically and durably.
func writeManifest(fsys vfs.FS, dir string, m *manifest) error {
	b, err := encodeManifest(m)
	if err != nil {
		return fmt.Errorf("ebb: encode manifest: %w", err)
	}
	if err := writeFileAtomic(fsys, dir, manifestName, b); err != nil {
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

var castagnoli = crc32.MakeTable(crc32.Castagnoli)
