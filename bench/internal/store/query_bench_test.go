package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/ebbdb/ebb/bench/internal/gen"
)

// BenchmarkQueryStores times each query store's answer to the query
// workload's queries, with every returned document discarded (store) and
// decoded as the workload decodes it (decode), so that the store's own
// share is seen apart from the application's. Half of the documents have
// expired. EBB_BENCH_QUERY_N sets the size (default 20000).
func BenchmarkQueryStores(b *testing.B) {
	n := 20_000
	if v, err := strconv.Atoi(os.Getenv("EBB_BENCH_QUERY_N")); err == nil && v > 0 {
		n = v
	}
	g := gen.NewQueryDocs(750)
	users := max(n/100, 1)
	for _, name := range QueryNames() {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			s, err := OpenQuery(name, b.TempDir(), Options{NoSync: true}, []string{"user", "n", "cat"})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var items []Item
			for i := range n {
				f := gen.QueryFields{ID: gen.Key("q-", uint64(i)), User: fmt.Sprintf("user-%05d", i%users),
					N: int64(i * 7919 % n), Cat: fmt.Sprintf("cat-%d", i%10), Body: uint64(i)}
				if i%2 == 1 {
					f.TTL = 1
				}
				items = append(items, Item{Key: f.ID, Value: g.Doc(f), TTL: f.TTL})
				if len(items) == 100 {
					if err := s.Put(ctx, items); err != nil {
						b.Fatal(err)
					}
					items = items[:0]
				}
			}
			time.Sleep(2100 * time.Millisecond)
			queries := []struct {
				name string
				q    Query
			}{
				{"eq", Query{Kind: QueryEqual, Prop: "user", Value: "user-00042"}},
				{"range", Query{Kind: QueryRange, Prop: "n", Lo: int64(n / 3), Hi: int64(n/3 + 1000)}},
				{"top10", Query{Kind: QueryTop, Prop: "n", K: 10}},
				{"count", Query{Kind: QueryCount, Prop: "cat", Value: "cat-4"}},
				{"10pct", Query{Kind: QueryEqual, Prop: "cat", Value: "cat-4"}},
			}
			for _, q := range queries {
				for _, mode := range []string{"store", "decode"} {
					b.Run(q.name+"/"+mode, func(b *testing.B) {
						var fn func([]byte) error
						if q.q.Kind != QueryCount {
							fn = func([]byte) error { return nil }
							if mode == "decode" {
								fn = func(doc []byte) error {
									var d struct {
										ID   string `json:"id"`
										User string `json:"user"`
										N    int64  `json:"n"`
										Cat  string `json:"cat"`
									}
									return json.Unmarshal(doc, &d)
								}
							}
						}
						rows := 0
						// The query's own CPU time: on a shared machine,
						// steadier than the time taken.
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
						cpu0 := threadCPU()
						for b.Loop() {
							r, err := s.Query(ctx, q.q, fn)
							if err != nil {
								b.Fatal(err)
							}
							rows = r
						}
						b.ReportMetric(float64(threadCPU()-cpu0)/float64(b.N), "cpu-ns/op")
						b.ReportMetric(float64(rows), "rows")
					})
				}
			}
		})
	}
}
