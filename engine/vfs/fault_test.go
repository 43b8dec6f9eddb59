package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestFaultRules(t *testing.T) {
	dir := t.TempDir()
	f := NewFaultFS(nil, 1)
	path := filepath.Join(dir, "seg", "1.seg")
	if err := f.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	file, err := CreateExcl(f, path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()

	// Skip 1, then fail 2 writes on seg/ paths only.
	f.Inject(Rule{Op: OpWrite, Path: "seg/", Err: syscall.ENOSPC, Skip: 1, Count: 2})
	var errs []error
	for range 4 {
		_, err := file.Write([]byte("ab"))
		errs = append(errs, err)
	}
	for i, want := range []bool{false, true, true, false} {
		if got := errs[i] != nil; got != want {
			t.Fatalf("write %d: %v, want failure %v", i, errs[i], want)
		}
	}
	if !errors.Is(errs[1], syscall.ENOSPC) {
		t.Fatalf("injected error %v does not wrap ENOSPC", errs[1])
	}
	var pe *fs.PathError
	if !errors.As(errs[1], &pe) || pe.Path != path {
		t.Fatalf("injected error %v does not name the path", errs[1])
	}
	if n := f.Injected(OpWrite); n != 2 {
		t.Fatalf("Injected(write) = %d, want 2", n)
	}

	// A rule on another path, or another op, does not fire.
	f.Inject(Rule{Op: OpSync, Path: "journal/"})
	if err := file.Sync(); err != nil {
		t.Fatalf("sync of a seg/ file under a journal/ rule: %v", err)
	}
	f.Clear()

	// A partial write writes half, then fails; the default cause is EIO.
	f.Inject(Rule{Op: OpWrite, Partial: true, Count: 1})
	n, err := file.Write([]byte("0123"))
	if n != 2 || !errors.Is(err, syscall.EIO) {
		t.Fatalf("partial write: %d, %v; want 2 bytes and EIO", n, err)
	}
	b, _ := os.ReadFile(path)
	if string(b) != "abab01" {
		t.Fatalf("file holds %q", b)
	}

	// Opening for writing is a create, for reading an open.
	f.Inject(Rule{Op: OpCreate, Count: 1})
	if _, err := f.OpenFile(path, os.O_RDWR, 0); err == nil {
		t.Fatal("open for writing under a create rule succeeded")
	}
	if r, err := f.Open(path); err != nil {
		t.Fatalf("open for reading under a create rule: %v", err)
	} else {
		r.Close()
	}
	// Every other operation.
	f.Inject(Rule{Path: "seg", Count: 100})
	checks := map[Op]error{}
	_, checks[OpRead] = f.ReadFile(path)
	_, checks[OpReadDir] = f.ReadDir(filepath.Dir(path))
	_, checks[OpStat] = f.Stat(path)
	checks[OpRename] = f.Rename(path, path+".x")
	checks[OpRemove] = f.Remove(path)
	checks[OpSyncDir] = f.SyncDir(filepath.Dir(path))
	checks[OpMkdir] = f.MkdirAll(filepath.Join(dir, "seg", "x"), 0o755)
	checks[OpTruncate] = file.Truncate(0)
	_, checks[OpOpen] = f.Open(path)
	for op, err := range checks {
		if !errors.Is(err, syscall.EIO) {
			t.Errorf("%s: %v, want the injected EIO", op, err)
		}
		if f.Injected(op) == 0 {
			t.Errorf("%s: not counted", op)
		}
	}
	f.Clear()
	if _, err := f.Stat(path); err != nil {
		t.Fatalf("after Clear: %v", err)
	}
	if got := f.Counts(); len(got) != len(checks)+2 { // and create, write
		t.Fatalf("Counts = %v", got)
	}
}

func TestFaultHookAndProbability(t *testing.T) {
	f := NewFaultFS(nil, 42)
	if HookOf(f) == nil || HookOf(OS) != nil {
		t.Fatal("HookOf: FaultFS has a hook, OS none")
	}
	f.Inject(Rule{Op: OpSync, Path: "journal/", Prob: 0.5})
	failed := 0
	for range 1000 {
		if f.Before(OpSync, "/db/journal/00000000000000000001") != nil {
			failed++
		}
	}
	if failed < 400 || failed > 600 {
		t.Fatalf("probability 0.5 failed %d of 1000", failed)
	}
	if err := f.Before(OpWrite, "/db/journal/00000000000000000001"); err != nil {
		t.Fatalf("Before(write) under a sync rule: %v", err)
	}
}
