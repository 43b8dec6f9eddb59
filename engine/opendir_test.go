package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
)

// treeOf lists every path under dir with its size (folders as -1), so that
// a test can tell that nothing was written, created or removed.
func treeOf(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel] = -1
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[rel] = info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Open("") is refused, and writes nothing into the working directory.
func TestOpenRefusesEmptyPath(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	for range 2 {
		db, err := Open("", nil)
		if err == nil {
			db.Close()
			t.Fatal(`Open("") succeeded`)
		}
		if !errors.Is(err, ErrNoDatabase) || !strings.Contains(err.Error(), "empty") {
			t.Fatalf(`Open(""): %v, want ErrNoDatabase saying the path is empty`, err)
		}
	}
	if ents, _ := os.ReadDir(wd); len(ents) > 0 {
		t.Fatalf(`Open("") wrote into the working directory: %v`, ents)
	}
}

// A directory that holds anything ebb did not create, and no MANIFEST, is
// refused with ErrNoDatabase naming the directory and what it holds, and is
// left exactly as it was. A new, empty, or ebb-only directory is accepted.
func TestOpenRefusesForeignDirectory(t *testing.T) {
	foreign := []struct {
		name  string
		files []string // relative paths; a trailing / makes a folder
	}{
		{"a file", []string{"notes.txt"}},
		{"a hidden file", []string{".git/"}},
		{"a folder", []string{"photos/"}},
		{"ebb names and a stranger", []string{"LOCK", "seg/", "journal/", "report.pdf"}},
		{"many files", []string{"a", "b", "c", "d", "e"}},
		{"a near-name", []string{"MANIFEST.bak"}},
	}
	for _, tc := range foreign {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				p := filepath.Join(dir, f)
				if strings.HasSuffix(f, "/") {
					os.MkdirAll(p, 0o755)
				} else if err := os.WriteFile(p, []byte("not ebb's"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before := treeOf(t, dir)
			db, err := Open(dir, nil)
			if err == nil {
				db.Close()
				t.Fatalf("Open took over a directory holding %v", tc.files)
			}
			if !errors.Is(err, ErrNoDatabase) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("Open: %v, want ErrNoDatabase naming %s", err, dir)
			}
			named := false
			for _, f := range tc.files {
				named = named || strings.Contains(err.Error(), strings.TrimSuffix(f, "/"))
			}
			if !named {
				t.Fatalf("Open: %v names none of %v", err, tc.files)
			}
			if after := treeOf(t, dir); !sameTree(before, after) {
				t.Fatalf("Open changed a directory it refused:\nbefore %v\nafter  %v", before, after)
			}
		})
	}

	accepted := map[string]func(dir string) string{
		"nonexistent":  func(dir string) string { return filepath.Join(dir, "new", "db") },
		"empty":        func(dir string) string { return dir },
		"a LOCK alone": func(dir string) string { os.WriteFile(filepath.Join(dir, "LOCK"), nil, 0o644); return dir },
	}
	for name, mk := range accepted {
		t.Run("accepts "+name, func(t *testing.T) {
			dir := mk(t.TempDir())
			db, err := Open(dir, nil)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			db.Close()
			db, err = Open(dir, nil) // and it is a database from then on
			if err != nil {
				t.Fatalf("second Open: %v", err)
			}
			db.Close()
		})
	}
}

// Open removes only the files ebb wrote: an unreferenced NNNNNNNN.seg is an
// orphan and goes; any other name in seg/ or at the top stays, byte for
// byte, and the database still opens with its data.
func TestOpenKeepsFilesItDidNotWrite(t *testing.T) {
	clk := newFakeClock(t0)
	dir := t.TempDir()
	db := openTest(t, dir, clk)
	c := mustCreateContainer(t, db, ContainerProperties{ID: "c"})
	ctx := context.Background()
	for i := range 20 {
		if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"k%d"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	forceSeal(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	strangers := []string{
		"seg/notes.txt", "seg/1.seg", "seg/00000001.seg.bak", "seg/0000000a.seg",
		"seg/000000001.seg", "seg/sub/00000007.seg", "README", "journal.old",
	}
	for _, f := range strangers {
		p := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("mine: "+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	orphan := filepath.Join(dir, "seg", "99999999.seg")
	if err := os.WriteFile(orphan, []byte("left by a crashed seal"), 0o644); err != nil {
		t.Fatal(err)
	}

	var logs bytes.Buffer
	db = openTest(t, dir, clk, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	defer db.Close()
	for _, f := range strangers {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || string(b) != "mine: "+f {
			t.Errorf("Open touched %s: %q, %v", f, b, err)
		}
	}
	if _, err := os.Stat(orphan); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the orphan segment file was not removed: %v", err)
	}
	if !strings.Contains(logs.String(), "notes.txt") {
		t.Errorf("no warning names seg/notes.txt:\n%s", logs.String())
	}
	c, err := db.Container("c")
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Items != 20 {
		t.Fatalf("%d items after reopening, want 20", st.Items)
	}
}

// A CLOCK file that does not decode is reported with a warning naming it;
// Open goes on (the MANIFEST's clock is the floor). A valid one is quiet.
func TestOpenWarnsOnDamagedClock(t *testing.T) {
	for _, content := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte{0xff}, 12), bytes.Repeat([]byte{0}, 12), bytes.Repeat([]byte{1}, 40)} {
		clk := newFakeClock(t0)
		dir := t.TempDir()
		db := openTest(t, dir, clk)
		db.Close()
		if err := os.WriteFile(filepath.Join(dir, dbfile.ClockName), content, 0o644); err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		db = openTest(t, dir, clk, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
		db.Close()
		if !strings.Contains(logs.String(), "CLOCK") || !strings.Contains(logs.String(), "level=WARN") {
			t.Errorf("CLOCK %x: no warning:\n%s", content, logs.String())
		}
	}
	// A valid CLOCK, as Close writes it, gives no warning.
	clk := newFakeClock(t0)
	dir := t.TempDir()
	db := openTest(t, dir, clk)
	db.Close()
	var logs bytes.Buffer
	db = openTest(t, dir, clk, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	db.Close()
	if strings.Contains(logs.String(), "CLOCK") {
		t.Errorf("a valid CLOCK drew a warning:\n%s", logs.String())
	}
}
