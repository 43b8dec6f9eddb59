package journal

import (
	"os"
	"path/filepath"
	"testing"
)

// preallocOpts are the options of the tests of Options.Preallocate: small
// segments, so that the entries cross many files.
var preallocOpts = Options{SegmentSize: 4096, Preallocate: true}

// openQuiet opens the journal of l with opts and checks that Open reported
// no repair and logged no warning: zeros after the last entry are cut
// silently.
func openQuiet(t *testing.T, l layout, opts Options) *Journal {
	t.Helper()
	logger, counter := newCountingLogger()
	opts.Logger = logger
	j := l.open(t, opts)
	if r := j.Repair(); r != nil || counter.warns != 0 {
		j.Close()
		t.Fatalf("Open: repair %+v, %d warnings; want none", r, counter.warns)
	}
	return j
}

// checkFilesEnd checks that every file of the journal in dir but the last
// ends exactly where its entries do: a file stops being the tail with its
// zeros cut off.
func checkFilesEnd(t *testing.T, dir string) {
	t.Helper()
	files, err := Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files[:len(files)-1] {
		var end int64
		for e, err := range ReadFile(f) {
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			end = e.Offset + int64(frameSize(len(e.Payload)))
		}
		if fi, err := os.Stat(f); err != nil || fi.Size() != end {
			t.Errorf("%s: entries end at %d, the file holds %d bytes (%v)", f, end, fi.Size(), err)
		}
	}
}

// TestPreallocate appends across many files of a journal that writes its
// tail ahead: the tail holds zeros after its entries while it is the tail,
// earlier files end with their entries, Size counts what is on disk, and a
// reopen after Close finds nothing to cut or repair.
func TestPreallocate(t *testing.T) {
	l := newLayout(t)
	j := l.open(t, preallocOpts)
	checkSizes(t, j)
	for seq := uint64(1); seq <= 400; seq += 50 {
		appendSeqs(t, j, seq, seq+49)
		checkSizes(t, j)
	}
	j.mu.Lock()
	filled := j.filled == j.tailPath
	j.mu.Unlock()
	if !filled {
		t.Fatalf("the tail is not written ahead")
	}
	checkFilesEnd(t, l.journal)
	checkReplay(t, j, 1, 400)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := Files(l.journal)
	checkFilesEnd(t, l.journal)
	tail := files[len(files)-1]
	var end int64
	for e, err := range ReadFile(tail) {
		if err != nil {
			t.Fatal(err)
		}
		end = e.Offset + int64(frameSize(len(e.Payload)))
	}
	if fi, _ := os.Stat(tail); fi.Size() != end {
		t.Errorf("after Close the tail holds %d bytes, its entries %d", fi.Size(), end)
	}

	j = openQuiet(t, l, preallocOpts)
	defer j.Close()
	checkReplay(t, j, 1, 400)
	appendSeqs(t, j, 401, 450)
	checkReplay(t, j, 1, 450)
	checkSizes(t, j)
}

// TestPreallocateCrash opens a copy of a journal's folder taken while the
// journal was open (the tail written ahead, as a crash leaves it): Open cuts
// the zeros without a repair and every entry is there.
func TestPreallocateCrash(t *testing.T) {
	l := newLayout(t)
	j := l.open(t, preallocOpts)
	appendSeqs(t, j, 1, 200)
	crashed := newLayout(t)
	copyDir(t, l.journal, crashed.journal)
	j.Close()

	files, _ := Files(crashed.journal)
	tail := files[len(files)-1]
	if fi, _ := os.Stat(tail); fi.Size() < int64(preallocOpts.SegmentSize) {
		t.Fatalf("the copied tail holds %d bytes: it was not written ahead", fi.Size())
	}
	j = openQuiet(t, crashed, preallocOpts)
	defer j.Close()
	checkReplay(t, j, 1, 200)
	checkSizes(t, j)
	appendSeqs(t, j, 201, 260)
	checkReplay(t, j, 1, 260)
	checkFilesEnd(t, crashed.journal)
}

// TestPreallocateCycle: Cycle cuts the zeros off the file it ends and
// writes the new tail ahead; TruncateFront then removes whole files and
// Size follows.
func TestPreallocateCycle(t *testing.T) {
	l := newLayout(t)
	j := l.open(t, Options{SegmentSize: 1 << 20, Preallocate: true})
	defer j.Close()
	appendSeqs(t, j, 1, 30)
	if err := j.Cycle(); err != nil {
		t.Fatal(err)
	}
	checkFilesEnd(t, l.journal)
	checkSizes(t, j)
	appendSeqs(t, j, 31, 40)
	if err := j.TruncateFront(31); err != nil {
		t.Fatal(err)
	}
	checkReplay(t, j, 31, 40)
	checkSizes(t, j)
	files, _ := Files(l.journal)
	if len(files) != 1 {
		t.Fatalf("%d files after TruncateFront, want 1", len(files))
	}
}

// TestPreallocateFailedFill: zeros that cannot be written (here, the tail
// file is not what the journal expects) leave the journal working as
// without them.
func TestPreallocateFailedFill(t *testing.T) {
	l := newLayout(t)
	j := l.open(t, Options{SegmentSize: 4096})
	appendSeqs(t, j, 1, 5)
	j.Close()
	// A tail file that is longer than its entries say (zeros already
	// there, written ahead by an earlier run and not cut) is cut by Open
	// and then written ahead.
	files, _ := Files(l.journal)
	f, err := os.OpenFile(files[len(files)-1], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(make([]byte, 100))
	f.Close()
	j = l.open(t, preallocOpts)
	defer j.Close()
	checkSizes(t, j)
	// Write ahead refused: the journal is told the tail is a file it did
	// not write (its size differs), and goes on appending.
	j.mu.Lock()
	j.filled = ""
	j.tailSize++ // a lie for the check below, undone at once
	j.zeroFillLocked(0)
	j.tailSize--
	filled, step := j.filled, j.fillStep
	j.mu.Unlock()
	if filled != j.tailPath || step != -1 {
		t.Fatalf("filled %q, step %d: want the tail marked as failed", filled, step)
	}
	appendSeqs(t, j, 6, 60)
	checkReplay(t, j, 1, 60)
	checkSizes(t, j)
}

// TestPreallocateWindow: a journal written to slowly holds at most a small
// window of zeros; a busy one extends the window as it goes, never past
// the segment size.
func TestPreallocateWindow(t *testing.T) {
	l := newLayout(t)
	j := l.open(t, Options{SegmentSize: 4 << 20, Preallocate: true})
	defer j.Close()
	appendSeqs(t, j, 1, 3)
	if ahead := j.Size() - j.size.Load(); ahead <= 0 || ahead > minFillStep {
		t.Fatalf("%d bytes of zeros ahead after three small entries, want some, at most %d", ahead, minFillStep)
	}
	for seq := uint64(4); seq < 20000; seq += 500 {
		appendSeqs(t, j, seq, seq+499)
		checkSizes(t, j)
		// Less than half a window left, and a window more.
		if ahead := j.Size() - j.size.Load(); ahead > maxFillStep+maxFillStep/2 {
			t.Fatalf("%d bytes of zeros ahead, want at most %d", ahead, maxFillStep+maxFillStep/2)
		}
	}
	checkFilesEnd(t, l.journal)
}

// copyDir copies the files of src into a new folder dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o750); err != nil {
		t.Fatal(err)
	}
	des, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		data, err := os.ReadFile(filepath.Join(src, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, de.Name()), data, 0o640); err != nil {
			t.Fatal(err)
		}
	}
}
