package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestSyncDir: the error of a failed folder fsync wraps the cause and names
// the folder; a good one returns nil.
func TestSyncDir(t *testing.T) {
	dir := t.TempDir()
	if err := SyncDir(OS, dir); err != nil {
		t.Fatal(err)
	}
	f := NewFaultFS(OS, 1)
	f.Inject(Rule{Op: OpSyncDir, Err: syscall.EIO})
	err := SyncDir(f, dir)
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("SyncDir under a fault: %v, want EIO naming %s", err, dir)
	}
	if err := SyncDir(OS, filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("SyncDir of a missing folder: %v", err)
	}
}

// TestWriteFileAtomic: the file is replaced whole; a failure before the
// rename (create, write, fsync, rename) leaves the old content and no
// temporary file; a failed folder fsync after the rename leaves the new
// content and reports the error.
func TestWriteFileAtomic(t *testing.T) {
	read := func(t *testing.T, p string) string {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	dir := t.TempDir()
	for _, s := range []string{"one", "two, longer"} {
		if err := WriteFileAtomic(OS, dir, "CLOCK", []byte(s)); err != nil {
			t.Fatal(err)
		}
		if got := read(t, filepath.Join(dir, "CLOCK")); got != s {
			t.Fatalf("CLOCK holds %q, want %q", got, s)
		}
	}
	for _, op := range []Op{OpCreate, OpWrite, OpSync, OpRename, OpSyncDir} {
		t.Run(op.String(), func(t *testing.T) {
			dir := t.TempDir()
			if err := WriteFileAtomic(OS, dir, "CLOCK", []byte("old")); err != nil {
				t.Fatal(err)
			}
			f := NewFaultFS(OS, 1)
			f.Inject(Rule{Op: op, Err: syscall.ENOSPC})
			if err := WriteFileAtomic(f, dir, "CLOCK", []byte("new")); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("err %v, want ENOSPC", err)
			}
			want := "old"
			if op == OpSyncDir {
				want = "new"
			}
			if got := read(t, filepath.Join(dir, "CLOCK")); got != want {
				t.Fatalf("CLOCK holds %q, want %q", got, want)
			}
			if _, err := os.Stat(filepath.Join(dir, "CLOCK.tmp")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the temporary file is left behind: %v", err)
			}
		})
	}
}

// TestWalkDir: WalkDir through OS visits what filepath.WalkDir visits, in
// the same order, and honours SkipDir on a folder and on a file, SkipAll,
// and a missing root.
func TestWalkDir(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"a/x", "a/y", "b/c/z", "b/w", "d", "e/f"} {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	visit := func(walk func(string, fs.WalkDirFunc) error, skip func(string, fs.DirEntry) error) []string {
		var got []string
		err := walk(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, path)
			got = append(got, rel+map[bool]string{true: "/"}[d.IsDir()])
			if skip != nil {
				return skip(rel, d)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	ours := func(root string, fn fs.WalkDirFunc) error { return WalkDir(OS, root, fn) }
	for name, skip := range map[string]func(string, fs.DirEntry) error{
		"all": nil,
		"skip-folder": func(rel string, _ fs.DirEntry) error {
			if rel == "b" {
				return fs.SkipDir
			}
			return nil
		},
		"skip-from-file": func(rel string, _ fs.DirEntry) error {
			if rel == filepath.Join("a", "x") {
				return fs.SkipDir
			}
			return nil
		},
		"skip-all": func(rel string, _ fs.DirEntry) error {
			if rel == filepath.Join("b", "c") {
				return fs.SkipAll
			}
			return nil
		},
	} {
		want := visit(filepath.WalkDir, skip)
		if got := visit(ours, skip); !slices.Equal(got, want) {
			t.Errorf("%s: WalkDir visits %q, filepath.WalkDir %q", name, got, want)
		}
	}
	var calls int
	err := WalkDir(OS, filepath.Join(root, "missing"), func(_ string, d fs.DirEntry, err error) error {
		calls++
		if d != nil || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("missing root: entry %v, err %v", d, err)
		}
		return err
	})
	if calls != 1 || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing root: %d calls, err %v", calls, err)
	}
}
