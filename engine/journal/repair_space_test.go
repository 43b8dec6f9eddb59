package journal

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ebbdb/ebb/engine/vfs"
)

// A repair keeps only the bytes it cuts, at most MaxBrokenCopy of them,
// whatever the size of the file: the free space it needs is bounded by the
// damaged tail, not the file.
func TestRepairCopyIsBounded(t *testing.T) {
	for _, garbage := range []int{1, 100, 64 << 10, MaxBrokenCopy + 12345} {
		l, last, file, _ := pristine(t, 1<<22, 200)
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		good := fi.Size()
		nl, path, data := damaged(t, l, file, func(b []byte) []byte {
			// A length prefix promising more than follows: a torn entry.
			b = append(b, 0xff, 0xff, 0xff, 0x0f)
			return append(b, bytes.Repeat([]byte{0xa5}, garbage)...)
		})
		j := nl.open(t, Options{SegmentSize: 1 << 22})
		r := j.Repair()
		if r == nil || r.Offset != good || r.Seq != last+1 {
			t.Fatalf("garbage %d: repair %+v, want a cut at %d", garbage, r, good)
		}
		cp, err := os.ReadFile(r.Copy)
		if err != nil {
			t.Fatal(err)
		}
		want := data[good:]
		want = want[:min(len(want), MaxBrokenCopy)]
		if !bytes.Equal(cp, want) {
			t.Fatalf("garbage %d: copy of %d bytes, want the first %d cut bytes", garbage, len(cp), len(want))
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() != good {
			t.Fatalf("repaired file %v, size %d, want %d", err, fi.Size(), good)
		}
		j.Close()
	}
}

// When the copy cannot be written (a full disk, a failing fsync), the
// attempt leaves nothing in the broken folder and the tail is cut anyway:
// the journal opens with every whole entry, and a retry adds nothing.
func TestRepairCopyFailureLeavesNothing(t *testing.T) {
	rules := map[string]vfs.Rule{
		"write fills the disk":  {Op: vfs.OpWrite, Path: "broken/", Err: syscall.ENOSPC, Partial: true},
		"create fails":          {Op: vfs.OpCreate, Path: "broken/", Err: syscall.ENOSPC},
		"folder cannot be made": {Op: vfs.OpMkdir, Path: "broken", Err: syscall.ENOSPC},
		"fsync fails":           {Op: vfs.OpSync, Path: "broken/", Err: syscall.EIO},
		"folder fsync fails":    {Op: vfs.OpSyncDir, Path: "broken", Err: syscall.EIO, Count: 1},
	}
	l, last, file, offsets := pristine(t, 1<<16, 50)
	for name, rule := range rules {
		t.Run(name, func(t *testing.T) {
			cut := offsets[len(offsets)-1]
			nl, path, _ := damaged(t, l, file, func(b []byte) []byte { return b[:len(b)-5] })
			fsys := vfs.NewFaultFS(vfs.OS, 1)
			fsys.Inject(rule)
			j := nl.open(t, Options{SegmentSize: 1 << 16, FS: fsys})
			r := j.Repair()
			if r == nil || r.Copy != "" || r.Offset != cut {
				t.Fatalf("repair %+v, want a cut at %d with no copy", r, cut)
			}
			if ents, _ := os.ReadDir(nl.broken); len(ents) > 0 {
				t.Fatalf("the failed copy left %s/%s", nl.broken, ents[0].Name())
			}
			if fi, err := os.Stat(path); err != nil || fi.Size() != cut {
				t.Fatalf("file after repair: %v, size %d, want %d", err, fi.Size(), cut)
			}
			checkReplay(t, j, 1, last-1)
			j.Close()
			// A second Open finds a sound tail: nothing to repair, nothing added.
			j = nl.open(t, Options{SegmentSize: 1 << 16, FS: fsys})
			if r := j.Repair(); r != nil {
				t.Fatalf("second Open repaired again: %+v", r)
			}
			j.Close()
			if ents, _ := os.ReadDir(filepath.Clean(nl.broken)); len(ents) > 0 {
				t.Fatalf("broken/ holds %d files after a retry", len(ents))
			}
		})
	}
}
