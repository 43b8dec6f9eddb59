package engine

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// BenchmarkQueryCost is the shape of bench/'s query workload inside the
// engine: EBB_QUERY_BENCH_N items (default 100000) of about 750 bytes,
// every odd one expired, answered with every row discarded. Besides ns/op
// it reports cpu-ns/op, the query goroutine's own CPU time (its thread's),
// which other work on a shared machine disturbs less than the time taken.
//
//	go test ./engine -run '^$' -bench QueryCost -benchtime 2s
func BenchmarkQueryCost(b *testing.B) {
	n := benchQueryN()
	pad := strings.Repeat("x", 600)
	users := max(n/100, 1)
	db, c := loadHalfExpired(b, n, func(j int) []byte {
		return fmt.Appendf(nil, `{"id":"q-%08d","user":"user-%05d","n":%d,"cat":"cat-%d","body":"%s"}`, j, j%users, j*7919%n, j%10, pad)
	})
	defer db.Close()
	ctx := context.Background()
	for _, q := range []struct {
		name, sql string
		params    []Param
	}{
		{"top10", `SELECT TOP 10 * FROM c ORDER BY c.n DESC`, nil},
		{"eq", `SELECT * FROM c WHERE c.user = @v`, []Param{{"@v", "user-00042"}}},
		{"range", `SELECT * FROM c WHERE c.n >= @lo AND c.n < @hi`, []Param{{"@lo", n / 3}, {"@hi", n/3 + 1000}}},
		{"10pct", `SELECT * FROM c WHERE c.cat = @v`, []Param{{"@v", "cat-4"}}},
	} {
		b.Run(q.name, func(b *testing.B) {
			rows := 0
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPU()
			for b.Loop() {
				rows = 0
				for _, err := range c.Query(ctx, q.sql, q.params...) {
					if err != nil {
						b.Fatal(err)
					}
					rows++
				}
			}
			b.ReportMetric(float64(threadCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(rows), "rows")
		})
	}
}
