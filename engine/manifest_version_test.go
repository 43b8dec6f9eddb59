package engine

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
)

// manifestVersion is the version in the header of dir's MANIFEST.
func manifestVersion(t *testing.T, dir string) uint32 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, dbfile.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < dbfile.ManifestHeader {
		t.Fatalf("MANIFEST of %d bytes", len(b))
	}
	return binary.LittleEndian.Uint32(b[8:])
}

// TestManifestVersionFollowsPartitionKeys: a database without keyed
// containers keeps MANIFEST version 1, which builds from before partition
// keys read; the first keyed container rewrites the snapshot as version 2
// at once (an edit appended to a version 1 snapshot would be read by those
// builds, which would take composite item keys for ids); once no keyed
// container is left, the next snapshot is version 1 again. Every state
// opens in this build.
func TestManifestVersionFollowsPartitionKeys(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, newFakeClock(t0))
	mustCreateContainer(t, db, ContainerProperties{ID: "plain"})
	if v := manifestVersion(t, dir); v != dbfile.ManifestVersionPlain {
		t.Fatalf("plain containers only: MANIFEST version %d, want %d", v, dbfile.ManifestVersionPlain)
	}
	rewrites := db.man.log.rewrites
	c := mustCreateContainer(t, db, ContainerProperties{ID: "keyed", PartitionKeyPath: "/pk"})
	if v := manifestVersion(t, dir); v != dbfile.ManifestVersion {
		t.Fatalf("after a keyed container: MANIFEST version %d, want %d", v, dbfile.ManifestVersion)
	}
	if db.man.log.rewrites != rewrites+1 {
		t.Fatalf("creating the keyed container wrote %d snapshots, want 1", db.man.log.rewrites-rewrites)
	}
	if _, err := c.Upsert(t.Context(), []byte(`{"id":"a","pk":"x"}`)); err != nil {
		t.Fatal(err)
	}
	// Later changes are edits again: the snapshot is version 2 already.
	rewrites = db.man.log.rewrites
	mustCreateContainer(t, db, ContainerProperties{ID: "keyed2", PartitionKeyPath: "/pk"})
	if db.man.log.rewrites != rewrites {
		t.Fatalf("a second keyed container rewrote the snapshot; an edit was enough")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openTest(t, dir, newFakeClock(t0))
	c, err := db.Container("keyed")
	if err != nil {
		t.Fatal(err)
	}
	if it, err := c.Partition(StringKey("x")).Read(t.Context(), "a"); err != nil || it.ID != "a" {
		t.Fatalf("keyed item after reopen: %+v, %v", it, err)
	}
	for _, id := range []string{"keyed", "keyed2"} {
		if err := db.DeleteContainer(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil { // Close writes a snapshot
		t.Fatal(err)
	}
	if v := manifestVersion(t, dir); v != dbfile.ManifestVersionPlain {
		t.Fatalf("no keyed container left: MANIFEST version %d, want %d", v, dbfile.ManifestVersionPlain)
	}
	db = openTest(t, dir, newFakeClock(t0))
	if _, err := db.Container("plain"); err != nil {
		t.Fatal(err)
	}
	db.Close()
}
