package vfs

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSyncData: a file of the operating system is fdatasynced; a file of
// another FS goes through its Sync, which that FS sees (CrashFS records
// the data as durable).
func TestSyncData(t *testing.T) {
	dir := t.TempDir()
	f, err := OS.OpenFile(filepath.Join(dir, "os"), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("data"))
	if err := SyncData(f); err != nil {
		t.Fatalf("SyncData of an OS file: %v", err)
	}
	f.Close()
	if err := SyncData(f); err == nil {
		t.Fatal("SyncData of a closed file: no error")
	}

	root := filepath.Join(dir, "crash")
	os.Mkdir(root, 0o755)
	c, err := NewCrashFS(root)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(root, "f")
	g, err := c.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SyncDir(root); err != nil {
		t.Fatal(err)
	}
	g.Write([]byte("durable"))
	if err := SyncData(g); err != nil {
		t.Fatal(err)
	}
	g.Write([]byte(" lost"))
	g.Close()
	if err := c.Apply(TailCut, nil); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(name); err != nil || string(b) != "durable" {
		t.Fatalf("after the power loss: %q, %v; want the bytes SyncData made durable", b, err)
	}
}
