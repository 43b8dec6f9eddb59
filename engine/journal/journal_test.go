package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ebbdb/ebb/engine/vfs"
)

// payloadFor returns the payload the tests write under seq: its length
// varies with seq (1 to 300 bytes unless size overrides it) and its bytes
// name the seq, so that any mix-up shows.
func payloadFor(seq uint64) []byte {
	return payloadOfSize(seq, 1+int(seq*37%300))
}

func payloadOfSize(seq uint64, n int) []byte {
	unit := fmt.Appendf(nil, "seq %d;", seq)
	return bytes.Repeat(unit, n/len(unit)+1)[:n]
}

// countingHandler counts the Warn records logged through it.
type countingHandler struct {
	slog.Handler
	mu    sync.Mutex
	warns int
}

func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	if r.Level >= slog.LevelWarn {
		h.warns++
	}
	h.mu.Unlock()
	return nil
}

func newCountingLogger() (*slog.Logger, *countingHandler) {
	h := &countingHandler{Handler: slog.NewTextHandler(io.Discard, nil)}
	return slog.New(h), h
}

// layout is where a test keeps a journal: dir/journal and dir/broken.
type layout struct{ journal, broken string }

func newLayout(t testing.TB) layout {
	d := t.TempDir()
	return layout{filepath.Join(d, "journal"), filepath.Join(d, "broken")}
}

func (l layout) open(t testing.TB, opts Options) *Journal {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	j, err := Open(l.journal, l.broken, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return j
}

// appendSeqs appends payloadFor(seq) for seq in [from, to], in batches of
// varying sizes, checking the seqs Append returns.
func appendSeqs(t testing.TB, j *Journal, from, to uint64) {
	t.Helper()
	for seq := from; seq <= to; {
		n := min(1+seq%7, to-seq+1)
		batch := make([][]byte, n)
		for i := range batch {
			batch[i] = payloadFor(seq + uint64(i))
		}
		first, err := j.Append(batch...)
		if err != nil {
			t.Fatalf("Append at seq %d: %v", seq, err)
		}
		if first != seq {
			t.Fatalf("Append returned first seq %d, want %d", first, seq)
		}
		seq += n
	}
}

// checkReplay replays the whole journal and checks it holds exactly the
// entries [first, last] with their payloads.
func checkReplay(t testing.TB, j *Journal, first, last uint64) {
	t.Helper()
	if got := j.FirstSeq(); got != first {
		t.Errorf("FirstSeq = %d, want %d", got, first)
	}
	if got := j.LastSeq(); got != last {
		t.Errorf("LastSeq = %d, want %d", got, last)
	}
	want := first
	err := j.Replay(0, func(seq uint64, payload []byte) error {
		if seq != want {
			return fmt.Errorf("replayed seq %d, want %d", seq, want)
		}
		if !bytes.Equal(payload, payloadFor(seq)) {
			return fmt.Errorf("seq %d: payload %q, want %q", seq, payload, payloadFor(seq))
		}
		want++
		return nil
	})
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	if last != 0 && want != last+1 {
		t.Fatalf("Replay stopped before seq %d, want through %d", want, last)
	}
}

// checkSizes checks the journal's bookkeeping against the folder.
func checkSizes(t testing.TB, j *Journal) {
	t.Helper()
	l, err := listDir(vfs.OS, j.dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := j.Size(); got != l.bytes {
		t.Errorf("Size = %d, files hold %d bytes", got, l.bytes)
	}
	j.mu.Lock()
	tail, path, filled, fillEnd := j.tailSize, j.tailPath, j.filled == j.tailPath, j.fillEnd
	j.mu.Unlock()
	got := l.segments[len(l.segments)-1].size
	if !filled {
		if int64(tail) != got {
			t.Errorf("mirrored tail size %d, tail file holds %d bytes", tail, got)
		}
		return
	}
	// Written ahead: entries, then zeros up to fillEnd.
	if want := max(int64(tail), fillEnd); got != want {
		t.Errorf("tail file written ahead holds %d bytes, want %d (entries %d, zeros to %d)", got, want, tail, fillEnd)
	}
	if fillEnd > int64(max(tail, j.opts.SegmentSize)) {
		t.Errorf("zeros reach %d, past the segment size %d", fillEnd, j.opts.SegmentSize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < tail || !allZero(data[tail:]) {
		t.Errorf("tail file: the %d bytes after its %d bytes of entries are not all zeros", len(data)-min(tail, len(data)), tail)
	}
}

func TestAppendReplayRoundTrip(t *testing.T) {
	l := newLayout(t)
	j := l.open(t, Options{SegmentSize: 1024})
	defer j.Close()
	if j.FirstSeq() != 0 || j.LastSeq() != 0 || j.NextSeq() != 1 {
		t.Fatalf("new journal: first %d last %d next %d, want 0 0 1", j.FirstSeq(), j.LastSeq(), j.NextSeq())
	}
	for seq := uint64(1); seq <= 400; seq += 40 {
		appendSeqs(t, j, seq, seq+39)
		checkSizes(t, j)
	}
	// One payload larger than a segment.
	big := payloadOfSize(401, 5000)
	if first, err := j.Append(big); err != nil || first != 401 {
		t.Fatalf("Append big: %d, %v", first, err)
	}
	checkSizes(t, j)
	files, err := Files(l.journal)
	if err != nil || len(files) < 10 {
		t.Fatalf("Files = %d files, %v; want many segments", len(files), err)
	}

	var got []uint64
	err = j.Replay(395, func(seq uint64, payload []byte) error {
		got = append(got, seq)
		if seq == 401 && !bytes.Equal(payload, big) {
			t.Errorf("big payload differs")
		}
		return nil
	})
	if err != nil || !reflect.DeepEqual(got, []uint64{395, 396, 397, 398, 399, 400, 401}) {
		t.Fatalf("Replay(395) = %v, %v", got, err)
	}

	stop := errors.New("stop")
	n := 0
	err = j.Replay(0, func(uint64, []byte) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if err != stop || n != 3 {
		t.Fatalf("Replay with a failing fn: %v after %d calls, want stop after 3", err, n)
	}
	if err := j.Replay(1000, func(uint64, []byte) error { return errors.New("called") }); err != nil {
		t.Fatalf("Replay past the end: %v", err)
	}
	if err := j.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestLargeAppend writes batches past the size whose buffers Append keeps.
func TestLargeAppend(t *testing.T) {
	l := newLayout(t)
	j := l.open(t, Options{SegmentSize: 1 << 20})
	big := [][]byte{payloadOfSize(1, 600<<10), payloadOfSize(2, 3<<20), payloadOfSize(3, 10)}
	if first, err := j.Append(big...); err != nil || first != 1 {
		t.Fatalf("Append: %d, %v", first, err)
	}
	if j.frame != nil {
		t.Errorf("Append kept a %d-byte frame buffer", cap(j.frame))
	}
	if first, err := j.Append(payloadOfSize(4, 100)); err != nil || first != 4 {
		t.Fatalf("Append: %d, %v", first, err)
	}
	checkSizes(t, j)
	j.Close()
	j = l.open(t, Options{SegmentSize: 1 << 20})
	defer j.Close()
	var sizes []int
	err := j.Replay(0, func(seq uint64, p []byte) error {
		if !bytes.Equal(p, payloadOfSize(seq, len(p))) {
			return fmt.Errorf("seq %d differs", seq)
		}
		sizes = append(sizes, len(p))
		return nil
	})
	if err != nil || !reflect.DeepEqual(sizes, []int{600 << 10, 3 << 20, 10, 100}) {
		t.Fatalf("Replay: %v, sizes %v", err, sizes)
	}
	checkSizes(t, j)
}

func TestReopenContinuesSeqs(t *testing.T) {
	l := newLayout(t)
	for round := range 4 {
		j := l.open(t, Options{SegmentSize: 2048, NoSync: round%2 == 1})
		last := uint64(round * 50)
		checkReplay(t, j, min(1, last), last)
		if j.Repair() != nil {
			t.Errorf("round %d: unexpected repair %+v", round, j.Repair())
		}
		if j.NextSeq() != last+1 {
			t.Fatalf("round %d: NextSeq = %d, want %d", round, j.NextSeq(), last+1)
		}
		appendSeqs(t, j, last+1, last+50)
		checkSizes(t, j)
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTruncateFront(t *testing.T) {
	l := newLayout(t)
	j := l.open(t, Options{SegmentSize: 1024})
	appendSeqs(t, j, 1, 200)
	before := j.Size()
	filesBefore, _ := Files(l.journal)

	if err := j.TruncateFront(0); err != nil { // below first: nothing
		t.Fatal(err)
	}
	if err := j.TruncateFront(120); err != nil {
		t.Fatal(err)
	}
	checkReplay(t, j, 120, 200)
	checkSizes(t, j)
	filesAfter, _ := Files(l.journal)
	if j.Size() >= before || len(filesAfter) >= len(filesBefore) {
		t.Errorf("TruncateFront kept %d bytes in %d files, had %d in %d", j.Size(), len(filesAfter), before, len(filesBefore))
	}
	if err := j.TruncateFront(100); err != nil { // before first again: nothing
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	j = l.open(t, Options{SegmentSize: 1024})
	checkReplay(t, j, 120, 200)
	// Past the end: clamped, the last entry stays.
	if err := j.TruncateFront(1 << 40); err != nil {
		t.Fatal(err)
	}
	checkReplay(t, j, 200, 200)
	checkSizes(t, j)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	j = l.open(t, Options{SegmentSize: 1024})
	defer j.Close()
	checkReplay(t, j, 200, 200)
	appendSeqs(t, j, 201, 230)
	checkReplay(t, j, 200, 230)
	checkSizes(t, j)
}

// closeTidwallFile closes the file descriptor of tidwall's tail segment
// behind its back, so that its next write or fsync fails the way a failing
// disk would make it fail. (Read-only folders do not stop root.)
func closeTidwallFile(t *testing.T, j *Journal) {
	t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	field := reflect.ValueOf(j.log).Elem().FieldByName("sfile")
	if !field.IsValid() {
		t.Fatal("tidwall/wal.Log has no sfile field any more; update this test")
	}
	f := *(**os.File)(unsafe.Pointer(field.UnsafeAddr()))
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkFailed checks that every call on j reports ErrFailed.
func checkFailed(t *testing.T, j *Journal) {
	t.Helper()
	if _, err := j.Append([]byte("x")); !errors.Is(err, ErrFailed) {
		t.Errorf("Append on a failed journal: %v", err)
	}
	if err := j.Sync(); !errors.Is(err, ErrFailed) {
		t.Errorf("Sync on a failed journal: %v", err)
	}
	if err := j.TruncateFront(2); !errors.Is(err, ErrFailed) {
		t.Errorf("TruncateFront on a failed journal: %v", err)
	}
	if err := j.Replay(0, func(uint64, []byte) error { return nil }); !errors.Is(err, ErrFailed) {
		t.Errorf("Replay on a failed journal: %v", err)
	}
	if err := j.Close(); !errors.Is(err, ErrFailed) {
		t.Errorf("Close on a failed journal: %v", err)
	}
	if err := j.Sync(); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after Close: %v", err)
	}
}

func TestFailedWrite(t *testing.T) {
	l := newLayout(t)
	j := l.open(t, Options{SegmentSize: 4096})
	appendSeqs(t, j, 1, 30)
	closeTidwallFile(t, j)
	if _, err := j.Append(payloadFor(31)); !errors.Is(err, ErrFailed) {
		t.Fatalf("Append with a failing write: %v, want ErrFailed", err)
	}
	checkFailed(t, j)

	j = l.open(t, Options{SegmentSize: 4096})
	defer j.Close()
	checkReplay(t, j, 1, 30)
	appendSeqs(t, j, 31, 40)
	checkReplay(t, j, 1, 40)
}

func TestFailedSync(t *testing.T) {
	l := newLayout(t)
	fsys := vfs.NewFaultFS(nil, 1)
	j := l.open(t, Options{NoSync: true, FS: fsys})
	appendSeqs(t, j, 1, 10)
	// The journal fsyncs the tail through a descriptor of its own, so the
	// failure comes from the file layer, as from the disk.
	fsys.Inject(vfs.Rule{Op: vfs.OpSync, Path: "journal", Err: syscall.EIO})
	if err := j.Sync(); !errors.Is(err, ErrFailed) {
		t.Fatalf("Sync with a failing fsync: %v, want ErrFailed", err)
	}
	checkFailed(t, j)
}

// syncDirFS counts folder fsyncs, and fails them with fail when it is set.
type syncDirFS struct {
	vfs.FS
	calls int
	fail  error
}

func (f *syncDirFS) SyncDir(dir string) error {
	f.calls++
	if f.fail != nil {
		return f.fail
	}
	return f.FS.SyncDir(dir)
}

func TestFailedFolderSync(t *testing.T) {
	l := newLayout(t)
	fsys := &syncDirFS{FS: vfs.OS}
	j := l.open(t, Options{SegmentSize: 512, FS: fsys})
	defer j.Close()
	fsys.calls, fsys.fail = 0, errors.New("injected folder fsync failure")

	// Entries of 100+ bytes: a new segment starts within 6 appends.
	var err error
	for seq := uint64(1); seq < 10 && err == nil; seq++ {
		_, err = j.Append(payloadOfSize(seq, 100))
	}
	if !errors.Is(err, ErrFailed) || fsys.calls != 1 || !errors.Is(err, fsys.fail) {
		t.Fatalf("Append starting a segment with a failing folder fsync: %v after %d fsyncs", err, fsys.calls)
	}
	if _, err := j.Append([]byte("x")); !errors.Is(err, ErrFailed) {
		t.Fatalf("Append after the failure: %v", err)
	}
}

func TestNoSyncDefersFolderSync(t *testing.T) {
	l := newLayout(t)
	fsys := &syncDirFS{FS: vfs.OS}
	j := l.open(t, Options{SegmentSize: 512, NoSync: true, FS: fsys})
	fsys.calls = 0
	appendSeqs(t, j, 1, 50)
	if fsys.calls != 0 {
		t.Fatalf("NoSync Append fsynced the folder %d times", fsys.calls)
	}
	if err := j.Sync(); err != nil || fsys.calls != 1 {
		t.Fatalf("Sync: %v after %d folder fsyncs, want 1", err, fsys.calls)
	}
	if err := j.Sync(); err != nil || fsys.calls != 1 {
		t.Fatalf("second Sync: %v after %d folder fsyncs, want still 1", err, fsys.calls)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestEmptyPayload(t *testing.T) {
	l := newLayout(t)
	j := l.open(t, Options{})
	defer j.Close()
	if _, err := j.Append(); !errors.Is(err, ErrEmptyPayload) {
		t.Errorf("Append(): %v", err)
	}
	if _, err := j.Append([]byte("a"), nil); !errors.Is(err, ErrEmptyPayload) {
		t.Errorf("Append with an empty payload: %v", err)
	}
	if j.LastSeq() != 0 {
		t.Errorf("rejected Append wrote entries: LastSeq %d", j.LastSeq())
	}
	if _, err := j.Append([]byte("a")); err != nil {
		t.Errorf("Append after a rejected one: %v", err)
	}
}

func TestClosed(t *testing.T) {
	l := newLayout(t)
	j := l.open(t, Options{})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append([]byte("a")); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v", err)
	}
	if err := j.Replay(0, func(uint64, []byte) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Replay after Close: %v", err)
	}
	if err := j.TruncateFront(1); !errors.Is(err, ErrClosed) {
		t.Errorf("TruncateFront after Close: %v", err)
	}
	if err := j.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
}

func TestOpenArguments(t *testing.T) {
	if _, err := Open(t.TempDir(), "", Options{}); err == nil {
		t.Error("Open without a broken folder succeeded")
	}
}

// TestConcurrentUse runs appenders, replayers and readers of the counters
// together; run it with -race.
func TestConcurrentUse(t *testing.T) {
	l := newLayout(t)
	j := l.open(t, Options{SegmentSize: 4096, NoSync: true})
	defer j.Close()
	const writers, perWriter = 4, 100
	var wg sync.WaitGroup
	errs := make(chan error, writers+2)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				p := fmt.Appendf(nil, "writer %d entry %d", w, i)
				if _, err := j.Append(p, p); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range 20 {
				prev := uint64(0)
				err := j.Replay(0, func(seq uint64, payload []byte) error {
					if prev != 0 && seq != prev+1 {
						return fmt.Errorf("seq %d after %d", seq, prev)
					}
					prev = seq
					_ = j.LastSeq() + j.FirstSeq() + uint64(j.Size())
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := j.LastSeq(); got != 2*writers*perWriter {
		t.Errorf("LastSeq = %d, want %d", got, 2*writers*perWriter)
	}
	// Both payloads of each Append are consecutive.
	var prev []byte
	err := j.Replay(0, func(seq uint64, payload []byte) error {
		if seq%2 == 0 && !bytes.Equal(payload, prev) {
			return fmt.Errorf("seq %d = %q, seq %d = %q: one Append was split", seq-1, prev, seq, payload)
		}
		prev = payload
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkAppend measures Append with an fsync per call, writing one 1 KiB
// entry per call and then 64: the second shows what group commit gains (one
// fsync acknowledges 64 entries). The "prealloc" cases write the tail ahead
// with zeros (Options.Preallocate, as the engine does) in 1 MiB files, the
// others append: run both, alternating, to see what writing in place saves
// (-bench 'Append/64x1KiB-fsync' -count 5).
func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct {
		name     string
		entries  int
		noSync   bool
		prealloc bool
	}{
		{"1x1KiB-fsync", 1, false, false},
		{"1x1KiB-fsync-prealloc", 1, false, true},
		{"64x1KiB-fsync", 64, false, false},
		{"64x1KiB-fsync-prealloc", 64, false, true},
		{"1x1KiB-nosync", 1, true, false},
		{"64x1KiB-nosync", 64, true, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l := newLayout(b)
			j := l.open(b, Options{NoSync: bc.noSync, Preallocate: bc.prealloc, SegmentSize: 1 << 20})
			defer j.Close()
			batch := make([][]byte, bc.entries)
			for i := range batch {
				batch[i] = payloadOfSize(uint64(i+1), 1024)
			}
			b.SetBytes(int64(bc.entries * 1024))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := j.Append(batch...); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*bc.entries), "ns/entry")
		})
	}
}
