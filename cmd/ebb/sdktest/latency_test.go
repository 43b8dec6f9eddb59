package sdktest

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// latencies measures n point reads and n upserts of one ~200-byte item over
// loopback with the Go SDK and returns both samples, sorted.
func latencies(t testing.TB, n int) (reads, upserts []time.Duration) {
	s := startServer(t)
	db := newDatabase(t, s.client(t), "latency")
	c := newContainer(t, db, "items", "/pk", nil)
	ctx := context.Background()
	pk := azcosmos.NewPartitionKeyString("p")
	body := func(i int) []byte {
		return []byte(fmt.Sprintf(`{"id":"item","pk":"p","i":%d,"pad":"%0160d"}`, i, i))
	}
	if _, err := c.UpsertItem(ctx, pk, body(0), nil); err != nil {
		t.Fatalf("upsert: %v", err)
	}
	for i := 0; i < n; i++ {
		start := time.Now()
		if _, err := c.UpsertItem(ctx, pk, body(i), nil); err != nil {
			t.Fatalf("upsert %d: %v", i, err)
		}
		upserts = append(upserts, time.Since(start))
		start = time.Now()
		if _, err := c.ReadItem(ctx, pk, "item", nil); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		reads = append(reads, time.Since(start))
	}
	sort.Slice(reads, func(i, j int) bool { return reads[i] < reads[j] })
	sort.Slice(upserts, func(i, j int) bool { return upserts[i] < upserts[j] })
	return reads, upserts
}

// percentile returns the p-th percentile of a sorted sample.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted))+0.5) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

// TestLoopbackLatency logs p50 and p99 of point reads and upserts through
// the Go SDK (run with -v to see them). It asserts nothing about time: the
// numbers are for the record, and under -race they are several times those
// of a plain build. EBB_SDK_LATENCY_N sets the sample size (default 300).
func TestLoopbackLatency(t *testing.T) {
	t.Parallel()
	n := 300
	if v, err := strconv.Atoi(os.Getenv("EBB_SDK_LATENCY_N")); err == nil && v > 0 {
		n = v
	}
	reads, upserts := latencies(t, n)
	t.Logf("loopback, Go SDK, %d samples each: point read p50 %v p99 %v; upsert p50 %v p99 %v",
		n, percentile(reads, 50), percentile(reads, 99), percentile(upserts, 50), percentile(upserts, 99))
}

// BenchmarkLoopbackLatency reports the same percentiles as benchmark
// metrics: go test -run '^$' -bench LoopbackLatency -benchtime 2000x.
func BenchmarkLoopbackLatency(b *testing.B) {
	reads, upserts := latencies(b, b.N)
	b.ReportMetric(float64(percentile(reads, 50).Microseconds()), "read-p50-µs")
	b.ReportMetric(float64(percentile(reads, 99).Microseconds()), "read-p99-µs")
	b.ReportMetric(float64(percentile(upserts, 50).Microseconds()), "upsert-p50-µs")
	b.ReportMetric(float64(percentile(upserts, 99).Microseconds()), "upsert-p99-µs")
	b.ReportMetric(0, "ns/op")
}
