package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/vfs"
)

// mdEdits are the metadata changes of the edit-log fixture, in order, with
// the containers (and a's DefaultTTL) a database holds after each.
var mdEdits = []struct {
	what string
	do   func(ctx context.Context, db *DB) error
	ids  []string
	aTTL int32 // 0: off
}{
	{"snapshot", nil, []string{"a", "b"}, 0},
	{"create e1", func(ctx context.Context, db *DB) error {
		c, err := db.CreateContainer(ctx, ContainerProperties{ID: "e1"})
		if err == nil {
			_, err = c.Upsert(ctx, []byte(`{"id":"x"}`))
		}
		return err
	}, []string{"a", "b", "e1"}, 0},
	{"a's DefaultTTL", func(ctx context.Context, db *DB) error {
		c, _ := db.Container("a")
		return c.SetProperties(ctx, ContainerProperties{ID: "a", DefaultTTL: TTL(1 << 20)})
	}, []string{"a", "b", "e1"}, 1 << 20},
	{"create e2", func(ctx context.Context, db *DB) error {
		_, err := db.CreateContainer(ctx, ContainerProperties{ID: "e2", Indexing: IndexingNone})
		return err
	}, []string{"a", "b", "e1", "e2"}, 1 << 20},
	{"delete b", func(ctx context.Context, db *DB) error { return db.DeleteContainer(ctx, "b") },
		[]string{"a", "e1", "e2"}, 1 << 20},
	{"create e3", func(ctx context.Context, db *DB) error {
		_, err := db.CreateContainer(ctx, ContainerProperties{ID: "e3"})
		return err
	}, []string{"a", "e1", "e2", "e3"}, 1 << 20},
}

// mdBuild writes a database whose MANIFEST is a snapshot followed by the
// edits of mdEdits, copied while the database is open (as a crash would
// leave it), and returns its directory and the offsets at which the edits
// start, plus the file's end.
func mdBuild(t *testing.T) (string, []int) {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "pristine")
	db, err := Open(dir, dmgOptions(CompressionZstd))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		c := mustCreateContainer(t, db, ContainerProperties{ID: id})
		for i := range 5 {
			if _, err := c.Upsert(ctx, []byte(fmt.Sprintf(`{"id":"%s%d"}`, id, i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil { // the MANIFEST is one snapshot
		t.Fatal(err)
	}
	if db, err = Open(dir, dmgOptions(CompressionZstd)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, dbfile.ManifestName)
	var offs []int
	for _, e := range mdEdits[1:] {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, int(st.Size()))
		if err := e.do(ctx, db); err != nil {
			t.Fatalf("%s: %v", e.what, err)
		}
	}
	st, _ := os.Stat(path)
	offs = append(offs, int(st.Size()))
	out := dmgCopy(t, dir, filepath.Join(t.TempDir(), "withedits"))
	db.Close()
	for i := 1; i < len(offs); i++ {
		if offs[i] <= offs[i-1] {
			t.Fatalf("edit %q did not append to the MANIFEST (offsets %v)", mdEdits[i].what, offs)
		}
	}
	return out, offs
}

// mdCheck opens dir and requires the state after the first k edits.
func mdCheck(t *testing.T, dir string, k int, what string) {
	t.Helper()
	db, err := dmgOpen(t, dir, CompressionZstd)
	if err != nil {
		t.Fatalf("%s: Open = %v, want the state after %q", what, err, mdEdits[k].what)
	}
	defer db.Close()
	want := mdEdits[k]
	if got := db.Containers(); !slices.Equal(got, want.ids) {
		t.Fatalf("%s: containers %v, want %v (the state after %q)", what, got, want.ids, want.what)
	}
	a, _ := db.Container("a")
	if d := a.Properties().DefaultTTL; (d == nil) != (want.aTTL == 0) || (d != nil && *d != want.aTTL) {
		t.Fatalf("%s: a's DefaultTTL %v, want %d", what, d, want.aTTL)
	}
	if st := a.Stats(); st.Items != 5 {
		t.Fatalf("%s: a holds %d items, want 5", what, st.Items)
	}
	if k >= 1 {
		e1, _ := db.Container("e1")
		if _, err := e1.Read(context.Background(), "x"); err != nil {
			t.Fatalf("%s: e1's item: %v", what, err)
		}
	}
}

// TestDamageManifestEdits damages the MANIFEST's edit log. A cut anywhere
// in it, or any flipped byte in the last edit, is a torn tail: Open cuts
// the incomplete edit (keeping a copy under broken/) and opens with the
// state the whole edits before it describe. A flipped byte in any earlier
// edit is damage to an acknowledged change: Open refuses with ErrCorrupt
// and changes nothing.
func TestDamageManifestEdits(t *testing.T) {
	pristine, offs := mdBuild(t)
	mdCheck(t, dmgCopy(t, pristine, filepath.Join(t.TempDir(), "whole")), len(mdEdits)-1, "undamaged")
	rng := dmgSeed(t)
	work := filepath.Join(t.TempDir(), "db")
	last := len(offs) - 2 // the index of the last edit's start
	step := 1
	if testing.Short() {
		step = 5
	}
	for off := offs[0]; off < offs[len(offs)-1]; off += step {
		dir := dmgCopy(t, pristine, work)
		mask := dmgBit(rng)
		dmgFlip(t, filepath.Join(dir, dbfile.ManifestName), int64(off), mask)
		what := fmt.Sprintf("MANIFEST byte %d ^ %#02x (edits at %v)", off, mask, offs)
		if off >= offs[last] {
			mdCheck(t, dir, last, what)
			ents, err := os.ReadDir(filepath.Join(dir, dbfile.BrokenDir))
			if err != nil || len(ents) != 1 {
				t.Fatalf("%s: broken/ holds %v (%v), want the one copy of the MANIFEST", what, ents, err)
			}
			mdCheck(t, dir, last, what+", opened again")
		} else {
			dmgMustRefuse(t, dir, CompressionZstd, what)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	for k := 0; k+1 < len(offs); k++ {
		for _, cut := range []int{offs[k], offs[k] + 1, offs[k] + 7, offs[k] + 8, (offs[k] + offs[k+1]) / 2, offs[k+1] - 1} {
			dir := dmgCopy(t, pristine, work)
			if err := os.Truncate(filepath.Join(dir, dbfile.ManifestName), int64(cut)); err != nil {
				t.Fatal(err)
			}
			mdCheck(t, dir, k, fmt.Sprintf("MANIFEST cut to %d bytes (edits at %v)", cut, offs))
		}
	}
	// Zeros after the last edit (a file that grew but whose data never
	// came) are a torn tail too.
	dir := dmgCopy(t, pristine, work)
	f, err := os.OpenFile(filepath.Join(dir, dbfile.ManifestName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(make([]byte, 100))
	f.Close()
	mdCheck(t, dir, len(mdEdits)-1, "MANIFEST with 100 zero bytes appended")
}

// TestManifestOldFormatOpens: a MANIFEST that is a snapshot alone, as the
// engine wrote it before the edit log existed, opens; the first change
// appends an edit to it.
func TestManifestOldFormatOpens(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := newFakeClock(t0)
	db := openTest(t, dir, clk)
	mustCreateContainer(t, db, ContainerProperties{ID: "a"})
	db.Close()
	m, err := readManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Write it as the old code did: one snapshot through writeManifest.
	if err := writeManifest(vfs.OS, dir, m); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, dbfile.ManifestName))
	db = openTest(t, dir, clk)
	mustCreateContainer(t, db, ContainerProperties{ID: "b"})
	after, _ := os.ReadFile(filepath.Join(dir, dbfile.ManifestName))
	if len(after) <= len(before) || string(after[:len(before)]) != string(before) {
		t.Fatalf("the create rewrote the MANIFEST (%d -> %d bytes) instead of appending an edit", len(before), len(after))
	}
	if err := db.DeleteContainer(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = openTest(t, dir, clk)
	defer db.Close()
	if got := db.Containers(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("containers %v, want [b]", got)
	}
	if _, err := db.Container("a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted container: %v", err)
	}
}
