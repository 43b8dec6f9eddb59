package vfs

import (
	"bytes"
	"errors"
	"os"
	"syscall"
	"testing"
)

// TestKeepCopy: a copy holds exactly the bytes given, a second copy of the
// same name gets a name of its own, and a copy that fails at any step
// (write, fsync of the file or of the folder) leaves nothing in the folder.
func TestKeepCopy(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("torn"), 1000)
	p1, err := KeepCopy(OS, dir, "MANIFEST", data)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := KeepCopy(OS, dir, "MANIFEST", data[:7])
	if err != nil {
		t.Fatal(err)
	}
	if p1 == p2 {
		t.Fatalf("two copies share the name %s", p1)
	}
	for p, want := range map[string][]byte{p1: data, p2: data[:7]} {
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s holds %d bytes (err %v), want %d", p, len(got), err, len(want))
		}
	}

	for _, op := range []Op{OpWrite, OpSync, OpSyncDir} {
		dir := t.TempDir()
		f := NewFaultFS(OS, 1)
		f.Inject(Rule{Op: op, Err: syscall.ENOSPC})
		if _, err := KeepCopy(f, dir, "seg", data); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("op %v: err %v, want ENOSPC", op, err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("op %v: the failed copy left %s", op, ents[0].Name())
		}
	}
}
