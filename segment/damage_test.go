package segment

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// smallSegment returns the bytes of a small segment of several blocks, its
// records and their handles.
func smallSegment(t testing.TB, c Compression) ([]byte, []Record, []Handle) {
	recs := genRecords(rand.New(rand.NewPCG(7, uint64(c))), 12, 4)
	for i := range recs {
		if recs[i].Body != nil {
			recs[i].Body = recs[i].Body[:min(len(recs[i].Body), 60)]
		}
	}
	path, hs, _ := writeSegment(t, t.TempDir(), recs, WriterOptions{BlockSize: 150, Compression: c, Container: 4})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b, recs, hs
}

// mustCorrupt fails unless err wraps ErrCorrupt and is a *CorruptError.
func mustCorrupt(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: err = %v, want ErrCorrupt", what, err)
	}
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("%s: err = %v (%T), want a *CorruptError", what, err, err)
	}
}

// TestFlipEveryByte damages a segment one byte at a time. Every read must
// return an error wrapping ErrCorrupt or the original data, and Verify must
// always find the damage.
func TestFlipEveryByte(t *testing.T) {
	for _, c := range compressions {
		t.Run(c.String(), func(t *testing.T) {
			orig, recs, hs := smallSegment(t, c)
			r0, err := NewReader(bytes.NewReader(orig), int64(len(orig)), "orig", ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r0.Stats().Blocks < 3 {
				t.Fatalf("only %d blocks", r0.Stats().Blocks)
			}
			idx0, err := r0.Index()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "damaged.seg")
			masks := []byte{0x01, 0x80, 0xff}
			if testing.Short() {
				masks = masks[:1]
			}
			for i := range orig {
				for _, mask := range masks {
					b := bytes.Clone(orig)
					b[i] ^= mask
					if err := os.WriteFile(path, b, 0o644); err != nil {
						t.Fatal(err)
					}
					what := fmt.Sprintf("byte %d ^ %#x", i, mask)
					checkDamaged(t, what, path, recs, hs, idx0)
				}
			}
		})
	}
}

func checkDamaged(t *testing.T, what, path string, recs []Record, hs []Handle, idx0 []IndexEntry) {
	t.Helper()
	r, err := Open(path, ReaderOptions{Cache: NewCache(1<<20, 0), FileNum: 1})
	if err != nil {
		mustCorrupt(t, what+": Open", err)
		return
	}
	defer r.Close()
	if idx, err := r.Index(); err != nil {
		mustCorrupt(t, what+": Index", err)
	} else if !reflect.DeepEqual(idx, idx0) {
		t.Fatalf("%s: Index returned wrong data", what)
	}
	for j, h := range hs {
		var got Record
		if err := r.Get(h, &got); err != nil {
			mustCorrupt(t, what+": Get", err)
		} else if !reflect.DeepEqual(got, recs[j]) {
			t.Fatalf("%s: Get(%s) returned wrong data %+v", what, h, got)
		}
	}
	j := 0
	for at, err := range r.Records() {
		if err != nil {
			mustCorrupt(t, what+": Records", err)
			break
		}
		if !reflect.DeepEqual(at.Record, recs[j]) || at.Handle != hs[j] {
			t.Fatalf("%s: Records yielded wrong data at %d", what, j)
		}
		j++
	}
	mustCorrupt(t, what+": Verify", r.Verify())
}

// TestTruncateEveryLength cuts a segment at every length: Open must fail
// with ErrCorrupt. Growing it must fail too.
func TestTruncateEveryLength(t *testing.T) {
	for _, c := range compressions {
		orig, _, _ := smallSegment(t, c)
		path := filepath.Join(t.TempDir(), "cut.seg")
		for n := range len(orig) {
			if err := os.WriteFile(path, orig[:n], 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Open(path, ReaderOptions{})
			mustCorrupt(t, fmt.Sprintf("%s: truncated to %d", c, n), err)
		}
		for _, tail := range [][]byte{{0}, make([]byte, 4096), orig[len(orig)-footerSize:]} {
			if err := os.WriteFile(path, append(bytes.Clone(orig), tail...), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Open(path, ReaderOptions{})
			mustCorrupt(t, fmt.Sprintf("%s: %d bytes appended", c, len(tail)), err)
		}
	}
}

// TestBlockSwap exchanges two data blocks of equal length: each block's
// checksum still holds, so the reader must notice through the index.
func TestBlockSwap(t *testing.T) {
	recs := make([]Record, 6)
	for i := range recs {
		recs[i] = Record{Op: OpPut, Seq: uint64(i), ID: fmt.Sprintf("id%d", i), Body: []byte(fmt.Sprintf(`{"v":%d}`, i))}
	}
	path, _, _ := writeSegment(t, t.TempDir(), recs, WriterOptions{BlockSize: 1, Compression: CompressionNone})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(b), int64(len(b)), "x", ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := r.offs
	if o[1]-o[0] != o[2]-o[1] {
		t.Fatal("blocks differ in length")
	}
	swapped := bytes.Clone(b)
	copy(swapped[o[0]:o[1]], b[o[1]:o[2]])
	copy(swapped[o[1]:o[2]], b[o[0]:o[1]])
	r, err = NewReader(bytes.NewReader(swapped), int64(len(b)), "x", ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustCorrupt(t, "Verify of swapped blocks", r.Verify())
}

func FuzzSegment(f *testing.F) {
	for _, c := range compressions {
		b, _, _ := smallSegment(f, c)
		f.Add(b)
	}
	path := filepath.Join(f.TempDir(), "fuzz.seg") // inputs run one at a time per process
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		// A cache of its own, given back after the input: a cache's memory
		// lives outside the Go heap until Close, and millions of inputs
		// would otherwise exhaust the fuzzing process's memory.
		cache := NewCache(1<<20, 0)
		defer cache.Close()
		r, err := Open(path, ReaderOptions{Cache: cache, FileNum: 1})
		if err != nil {
			mustCorrupt(t, "Open", err)
			return
		}
		defer r.Close()
		idx, idxErr := r.Index()
		if idxErr != nil {
			mustCorrupt(t, "Index", idxErr)
		}
		var all []RecordAt
		var recErr error
		for at, err := range r.Records() {
			if err != nil {
				recErr = err
				mustCorrupt(t, "Records", err)
				break
			}
			all = append(all, at)
		}
		verr := r.Verify()
		if verr != nil {
			mustCorrupt(t, "Verify", verr)
			return
		}
		// A segment that verifies reads back consistently every way.
		if idxErr != nil || recErr != nil || len(idx) != len(all) {
			t.Fatalf("Verify passed but Index (%v) or Records (%v) failed", idxErr, recErr)
		}
		for i, e := range idx {
			var got Record
			if err := r.Get(e.Handle, &got); err != nil || !reflect.DeepEqual(got, all[i].Record) {
				t.Fatalf("Get(%s) = %+v, %v; Records says %+v", e.Handle, got, err, all[i].Record)
			}
		}
	})
}
