package measure

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestDiskUsage(t *testing.T) {
	dir := t.TempDir()
	write := func(p string, n int) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "a"), 10000)
	write(filepath.Join(dir, "sub", "b"), 5000)
	write(filepath.Join(dir, "sub", "deeper", "c"), 1)
	// A sparse file: 64 MiB apparent, nothing written.
	f, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	d, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.Files != 4 {
		t.Errorf("files %d, want 4", d.Files)
	}
	if want := int64(10000 + 5000 + 1 + 64<<20); d.Apparent != want {
		t.Errorf("apparent %d, want %d", d.Apparent, want)
	}
	// Allocated counts whole blocks of what was written, and little or
	// nothing of the sparse file.
	if d.Allocated < 15001 || d.Allocated > 1<<20 {
		t.Errorf("allocated %d, want between 15001 and 1 MiB", d.Allocated)
	}
	if DiskBytes(dir) != d.Allocated {
		t.Errorf("DiskBytes differs from DiskUsage")
	}
	if _, err := DiskUsage(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("missing dir: no error")
	}
	if DiskBytes(filepath.Join(dir, "missing")) != 0 {
		t.Errorf("missing dir: DiskBytes not 0")
	}
}

// TestDiskUsageWhileDeleting: files vanishing during the walk are skipped.
func TestDiskUsageWhileDeleting(t *testing.T) {
	dir := t.TempDir()
	for i := range 200 {
		os.WriteFile(filepath.Join(dir, "f"+string(rune('a'+i%26))+string(rune('a'+i/26))), []byte("x"), 0o644)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}()
	for range 20 {
		if _, err := DiskUsage(dir); err != nil {
			t.Fatalf("walk during deletes: %v", err)
		}
	}
	wg.Wait()
}

func TestHistogramSummary(t *testing.T) {
	h := NewHistogram()
	if s := h.Summary(); s != (Summary{}) {
		t.Fatalf("empty summary %+v", s)
	}
	// 1..1000 µs, once each.
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	s := h.Summary()
	near := func(name string, got, want float64) {
		t.Helper()
		if got < want*0.99 || got > want*1.01 {
			t.Errorf("%s = %v, want %v ±1%%", name, got, want)
		}
	}
	if s.Count != 1000 {
		t.Errorf("count %d", s.Count)
	}
	near("p50", s.P50, 500)
	near("p99", s.P99, 990)
	near("p999", s.P999, 999)
	near("max", s.Max, 1000)
	near("mean", s.Mean, 500.5)

	// Sub-microsecond values keep their precision.
	f := NewHistogram()
	f.Record(250 * time.Nanosecond)
	near("sub-µs p50", f.Summary().P50, 0.25)

	// Out of range values are clamped, not lost.
	h.Record(0)
	h.Record(time.Hour)
	if c := h.Count(); c != 1002 {
		t.Errorf("count after clamped records %d", c)
	}
	if m := h.Summary().Max; m < float64(9*time.Minute/time.Microsecond) || m > float64(11*time.Minute/time.Microsecond) {
		t.Errorf("max after an hour-long record: %v µs", m)
	}

	o := NewHistogram()
	o.Record(5 * time.Second)
	o.Merge(h)
	if o.Count() != 1003 {
		t.Errorf("merged count %d", o.Count())
	}
}

func TestHistogramConcurrent(t *testing.T) {
	h := NewHistogram()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				h.Record(time.Duration(w*1000+i) * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	if h.Count() != 8000 {
		t.Fatalf("count %d", h.Count())
	}
}

func TestDescribe(t *testing.T) {
	m := Describe(t.TempDir())
	if m.Cores < 1 || m.Go == "" || m.OS == "" {
		t.Fatalf("machine %+v", m)
	}
	t.Logf("%+v", m)
}

func TestHeap(t *testing.T) {
	before := Heap()
	keep := make([][]byte, 1000)
	for i := range keep {
		keep[i] = make([]byte, 1024)
	}
	after := Heap()
	if d := after - before; d < 900*1024 {
		t.Errorf("heap grew by %d bytes holding 1 MiB", d)
	}
	_ = keep[999][0]
}
