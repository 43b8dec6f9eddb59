package vfs

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// writeFile creates name through c and writes b; sync fsyncs it.
func writeFile(t *testing.T, c *CrashFS, name string, b []byte, sync bool) {
	t.Helper()
	f, err := c.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// wantFile checks the content of name on the real disk; nil: absent.
func wantFile(t *testing.T, name string, want []byte) {
	t.Helper()
	b, err := os.ReadFile(name)
	if want == nil {
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s: %q, %v; want it absent", filepath.Base(name), b, err)
		}
		return
	}
	if err != nil || !bytes.Equal(b, want) {
		t.Fatalf("%s: %q, %v; want %q", filepath.Base(name), b, err, want)
	}
}

func TestCrashDurability(t *testing.T) {
	root := filepath.Join(t.TempDir(), "db")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	p := func(name string) string { return filepath.Join(root, name) }
	// Present before the CrashFS: durable as they are.
	os.WriteFile(p("old"), []byte("old"), 0o644)
	os.WriteFile(p("gone"), []byte("gone"), 0o644)
	os.WriteFile(p("MANIFEST"), []byte("v1"), 0o644)

	c, err := NewCrashFS(root)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, c, p("synced-entry"), []byte("data"), true) // data synced, entry not
	writeFile(t, c, p("entry-only"), []byte("lost"), false)  // entry synced below, data not
	writeFile(t, c, p("MANIFEST.tmp"), []byte("v2"), true)   // renamed over MANIFEST, no dir sync
	if err := c.Rename(p("MANIFEST.tmp"), p("MANIFEST")); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(p("gone")); err != nil { // removed, no dir sync
		t.Fatal(err)
	}
	f, err := c.OpenFile(p("old"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("+synced"))
	f.Sync()
	f.Write([]byte("+unsynced"))
	f.Close()
	if err := c.MkdirAll(p("newdir/sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, c, p("newdir/sub/f"), []byte("x"), true)
	// The folder fsync makes every entry of root durable as it is now.
	if err := c.SyncDir(root); err != nil {
		t.Fatal(err)
	}
	// After the folder fsync: a new rename and removal, not durable.
	writeFile(t, c, p("MANIFEST.tmp"), []byte("v3"), true)
	if err := c.Rename(p("MANIFEST.tmp"), p("MANIFEST")); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(p("synced-entry")); err != nil {
		t.Fatal(err)
	}

	c.Crash()
	if _, err := c.OpenFile(p("x"), os.O_CREATE|os.O_WRONLY, 0o644); !errors.Is(err, ErrCrashed) {
		t.Fatalf("create after Crash: %v", err)
	}
	if err := c.SyncDir(root); !errors.Is(err, ErrCrashed) {
		t.Fatalf("SyncDir after Crash: %v", err)
	}
	if err := c.Before(OpWrite, p("journal/1")); !errors.Is(err, ErrCrashed) {
		t.Fatalf("Before after Crash: %v", err)
	}
	if err := c.Apply(TailCut, nil); err != nil {
		t.Fatal(err)
	}
	wantFile(t, p("synced-entry"), []byte("data")) // removed after the fsync: back
	wantFile(t, p("entry-only"), []byte{})         // entry durable, data not
	wantFile(t, p("MANIFEST"), []byte("v2"))       // the renamed-in v2, not v3
	wantFile(t, p("MANIFEST.tmp"), nil)
	wantFile(t, p("gone"), nil) // its removal was durable
	wantFile(t, p("old"), []byte("old+synced"))
	wantFile(t, p("newdir/sub/f"), nil) // sub's entry in newdir was never synced
	if _, err := os.Stat(p("newdir")); err != nil {
		t.Fatalf("newdir, whose entry root's fsync made durable: %v", err)
	}
	if _, err := os.Stat(root + ".crashfs"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stash left behind: %v", err)
	}
}

func TestCrashTails(t *testing.T) {
	for _, tail := range []Tail{TailCut, TailZeros, TailGarbage, TailPrefix} {
		root := filepath.Join(t.TempDir(), "db")
		os.MkdirAll(root, 0o755)
		c, err := NewCrashFS(root)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(root, "journal")
		// The journal's hook: tidwall creates and writes with package os.
		if err := c.Before(OpCreate, name); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(name, []byte("synced|unsynced-tail"), 0o644)
		c.Synced(name, 7)
		c.SyncDir(root)
		c.Crash()
		c.Synced(name, 20) // too late: ignored
		if err := c.Apply(tail, nil); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(name)
		if !bytes.HasPrefix(b, []byte("synced|")) {
			t.Fatalf("tail %d: %q lost synced bytes", tail, b)
		}
		switch tail {
		case TailCut:
			wantFile(t, name, []byte("synced|"))
		case TailZeros:
			wantFile(t, name, append([]byte("synced|"), make([]byte, 13)...))
		case TailGarbage:
			if len(b) != 20 || bytes.Equal(b, []byte("synced|unsynced-tail")) {
				t.Fatalf("garbage tail: %q", b)
			}
		case TailPrefix:
			if !bytes.HasPrefix([]byte("synced|unsynced-tail"), b) {
				t.Fatalf("prefix tail: %q", b)
			}
		}
	}
}
