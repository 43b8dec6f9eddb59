package measure

import (
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram records latencies from 1 ns to 10 minutes with 3 significant
// digits. It is safe for concurrent use.
type Histogram struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

const (
	histMin = 1                       // ns
	histMax = int64(10 * time.Minute) // ns
)

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{h: hdrhistogram.New(histMin, histMax, 3)}
}

// Record adds one latency. Values outside the range are clamped to it.
func (h *Histogram) Record(d time.Duration) {
	v := int64(d)
	v = min(max(v, histMin), histMax)
	h.mu.Lock()
	_ = h.h.RecordValue(v)
	h.mu.Unlock()
}

// Merge adds every value of o to h.
func (h *Histogram) Merge(o *Histogram) {
	o.mu.Lock()
	c := hdrhistogram.Import(o.h.Export())
	o.mu.Unlock()
	h.mu.Lock()
	h.h.Merge(c)
	h.mu.Unlock()
}

// Count is the number of values recorded.
func (h *Histogram) Count() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.h.TotalCount()
}

// Summary is a histogram's digest, latencies in microseconds.
type Summary struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean_us"`
	P50   float64 `json:"p50_us"`
	P99   float64 `json:"p99_us"`
	P999  float64 `json:"p999_us"`
	Max   float64 `json:"max_us"`
}

// Summary digests the histogram. An empty one gives all zeros.
func (h *Histogram) Summary() Summary {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.h.TotalCount() == 0 {
		return Summary{}
	}
	return Summary{
		Count: h.h.TotalCount(),
		Mean:  h.h.Mean() / 1e3,
		P50:   float64(h.h.ValueAtQuantile(50)) / 1e3,
		P99:   float64(h.h.ValueAtQuantile(99)) / 1e3,
		P999:  float64(h.h.ValueAtQuantile(99.9)) / 1e3,
		Max:   float64(h.h.Max()) / 1e3,
	}
}
