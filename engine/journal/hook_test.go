package journal

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ebbdb/ebb/engine/vfs"
)

// TestHookFaults: a fault injected through the hook before tidwall's
// write, fsync or file creation fails the Append with the cause and
// ErrFailed, and a reopened journal holds every entry appended before it.
func TestHookFaults(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpWrite, vfs.OpSync, vfs.OpCreate, vfs.OpSyncDir} {
		t.Run(op.String(), func(t *testing.T) {
			l := newLayout(t)
			fsys := vfs.NewFaultFS(nil, 1)
			j := l.open(t, Options{SegmentSize: 512, FS: fsys})
			appendSeqs(t, j, 1, 3)
			fsys.Inject(vfs.Rule{Op: op, Path: "journal", Err: syscall.ENOSPC})
			var err error
			seq := uint64(4)
			for ; seq < 100 && err == nil; seq++ {
				_, err = j.Append(payloadFor(seq))
			}
			if !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Append under a %s fault: %v", op, err)
			}
			if _, err := j.Append([]byte("x")); !errors.Is(err, ErrFailed) {
				t.Fatalf("Append after the failure: %v", err)
			}
			j.Close()
			fsys.Clear()
			j = l.open(t, Options{SegmentSize: 512, FS: fsys})
			defer j.Close()
			// Entries before the failing one are all there; the failing
			// one may be (a failed fsync after the write).
			if last := j.LastSeq(); last < seq-2 || last > seq-1 {
				t.Fatalf("reopened journal ends at %d, want %d or %d", last, seq-2, seq-1)
			}
			checkReplay(t, j, 1, j.LastSeq())
		})
	}
}

// crashLayout is a new layout whose folder is under a CrashFS.
func crashLayout(t *testing.T) (layout, *vfs.CrashFS) {
	t.Helper()
	l := newLayout(t)
	if err := os.MkdirAll(filepath.Dir(l.journal), 0o755); err != nil {
		t.Fatal(err)
	}
	cfs, err := vfs.NewCrashFS(filepath.Dir(l.journal))
	if err != nil {
		t.Fatal(err)
	}
	return l, cfs
}

// TestHookPowerLoss: after a simulated power loss every entry Append
// acknowledged is back (with NoSync: every entry before the last Sync),
// whatever became of the unsynced bytes.
func TestHookPowerLoss(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for round := range 40 {
		noSync := round%2 == 1
		l, cfs := crashLayout(t)
		j := l.open(t, Options{SegmentSize: 1024, FS: cfs, NoSync: noSync})
		n := 1 + rnd.IntN(60)
		durable := uint64(0)
		for seq := uint64(1); seq <= uint64(n); seq++ {
			if _, err := j.Append(payloadFor(seq)); err != nil {
				t.Fatal(err)
			}
			if !noSync || rnd.IntN(10) == 0 {
				if noSync {
					if err := j.Sync(); err != nil {
						t.Fatal(err)
					}
				}
				durable = seq
			}
		}
		cfs.Crash()
		if _, err := j.Append([]byte("late")); err == nil {
			t.Fatal("Append after the power loss succeeded")
		}
		j.Close()
		if err := cfs.Apply(vfs.Tail(rnd.IntN(4)), rnd); err != nil {
			t.Fatal(err)
		}
		j = l.open(t, Options{SegmentSize: 1024})
		if last := j.LastSeq(); last < durable || last > uint64(n) {
			t.Fatalf("round %d (noSync=%v): journal ends at %d, want %d..%d", round, noSync, last, durable, n)
		}
		if j.LastSeq() > 0 {
			checkReplay(t, j, 1, j.LastSeq())
		}
		j.Close()
	}
}

// TestWriteSyncToPowerLoss: a writer goroutine Writes entries while another
// calls SyncTo on what was written, as the engine's commit pipeline does;
// after a simulated power loss at a random moment, every entry a SyncTo
// returned for is back, and the journal holds a gapless prefix.
func TestWriteSyncToPowerLoss(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	for round := range 30 {
		l, cfs := crashLayout(t)
		j := l.open(t, Options{SegmentSize: 2048, FS: cfs})
		n := 20 + rnd.IntN(200)
		written := make(chan uint64, n)
		go func() {
			defer close(written)
			for seq := uint64(1); seq <= uint64(n); seq++ {
				if _, err := j.Write(payloadFor(seq)); err != nil {
					return
				}
				written <- seq
			}
		}()
		var durable uint64
		crashAt := rnd.IntN(n)
		for seq := range written {
			if int(seq) == crashAt {
				cfs.Crash()
			}
			if err := j.SyncTo(seq); err == nil {
				durable = seq
			}
		}
		if !cfs.Crashed() {
			cfs.Crash()
		}
		j.Close()
		if err := cfs.Apply(vfs.Tail(rnd.IntN(4)), rnd); err != nil {
			t.Fatal(err)
		}
		j = l.open(t, Options{SegmentSize: 2048})
		if last := j.LastSeq(); last < durable || last > uint64(n) {
			t.Fatalf("round %d: journal ends at %d, want %d..%d", round, last, durable, n)
		}
		if j.LastSeq() > 0 {
			checkReplay(t, j, 1, j.LastSeq())
		}
		j.Close()
	}
}
