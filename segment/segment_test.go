package segment

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// genRecords returns n varied records of container c, seqs in random order.
func genRecords(rng *rand.Rand, n int, c uint32) []Record {
	recs := make([]Record, n)
	for i := range recs {
		r := &recs[i]
		r.Container = c
		r.Seq = rng.Uint64() >> rng.IntN(64)
		r.TS = 1_700_000_000 + rng.Int64N(1_000_000)
		r.TTL = []int32{0, -1, 1, 60, 3600, 1 << 30}[rng.IntN(6)]
		r.ID = fmt.Sprintf("%s-%d", []string{"item", "ключ", "🔑", ""}[rng.IntN(4)], rng.IntN(n*2))
		if rng.IntN(5) == 0 {
			r.Op = OpDelete
			continue
		}
		r.Op = OpPut
		body := fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("ab", rng.IntN(200)))
		r.Body = []byte(body)
	}
	return recs
}

// writeSegment writes recs to a new segment in dir and returns its path,
// the handles Add returned and Finish's Stats.
func writeSegment(t testing.TB, dir string, recs []Record, opts WriterOptions) (string, []Handle, Stats) {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("%06d.seg", rand.IntN(1e6)))
	w, err := Create(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	hs := make([]Handle, len(recs))
	for i := range recs {
		if hs[i], err = w.Add(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	st, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return path, hs, st
}

func wantStats(recs []Record, opts WriterOptions, fileBytes, blocks int64) Stats {
	s := Stats{Container: opts.Container, Compression: opts.Compression, FileBytes: fileBytes, Blocks: blocks}
	for i, r := range recs {
		if i == 0 {
			s.MinSeq, s.MaxSeq, s.MinTS, s.MaxTS = r.Seq, r.Seq, r.TS, r.TS
		}
		s.MinSeq, s.MaxSeq = min(s.MinSeq, r.Seq), max(s.MaxSeq, r.Seq)
		s.MinTS, s.MaxTS = min(s.MinTS, r.TS), max(s.MaxTS, r.TS)
		s.Records++
		if r.Op == OpPut {
			s.Puts++
		} else {
			s.Deletes++
		}
		s.RawBytes += int64(RecordSize(&r))
	}
	return s
}

func TestWriterReaderRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range compressions {
		for _, bs := range []int{64, 1000, DefaultBlockSize, 1 << 20} {
			t.Run(fmt.Sprintf("%s/%d", c, bs), func(t *testing.T) {
				recs := genRecords(rng, 500, 9)
				big := Record{Op: OpPut, Container: 9, Seq: 1, ID: "big", Body: bytes.Repeat([]byte("0123456789"), 2*bs)}
				recs = append(recs[:250], append([]Record{big}, recs[250:]...)...)
				opts := WriterOptions{BlockSize: bs, Compression: c, Container: 9}
				path, hs, st := writeSegment(t, t.TempDir(), recs, opts)
				checkSegment(t, path, recs, hs, st, opts)
				if hs[250].Off != 0 || hs[251].Off != 0 || hs[251].Block != hs[250].Block+1 {
					t.Errorf("big record does not have a block of its own: %v %v %v", hs[249], hs[250], hs[251])
				}
			})
		}
	}
}

func TestEmptySegment(t *testing.T) {
	opts := DefaultWriterOptions()
	path, _, st := writeSegment(t, t.TempDir(), nil, opts)
	checkSegment(t, path, nil, nil, st, opts)
}

// checkSegment checks everything a Reader says about the file at path
// against the records that were written.
func checkSegment(t *testing.T, path string, recs []Record, hs []Handle, st Stats, opts WriterOptions) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := wantStats(recs, opts, fi.Size(), st.Blocks); st != want {
		t.Fatalf("Finish stats %+v\nwant %+v", st, want)
	}
	for _, cache := range []*Cache{nil, NewCache(1<<20, 0)} {
		r, err := Open(path, ReaderOptions{Cache: cache, FileNum: 5})
		if err != nil {
			t.Fatal(err)
		}
		if r.Stats() != st || r.Path() != path {
			t.Fatalf("Stats %+v, want %+v", r.Stats(), st)
		}
		if err := r.Verify(); err != nil {
			t.Fatal(err)
		}
		idx, err := r.Index()
		if err != nil {
			t.Fatal(err)
		}
		if len(idx) != len(recs) {
			t.Fatalf("%d index entries, want %d", len(idx), len(recs))
		}
		// AppendIndex keeps what dst holds and adds the same entries, over
		// stale ones in dst's spare capacity too.
		stale := []IndexEntry{{ID: "kept", Seq: 1}}
		stale = append(stale, make([]IndexEntry, len(recs)+1)...)
		for i := range stale[1:] {
			stale[1+i] = IndexEntry{Op: OpDelete, Seq: 99, TS: 99, TTL: 99, ID: "stale", Handle: Handle{99, 99}, Size: 99}
		}
		app, err := r.AppendIndex(stale[:1])
		if err != nil {
			t.Fatal(err)
		}
		if len(app) != 1+len(recs) || app[0].ID != "kept" || !reflect.DeepEqual(app[1:], idx) && len(recs) > 0 {
			t.Fatalf("AppendIndex = %d entries (first %+v), want the kept one and Index's %d", len(app), app[0], len(idx))
		}
		if in, err := r.AppendIndexIn(nil, NewIDArena(int64(len(recs)))); err != nil || !reflect.DeepEqual(in, idx) {
			t.Fatalf("AppendIndexIn with an arena = %v, %v; want Index's entries", len(in), err)
		}
		var kept []RecordAt
		for at, err := range r.Records() {
			if err != nil {
				t.Fatal(err)
			}
			kept = append(kept, at)
		}
		if len(kept) != len(recs) {
			t.Fatalf("Records yielded %d, want %d", len(kept), len(recs))
		}
		for i, at := range kept { // Bodies stay valid after the loop
			e := idx[i]
			if !reflect.DeepEqual(at.Record, recs[i]) || at.Handle != hs[i] || at.Offset != r.offs[at.Handle.Block] {
				t.Fatalf("record %d: got %+v at %s", i, at.Record, at.Handle)
			}
			want := IndexEntry{Op: recs[i].Op, Seq: recs[i].Seq, TS: recs[i].TS, TTL: recs[i].TTL,
				ID: recs[i].ID, Handle: hs[i], Size: uint32(RecordSize(&recs[i]))}
			if e != want {
				t.Fatalf("index entry %d: %+v, want %+v", i, e, want)
			}
		}
		for pass := range 2 { // the second pass hits the cache
			for i, h := range hs {
				var got Record
				if err := r.Get(h, &got); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, recs[i]) {
					t.Fatalf("pass %d: Get(%s) = %+v, want %+v", pass, h, got, recs[i])
				}
			}
		}
		var got Record
		if err := r.Get(Handle{Block: uint32(st.Blocks)}, &got); err == nil {
			t.Error("Get of a block past the end succeeded")
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if cache != nil && cache.Len() != 0 {
			t.Errorf("Close left %d blocks in the cache", cache.Len())
		}
	}
}

// TestGetBodyOutlivesEviction: a Body that Get served from the cache
// aliases the cached block, so the block must never be written again: after
// the cache evicts it (here by dropping the file's blocks, then by filling
// the cache with other blocks), the Body still holds the record. Without a
// cache, Get returns a Body of its own that a later Get does not touch.
func TestGetBodyOutlivesEviction(t *testing.T) {
	recs := genRecords(rand.New(rand.NewPCG(3, 4)), 200, 0)
	for i := range recs {
		recs[i].Op, recs[i].Body = OpPut, []byte(fmt.Sprintf(`{"i":%d,"pad":"%0200d"}`, i, i))
	}
	opts := WriterOptions{Compression: CompressionS2, BlockSize: 4096}
	path, hs, _ := writeSegment(t, t.TempDir(), recs, opts)
	for _, cache := range []*Cache{NewCache(8<<10, 0), nil} {
		r, err := Open(path, ReaderOptions{Cache: cache, FileNum: 1})
		if err != nil {
			t.Fatal(err)
		}
		got := make([]Record, len(recs))
		for i, h := range hs {
			if err := r.Get(h, &got[i]); err != nil {
				t.Fatal(err)
			}
		}
		if cache != nil {
			cache.EvictFile(1, uint32(r.Stats().Blocks))
		}
		for i, h := range hs { // refill the cache (8 KiB: two blocks) many times over
			var again Record
			if err := r.Get(h, &again); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again.Body, recs[i].Body) {
				t.Fatalf("cache %v: Get(%s) after eviction = %q", cache != nil, h, again.Body)
			}
		}
		for i := range recs {
			if !bytes.Equal(got[i].Body, recs[i].Body) || got[i].ID != recs[i].ID {
				t.Fatalf("cache %v: record %d changed after its block was evicted: %q %q", cache != nil, i, got[i].ID, got[i].Body)
			}
		}
		r.Close()
	}
}

func TestWriterErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.seg")
	w, err := Create(path, WriterOptions{Container: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Create(path, WriterOptions{}); !errors.Is(err, os.ErrExist) {
		t.Errorf("Create over an existing file: %v", err)
	}
	if _, err := w.Add(&Record{Op: OpPut, Container: 2, ID: "a"}); err == nil {
		t.Error("record of another container accepted")
	}
	if _, err := w.Add(&Record{Op: 0, Container: 1, ID: "a"}); err == nil {
		t.Error("invalid op accepted")
	}
	if _, err := w.Add(&Record{Op: OpPut, Container: 1, ID: "a", Body: make([]byte, MaxBlockSize)}); err == nil {
		t.Error("record over MaxBlockSize accepted")
	}
	if _, err := w.Add(&Record{Op: OpPut, Container: 1, ID: "a", Body: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	if w.Size() <= fileHeaderSize {
		t.Errorf("Size = %d", w.Size())
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Abort left the file: %v", err)
	}
	if _, err := w.Add(&Record{Op: OpPut, Container: 1}); err == nil {
		t.Error("Add after Abort succeeded")
	}
	for _, opts := range []WriterOptions{{BlockSize: -1}, {BlockSize: MaxBlockSize + 1}, {Compression: 9}} {
		if _, err := Create(filepath.Join(dir, "y.seg"), opts); err == nil {
			t.Errorf("Create accepted %+v", opts)
		}
	}
	// Finish, then Abort, leaves the file in place.
	w, err = Create(path, DefaultWriterOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(); err == nil {
		t.Error("second Finish succeeded")
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Error("Abort after Finish removed the file")
	}
	if _, err := Open(filepath.Join(dir, "missing"), ReaderOptions{}); err == nil || errors.Is(err, ErrCorrupt) {
		t.Errorf("Open of a missing file: %v", err)
	}
}

func TestConcurrentReads(t *testing.T) {
	recs := genRecords(rand.New(rand.NewPCG(5, 6)), 2000, 0)
	path, hs, _ := writeSegment(t, t.TempDir(), recs, WriterOptions{BlockSize: 2048, Compression: CompressionZstd})
	r, err := Open(path, ReaderOptions{Cache: NewCache(64<<10, 0), FileNum: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 0))
			var got Record
			for range 2000 {
				i := rng.IntN(len(hs))
				if err := r.Get(hs[i], &got); err != nil || !reflect.DeepEqual(got, recs[i]) {
					t.Errorf("Get(%s): %v", hs[i], err)
					return
				}
			}
			switch g {
			case 0:
				if err := r.Verify(); err != nil {
					t.Error(err)
				}
			case 1:
				if _, err := r.Index(); err != nil {
					t.Error(err)
				}
			case 2:
				for _, err := range r.Records() {
					if err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
}

// benchSegment writes a segment of n records like benchRecord.
func benchSegment(b *testing.B, n int) (string, []Handle) {
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = benchRecord
		recs[i].ID = fmt.Sprintf("session-%010d", i)
		recs[i].Seq = uint64(i)
	}
	opts := DefaultWriterOptions()
	opts.Container = benchRecord.Container
	path, hs, _ := writeSegment(b, b.TempDir(), recs, opts)
	return path, hs
}

func BenchmarkGetCached(b *testing.B) {
	path, hs := benchSegment(b, 100_000)
	r, err := Open(path, ReaderOptions{Cache: NewCache(1<<30, 0), FileNum: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var rec Record
	for i, h := range hs { // warm the cache
		if err := r.Get(h, &rec); err != nil {
			b.Fatal(err)
		}
		if i%32 == 31 {
			r.opts.Cache.settle(b)
		}
	}
	r.opts.Cache.settle(b)
	rng := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Get(hs[rng.IntN(len(hs))], &rec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetUncached(b *testing.B) {
	path, hs := benchSegment(b, 100_000)
	r, err := Open(path, ReaderOptions{}) // no cache: read and decompress a block per Get
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	var rec Record
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Get(hs[rng.IntN(len(hs))], &rec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriter(b *testing.B) {
	for _, c := range compressions {
		b.Run(c.String(), func(b *testing.B) {
			dir := b.TempDir()
			rec := benchRecord
			b.ReportAllocs()
			b.SetBytes(int64(RecordSize(&rec)))
			w, err := Create(filepath.Join(dir, "bench.seg"), WriterOptions{Compression: c, Container: rec.Container})
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				rec.Seq++
				if _, err := w.Add(&rec); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			st, err := w.Finish()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(st.RawBytes)/float64(st.FileBytes), "ratio")
		})
	}
}

// memMapped is a Mapped file held in a byte slice, as a mapping would be.
type memMapped []byte

func (m memMapped) Bytes() []byte { return m }
func (m memMapped) ReadAt(b []byte, off int64) (int, error) {
	if off >= int64(len(m)) {
		return 0, io.EOF
	}
	n := copy(b, m[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// TestMappedReader: a Reader over a Mapped file returns exactly what one
// reading the same bytes with ReadAt does, for every record through Get
// (with and without a cache), Records and Verify, in every codec; and what
// it returns never aliases the mapping: scribbling over the mapping after
// the reads changes none of them.
func TestMappedReader(t *testing.T) {
	for _, c := range compressions {
		t.Run(c.String(), func(t *testing.T) {
			recs := genRecords(rand.New(rand.NewPCG(7, 8)), 300, 0)
			path, hs, _ := writeSegment(t, t.TempDir(), recs, WriterOptions{Compression: c, BlockSize: 2048})
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, cache := range []*Cache{nil, NewCache(1<<20, 0)} {
				m := memMapped(bytes.Clone(b))
				r, err := NewReader(m, int64(len(m)), path, ReaderOptions{Cache: cache, FileNum: 9})
				if err != nil {
					t.Fatal(err)
				}
				if r.mapped == nil {
					t.Fatal("the Reader did not take the mapping")
				}
				got := make([]Record, len(recs))
				for i, h := range hs {
					if err := r.Get(h, &got[i]); err != nil {
						t.Fatal(err)
					}
				}
				var walked []Record
				for at, err := range r.Records() {
					if err != nil {
						t.Fatal(err)
					}
					walked = append(walked, at.Record)
				}
				if err := r.Verify(); err != nil {
					t.Fatal(err)
				}
				clear(m) // the mapping goes away
				for i := range recs {
					if !reflect.DeepEqual(got[i], recs[i]) || !reflect.DeepEqual(walked[i], recs[i]) {
						t.Fatalf("cache %v: record %d after the mapping changed: Get %+v, Records %+v, want %+v", cache != nil, i, got[i], walked[i], recs[i])
					}
				}
			}
		})
	}
}

// syncCounter is a File that counts fsyncs and the bytes written before
// each.
type syncCounter struct {
	bytes.Buffer
	syncs []int
}

func (s *syncCounter) Sync() error  { s.syncs = append(s.syncs, s.Len()); return nil }
func (s *syncCounter) Close() error { return nil }

// TestWriterSyncEvery: with SyncEvery set, a Writer fsyncs each time about
// that many more bytes reached the file (never more than two write chunks
// past it: bytes reach the file a chunk at a time), and once more at
// Finish; without it, only at Finish.
func TestWriterSyncEvery(t *testing.T) {
	recs := genRecords(rand.New(rand.NewPCG(9, 9)), 4000, 0)
	for _, every := range []int64{0, 64 << 10, 300 << 10} {
		f := &syncCounter{}
		w, err := NewWriter(f, "mem", WriterOptions{Compression: CompressionNone, SyncEvery: every}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range recs {
			if _, err := w.Add(&recs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		size := f.Len()
		if n := len(f.syncs); n == 0 || f.syncs[n-1] != size {
			t.Fatalf("SyncEvery %d: the last fsync (of %v) is not at the end, %d bytes", every, f.syncs, size)
		}
		if every == 0 {
			if len(f.syncs) != 1 {
				t.Fatalf("SyncEvery 0: %d fsyncs, want 1", len(f.syncs))
			}
			continue
		}
		prev := 0
		for _, at := range f.syncs[:len(f.syncs)-1] {
			if d := int64(at - prev); d < every || d >= every+2*writeChunk {
				t.Fatalf("SyncEvery %d: an fsync %d bytes after the one before (%v)", every, d, f.syncs)
			}
			prev = at
		}
		if int64(size-prev) >= every+2*writeChunk {
			t.Fatalf("SyncEvery %d: %d bytes written after the last intermediate fsync", every, size-prev)
		}
	}
}
