package journal

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// pristine builds a closed journal holding payloadFor(1..last) in segments
// of segSize bytes, with last >= minLast chosen so that the last segment file
// holds at least 4 entries and ends with one of at least 60 bytes. It
// returns the journal, last, the path of the last segment file and the
// offsets of that file's entries.
func pristine(t *testing.T, segSize int, minLast uint64) (l layout, last uint64, lastFile string, offsets []int64) {
	t.Helper()
	l = newLayout(t)
	j := l.open(t, Options{SegmentSize: segSize})
	appendSeqs(t, j, 1, minLast)
	for last = minLast; ; last++ {
		files, err := Files(l.journal)
		if err != nil || len(files) == 0 {
			t.Fatalf("Files: %v, %v", files, err)
		}
		lastFile = files[len(files)-1]
		offsets = offsets[:0]
		for e, err := range ReadFile(lastFile) {
			if err != nil {
				t.Fatal(err)
			}
			offsets = append(offsets, e.Offset)
		}
		if len(offsets) >= 4 && len(payloadFor(last)) >= 60 {
			break
		}
		appendSeqs(t, j, last+1, last+1)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return l, last, lastFile, offsets
}

// damaged copies the journal of l to a new layout, applies damage to the
// copy of the segment file named like file, and returns the new layout and
// the damaged file's path and bytes.
func damaged(t *testing.T, l layout, file string, damage func([]byte) []byte) (layout, string, []byte) {
	t.Helper()
	nl := newLayout(t)
	if err := os.CopyFS(nl.journal, os.DirFS(l.journal)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(nl.journal, filepath.Base(file))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data = damage(data)
	if err := os.WriteFile(path, data, 0o640); err != nil {
		t.Fatal(err)
	}
	return nl, path, data
}

// checkRepaired opens a journal whose last file had a torn tail cut at
// offset cut, and checks the repair, the copy and the surviving entries.
func checkRepaired(t *testing.T, l layout, file string, damagedData []byte, cut int64, last uint64) {
	t.Helper()
	logger, counter := newCountingLogger()
	j := l.open(t, Options{SegmentSize: 1024, Logger: logger})
	defer j.Close()
	r := j.Repair()
	if r == nil {
		t.Fatalf("no repair reported")
	}
	if r.File != file || r.Offset != cut || r.CutBytes != int64(len(damagedData))-cut || r.Seq != last+1 {
		t.Fatalf("Repair = %+v, want file %s offset %d cut %d seq %d", r, file, cut, int64(len(damagedData))-cut, last+1)
	}
	if counter.warns != 1 {
		t.Errorf("%d warnings logged, want 1", counter.warns)
	}
	if filepath.Dir(r.Copy) != l.broken {
		t.Errorf("copy %s is not in the broken folder %s", r.Copy, l.broken)
	}
	if cp, err := os.ReadFile(r.Copy); err != nil || !bytes.Equal(cp, damagedData[cut:]) {
		t.Errorf("copy of the cut bytes: %v, same bytes %v", err, bytes.Equal(cp, damagedData[cut:]))
	}
	if fi, err := os.Stat(file); err != nil || fi.Size() != cut {
		t.Errorf("repaired file: %v, size %d, want %d", err, fi.Size(), cut)
	}
	checkGoesOn(t, j, last)
}

// checkGoesOn checks that the journal j, reopened after a repair or a cut,
// holds the entries up to seq last and takes the next ones.
func checkGoesOn(t *testing.T, j *Journal, last uint64) {
	t.Helper()
	checkReplay(t, j, min(1, last), last)
	if j.NextSeq() != last+1 {
		t.Fatalf("NextSeq = %d, want %d", j.NextSeq(), last+1)
	}
	appendSeqs(t, j, last+1, last+3)
	checkReplay(t, j, 1, last+3)
	checkSizes(t, j)
}

// checkZerosCut opens the damaged layout l, whose last file holds entries
// up to seq last ending at offset end and zeros after them, and checks that
// Open cut the zeros without reporting a repair, warning or keeping a copy,
// and that the journal goes on from last.
func checkZerosCut(t *testing.T, l layout, file string, end int64, last uint64) {
	t.Helper()
	j := openQuiet(t, l, Options{SegmentSize: 1024})
	defer j.Close()
	if des, err := os.ReadDir(l.broken); err == nil && len(des) > 0 {
		t.Errorf("the broken folder holds %d files, want none", len(des))
	}
	if fi, err := os.Stat(file); err != nil || fi.Size() != end {
		t.Errorf("file after Open: %v, size %d, want %d", err, fi.Size(), end)
	}
	checkGoesOn(t, j, last)
}

// TestTornTail cuts the last file at every offset inside its last entry.
func TestTornTail(t *testing.T) {
	l, last, file, offsets := pristine(t, 1024, 60)
	if len(offsets) < 2 {
		t.Fatalf("last file holds %d entries; want more", len(offsets))
	}
	start := offsets[len(offsets)-1]
	size := start + int64(frameSize(len(payloadFor(last))))

	for cut := start; cut < size; cut++ {
		nl, path, data := damaged(t, l, file, func(b []byte) []byte { return b[:cut] })
		if cut == start { // a clean end: nothing to repair
			j := nl.open(t, Options{SegmentSize: 1024})
			if j.Repair() != nil {
				t.Fatalf("cut at an entry boundary: repair %+v", j.Repair())
			}
			checkReplay(t, j, 1, last-1)
			j.Close()
			continue
		}
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			t.Parallel() // bound by fsync latency, not CPU
			checkRepaired(t, nl, path, data, start, last-1)
		})
	}
}

// TestTornOnlyEntry tears the only entry of a journal whose only file
// starts after seq 1: the journal is empty but keeps its numbering.
func TestTornOnlyEntry(t *testing.T) {
	l := newLayout(t)
	j := l.open(t, Options{SegmentSize: 1024})
	appendSeqs(t, j, 1, 40)
	if err := j.TruncateFront(40); err != nil {
		t.Fatal(err)
	}
	j.Close()
	files, _ := Files(l.journal)
	if len(files) != 1 || filepath.Base(files[0]) != segmentName(40) {
		t.Fatalf("files after TruncateFront(40): %v", files)
	}
	nl, path, _ := damaged(t, l, files[0], func(b []byte) []byte { return b[:len(b)-1] })
	j = nl.open(t, Options{SegmentSize: 1024})
	defer j.Close()
	if r := j.Repair(); r == nil || r.File != path || r.Offset != 0 || r.Seq != 40 {
		t.Fatalf("Repair = %+v", r)
	}
	if j.FirstSeq() != 0 || j.LastSeq() != 0 || j.NextSeq() != 40 {
		t.Fatalf("first %d last %d next %d, want 0 0 40", j.FirstSeq(), j.LastSeq(), j.NextSeq())
	}
	appendSeqs(t, j, 40, 45)
	checkReplay(t, j, 40, 45)
}

// TestTornFirstEntryOfSegment tears the one entry of a segment file that
// tidwall had just started: the file ends up empty, earlier files intact.
func TestTornFirstEntryOfSegment(t *testing.T) {
	l := newLayout(t)
	j := l.open(t, Options{SegmentSize: 1024})
	var last uint64
	var files []string
	for last = 1; ; last++ {
		appendSeqs(t, j, last, last)
		files, _ = Files(l.journal)
		if n := len(files); n >= 3 && filepath.Base(files[n-1]) == segmentName(last) {
			break
		}
	}
	j.Close()
	nl, path, data := damaged(t, l, files[len(files)-1], func(b []byte) []byte { return b[:len(b)/2] })
	checkRepaired(t, nl, path, data, 0, last-1)
}

// TestZeroFilledTail: zeros after the last entry of the last file (those
// the journal writes it ahead with, left by a crash) are cut off without a
// repair reported or a copy kept; zeros from inside an entry are a torn
// tail.
func TestZeroFilledTail(t *testing.T) {
	l, last, file, offsets := pristine(t, 1024, 60)
	for _, n := range []int{1, 2, 12, 13, 14, 100, 4096, 10000} {
		t.Run(fmt.Sprintf("append%d", n), func(t *testing.T) {
			var size int64
			nl, path, _ := damaged(t, l, file, func(b []byte) []byte {
				size = int64(len(b))
				return append(b, make([]byte, n)...)
			})
			checkZerosCut(t, nl, path, size, last)
		})
	}
	// More zeros than the journal ever writes ahead: a torn write.
	t.Run("append-more-than-ahead", func(t *testing.T) {
		var size int64
		nl, path, _ := damaged(t, l, file, func(b []byte) []byte {
			size = int64(len(b))
			return append(b, make([]byte, maxAhead+1)...)
		})
		j := nl.open(t, Options{SegmentSize: 1024})
		defer j.Close()
		if r := j.Repair(); r == nil || r.File != path || r.Offset != size || r.CutBytes != maxAhead+1 {
			t.Fatalf("Repair = %+v, want %s cut at %d, %d bytes", r, path, size, maxAhead+1)
		}
		checkReplay(t, j, 1, last)
	})
	// The file's size reached the disk, its last entry's data did not: from
	// the entry's start, that is zeros after the entry before it.
	start := offsets[len(offsets)-1]
	t.Run("zeroed-after-0", func(t *testing.T) {
		nl, path, _ := damaged(t, l, file, func(b []byte) []byte {
			clear(b[start:])
			return b
		})
		checkZerosCut(t, nl, path, start, last-1)
	})
	for _, keep := range []int64{1, 5, 20} {
		t.Run(fmt.Sprintf("zeroed-after-%d", keep), func(t *testing.T) {
			nl, path, data := damaged(t, l, file, func(b []byte) []byte {
				clear(b[start+keep:])
				return b
			})
			checkRepaired(t, nl, path, data, start, last-1)
		})
	}
}

func TestGarbageTail(t *testing.T) {
	l, last, file, _ := pristine(t, 1024, 60)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 3, 13, 100, 1000, 8000} {
		for _, kind := range []string{"random", "long-length", "short-frame"} {
			t.Run(fmt.Sprintf("%s%d", kind, n), func(t *testing.T) {
				var size int64
				nl, path, data := damaged(t, l, file, func(b []byte) []byte {
					size = int64(len(b))
					g := make([]byte, n)
					for i := range g {
						g[i] = byte(rng.Uint32())
					}
					switch kind {
					case "long-length": // a length running past the end
						g = append([]byte{0xff, 0xff, 0x03}, g...)
					case "short-frame": // a complete entry too short to be a frame
						g = append([]byte{5, 1, 2, 3, 4, 5}, g...)
					}
					return append(b, g...)
				})
				checkRepaired(t, nl, path, data, size, last)
			})
		}
	}
}

// TestCorruptLastFileNotRepaired damages an entry in the middle of the last
// file: valid entries follow it, so it is corruption, not a torn tail.
func TestCorruptLastFileNotRepaired(t *testing.T) {
	l, last, file, offsets := pristine(t, 1024, 60)
	if len(offsets) < 4 {
		t.Fatalf("last file holds %d entries; want at least 4", len(offsets))
	}
	k := len(offsets) / 2
	off := offsets[k]
	seq := last - uint64(len(offsets)-1-k)
	for _, c := range []struct {
		name string
		at   int64 // byte to flip, from the entry's start
		bit  byte
	}{
		{"length-high-bit", 0, 0x80},
		{"length-low-bit", 0, 0x01},
		{"crc", 2, 0x10},
		{"seq", 5, 0x01},
		{"seq-high", 12, 0x40},
		{"payload", 15, 0x04},
	} {
		t.Run(c.name, func(t *testing.T) {
			nl, path, data := damaged(t, l, file, func(b []byte) []byte {
				b[off+c.at] ^= c.bit
				return b
			})
			_, err := Open(nl.journal, nl.broken, Options{SegmentSize: 1024})
			var cerr *CorruptError
			if !errors.Is(err, ErrCorrupt) || !errors.As(err, &cerr) {
				t.Fatalf("Open: %v, want a *CorruptError", err)
			}
			t.Log(err)
			if cerr.File != path || cerr.Offset != off || cerr.Seq != seq || cerr.Torn {
				t.Fatalf("CorruptError %+v, want file %s offset %d seq %d, not torn", cerr, path, off, seq)
			}
			if now, _ := os.ReadFile(path); !bytes.Equal(now, data) {
				t.Fatal("Open changed the damaged file")
			}
			if _, err := os.Stat(nl.broken); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("Open made a broken copy: %v", err)
			}
		})
	}
}

// TestCorruptEarlierSegment damages a segment before the last: Open does not
// look at it, Replay reports it.
func TestCorruptEarlierSegment(t *testing.T) {
	l, _, _, _ := pristine(t, 1024, 60)
	files, _ := Files(l.journal)
	if len(files) < 3 {
		t.Fatalf("%d files, want at least 3", len(files))
	}
	victim := files[1]
	var entries []Entry
	for e, err := range ReadFile(victim) {
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	k := len(entries) / 2
	bad := entries[k]
	for _, c := range []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"payload-bit", func(b []byte) []byte { b[bad.Offset+14] ^= 0x20; return b }},
		{"length-byte", func(b []byte) []byte { b[bad.Offset] ^= 0x02; return b }},
		{"cut-short", func(b []byte) []byte { return b[:bad.Offset+3] }},
		{"emptied", func(b []byte) []byte { return b[:0] }},
	} {
		t.Run(c.name, func(t *testing.T) {
			nl, path, _ := damaged(t, l, victim, c.damage)
			j := nl.open(t, Options{SegmentSize: 1024})
			defer j.Close()
			var got uint64
			err := j.Replay(0, func(seq uint64, payload []byte) error {
				got = seq
				return nil
			})
			var cerr *CorruptError
			if !errors.Is(err, ErrCorrupt) || !errors.As(err, &cerr) {
				t.Fatalf("Replay: %v, want a *CorruptError", err)
			}
			t.Log(err)
			if cerr.File != path || cerr.Seq > bad.Seq || cerr.Seq < entries[0].Seq {
				t.Fatalf("CorruptError %+v, want file %s and a seq in [%d, %d]", cerr, path, entries[0].Seq, bad.Seq)
			}
			if got >= cerr.Seq {
				t.Errorf("Replay delivered seq %d, at or after the damage at %d", got, cerr.Seq)
			}
			// Entries in later segments still replay.
			next := entries[len(entries)-1].Seq + 1
			if err := j.Replay(next, func(uint64, []byte) error { return nil }); err != nil {
				t.Errorf("Replay(%d) past the damage: %v", next, err)
			}
		})
	}
}

// TestInterruptedTruncateFront leaves what a crash inside tidwall's
// TruncateFront leaves (a ".START" file, a stale temp file) and a torn tail.
func TestInterruptedTruncateFront(t *testing.T) {
	l, last, file, offsets := pristine(t, 1024, 60)
	files, _ := Files(l.journal)

	// The truncation of an earlier segment got as far as its START file;
	// tidwall finishes it. The torn tail is ours to repair.
	var startSeq uint64
	var startData []byte
	for e, err := range ReadFile(files[1]) {
		if err != nil {
			t.Fatal(err)
		}
		if startSeq == 0 && e.Offset > 0 {
			startSeq = e.Seq
			all, _ := os.ReadFile(files[1])
			startData = all[e.Offset:]
		}
	}
	nl, path, data := damaged(t, l, file, func(b []byte) []byte { return b[:len(b)-2] })
	if err := os.WriteFile(filepath.Join(nl.journal, segmentName(startSeq)+".START"), startData, 0o640); err != nil {
		t.Fatal(err)
	}
	temp := filepath.Join(nl.journal, segmentName(startSeq+1)+".START.TEMP")
	if err := os.WriteFile(temp, []byte("half written"), 0o640); err != nil {
		t.Fatal(err)
	}

	j := nl.open(t, Options{SegmentSize: 1024})
	defer j.Close()
	if r := j.Repair(); r == nil || r.File != path || r.Offset != offsets[len(offsets)-1] || r.CutBytes != int64(len(data))-r.Offset {
		t.Fatalf("Repair = %+v", r)
	}
	if _, err := os.Stat(temp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temp file: %v", err)
	}
	checkReplay(t, j, startSeq, last-1)
	checkSizes(t, j)
}
