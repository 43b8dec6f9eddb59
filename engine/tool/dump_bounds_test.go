package tool

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/internal/dbfile"
)

// allocated runs fn and returns the bytes it allocated (all goroutines'
// allocations, counted, not timed).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// offlineBudget is what the offline tools may allocate on any file below:
// a small multiple of their fixed buffers, nothing like the 256 MiB files
// (a tool that read one whole would be caught many times over; larger
// files only make the test slower).
const offlineBudget = 40 << 20

// sparse makes a file of size bytes that holds head at offset 0 and zeros
// after it (a hole: it costs no disk).
func sparse(t *testing.T, path string, head []byte, size int64) {
	t.Helper()
	if err := os.WriteFile(path, head, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

// DumpFile on a 256 MiB file, whatever its name and first bytes, allocates a
// bounded amount: the kind comes from a header, the records stream.
func TestDumpFileMemoryIsBounded(t *testing.T) {
	dir := t.TempDir()
	const size = 256 << 20
	garbage := []byte{0xfe, 0xff, 0xff, 0x03, 1, 2, 3, 4, 5, 6, 7, 8, 9} // a length prefix of ~8 MiB, then junk
	huge := []byte{0x80, 0x80, 0x80, 0x80, 0x03}                         // a length prefix of ~800 MiB
	for _, tc := range []struct {
		name    string
		head    []byte
		unknown bool // DumpFile refuses it; otherwise iterating ends with ErrCorrupt
	}{
		{"data.bin", nil, true},
		{"garbage.bin", garbage, true},
		{"huge.bin", huge, true},
		{"00000000000000000001", nil, false},
		{"00000000000000000007", garbage, false},
		{"00000000000000000009", huge, false},
		{"00000001.seg", nil, false},
	} {
		path := filepath.Join(dir, tc.name)
		sparse(t, path, tc.head, size)
		var err error
		n := allocated(func() {
			var recs func(func(DumpRecord, error) bool)
			_, recs, err = DumpFile(path)
			if err != nil {
				return
			}
			for _, e := range recs {
				if e != nil {
					err = e
				}
			}
		})
		switch {
		case tc.unknown && !errors.Is(err, ErrUnknownFile):
			t.Errorf("%s: %v, want ErrUnknownFile", tc.name, err)
		case !tc.unknown && !errors.Is(err, engine.ErrCorrupt):
			t.Errorf("%s: %v, want an error wrapping ErrCorrupt", tc.name, err)
		}
		t.Logf("%s: DumpFile allocated %d KiB on a 256 MiB file: %v", tc.name, n>>10, err)
		if n > offlineBudget {
			t.Errorf("%s: DumpFile allocated %d MiB on a 256 MiB file", tc.name, n>>20)
		}
		os.Remove(path)
	}
}

// DumpFile refuses what is not a regular file, at once: a fifo (reading it
// would wait for a writer), a device that never ends, a folder.
func TestDumpFileRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "00000000000000000001")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, "/dev/zero", "/dev/null", dir} {
		done := make(chan error, 1)
		go func() {
			_, _, err := DumpFile(path)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrUnknownFile) {
				t.Errorf("DumpFile(%s): %v, want ErrUnknownFile", path, err)
			}
		case <-time.After(time.Minute): // a hang, not a speed check
			t.Fatalf("DumpFile(%s) did not return", path)
		}
	}
}

// Inspect and Verify on a database whose journal file grew a 256 MiB zero
// tail allocate a bounded amount, and report the tail; with a fifo for the
// MANIFEST or for a segment file they report it instead of blocking.
func TestInspectVerifyBoundedAndRegularOnly(t *testing.T) {
	dir := buildVerifyDB(t)
	files, err := filepath.Glob(filepath.Join(dir, dbfile.JournalDir, "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("journal files: %v %v", files, err)
	}
	last := files[len(files)-1]
	if err := os.Truncate(last, 256<<20); err != nil {
		t.Fatal(err)
	}
	var rep *Report
	var vrep *VerifyReport
	var ierr, verr error
	n := allocated(func() {
		rep, ierr = Inspect(dir)
		vrep, verr = Verify(dir)
	})
	if ierr != nil || verr != nil {
		t.Fatalf("Inspect: %v; Verify: %v", ierr, verr)
	}
	t.Logf("Inspect and Verify allocated %d KiB with a 256 MiB journal file", n>>10)
	if n > 2*offlineBudget {
		t.Errorf("Inspect and Verify allocated %d MiB on a 256 MiB journal file", n>>20)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "torn") {
		t.Errorf("Inspect notes %q do not report the torn tail", rep.Notes)
	}
	if len(vrep.Problems)+len(vrep.Notes) == 0 {
		t.Errorf("Verify found nothing to say about a 256 MiB zero tail")
	}

	for _, victim := range []string{dbfile.ManifestName, "seg"} {
		d := buildVerifyDB(t)
		path := filepath.Join(d, dbfile.ManifestName)
		if victim == "seg" {
			segs, _ := filepath.Glob(filepath.Join(d, dbfile.SegmentDir, "*.seg"))
			path = segs[0]
		}
		os.Remove(path)
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan string, 1)
		go func() {
			var out []string
			if r, err := Inspect(d); err != nil {
				out = append(out, err.Error())
			} else {
				out = append(out, r.Errors...)
			}
			if r, err := Verify(d); err != nil {
				out = append(out, err.Error())
			} else {
				for _, p := range r.Problems {
					out = append(out, p.What)
				}
			}
			done <- strings.Join(out, "\n")
		}()
		select {
		case out := <-done:
			if !strings.Contains(out, "not a regular file") {
				t.Errorf("a fifo for %s: the tools said %q, want it named as not a regular file", victim, out)
			}
		case <-time.After(time.Minute):
			t.Fatalf("Inspect or Verify blocked on a fifo for %s", victim)
		}
	}
}
