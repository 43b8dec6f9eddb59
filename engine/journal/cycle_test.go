package journal

import (
	"errors"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/ebbdb/ebb/engine/vfs"
)

// After Cycle, TruncateFront(NextSeq()) leaves no entry on disk: the bytes
// of a journal whose entries are all sealed are bounded by nothing, not by
// a segment file. Random appends, cycles, truncations and reopens keep
// every entry not truncated readable, and the bookkeeping matches the
// folder.
func TestCycleGivesSpaceBack(t *testing.T) {
	for seed := range uint64(5) {
		rnd := rand.New(rand.NewPCG(seed, 3))
		l := newLayout(t)
		opts := Options{SegmentSize: 1 << 20, NoSync: seed%2 == 1}
		j := l.open(t, opts)
		next, first := uint64(1), uint64(1)
		for round := range 30 {
			n := uint64(1 + rnd.IntN(40))
			appendSeqs(t, j, next, next+n-1)
			next += n
			if rnd.IntN(4) == 0 {
				continue // no seal this round
			}
			if err := j.Cycle(); err != nil {
				t.Fatalf("seed %d round %d: Cycle: %v", seed, round, err)
			}
			if err := j.TruncateFront(next); err != nil {
				t.Fatal(err)
			}
			if j.Size() != 0 {
				t.Fatalf("seed %d round %d: %d journal bytes on disk after Cycle and TruncateFront(%d), want 0", seed, round, j.Size(), next)
			}
			first = next
			checkSizes(t, j)
			if rnd.IntN(3) == 0 {
				if err := j.Close(); err != nil {
					t.Fatal(err)
				}
				j = l.open(t, opts)
			}
			if j.NextSeq() != next {
				t.Fatalf("NextSeq = %d, want %d", j.NextSeq(), next)
			}
		}
		last := next - 1
		if first > last {
			first, last = 0, 0
		}
		checkReplay(t, j, first, last)
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		j = l.open(t, opts)
		checkReplay(t, j, first, last)
		j.Close()
	}
}

// A Cycle that cannot create its file leaves the journal working; one that
// fails after it fails the journal, and a reopen recovers every entry.
func TestCycleFailures(t *testing.T) {
	for _, tc := range []struct {
		rule   vfs.Rule
		failed bool
	}{
		{vfs.Rule{Op: vfs.OpCreate, Err: syscall.ENOSPC}, false},
		{vfs.Rule{Op: vfs.OpSyncDir, Err: syscall.EIO}, true},
		{vfs.Rule{Op: vfs.OpSync, Err: syscall.EIO}, true},
	} {
		l := newLayout(t)
		fsys := vfs.NewFaultFS(vfs.OS, 1)
		j := l.open(t, Options{SegmentSize: 1 << 20, FS: fsys})
		appendSeqs(t, j, 1, 50)
		fsys.Inject(tc.rule)
		err := j.Cycle()
		fsys.Clear()
		if err == nil || errors.Is(err, ErrFailed) != tc.failed {
			t.Fatalf("%v: Cycle: %v, want failed=%v", tc.rule, err, tc.failed)
		}
		if !tc.failed {
			appendSeqs(t, j, 51, 60)
			checkReplay(t, j, 1, 60)
			j.Close()
			j = l.open(t, Options{SegmentSize: 1 << 20})
			checkReplay(t, j, 1, 60)
		} else {
			j.Close()
			j = l.open(t, Options{SegmentSize: 1 << 20})
			checkReplay(t, j, 1, 50)
			appendSeqs(t, j, 51, 60)
			checkReplay(t, j, 1, 60)
		}
		j.Close()
	}
}

// With NoSync, Cycle makes every entry appended before it durable: after a
// simulated power loss the journal reaches at least the last Cycle, and a
// SyncTo of those entries afterwards returns without an fsync (every fsync
// fails here, and it succeeds).
func TestCycleMakesDurable(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 8))
	for round := range 20 {
		l, cfs := crashLayout(t)
		j := l.open(t, Options{SegmentSize: 1 << 20, FS: cfs, NoSync: true})
		durable, next := uint64(0), uint64(1)
		for range 1 + rnd.IntN(6) {
			n := uint64(1 + rnd.IntN(30))
			appendSeqs(t, j, next, next+n-1)
			next += n
			if rnd.IntN(2) == 0 {
				if err := j.Cycle(); err != nil {
					t.Fatal(err)
				}
				durable = next - 1
			}
		}
		cfs.Crash()
		j.Close()
		if err := cfs.Apply(vfs.Tail(rnd.IntN(4)), rnd); err != nil {
			t.Fatal(err)
		}
		j = l.open(t, Options{SegmentSize: 1 << 20})
		if last := j.LastSeq(); last < durable || last >= next {
			t.Fatalf("round %d: journal ends at %d after the power loss, want %d..%d", round, last, durable, next-1)
		}
		if j.LastSeq() > 0 {
			checkReplay(t, j, 1, j.LastSeq())
		}
		j.Close()
	}

	l := newLayout(t)
	fsys := vfs.NewFaultFS(vfs.OS, 1)
	j := l.open(t, Options{SegmentSize: 1 << 20, FS: fsys, NoSync: true})
	defer j.Close()
	appendSeqs(t, j, 1, 40)
	if err := j.Cycle(); err != nil {
		t.Fatal(err)
	}
	appendSeqs(t, j, 41, 50)
	fsys.Inject(vfs.Rule{Op: vfs.OpSync, Err: syscall.EIO})
	if err := j.SyncTo(40); err != nil {
		t.Fatalf("SyncTo(40) after a Cycle at 40: %v, want no fsync", err)
	}
	if err := j.SyncTo(50); !errors.Is(err, ErrFailed) {
		t.Fatalf("SyncTo(50) with fsyncs failing: %v, want ErrFailed", err)
	}
}
