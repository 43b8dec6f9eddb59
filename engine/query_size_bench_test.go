package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// longAndQuery is a WHERE of n ANDed conditions, half indexable (c.k10 >= 0)
// and half not (c.u != -1), about 11 bytes each.
func longAndQuery(n int) string {
	var b strings.Builder
	b.WriteString("SELECT VALUE c.id FROM c WHERE ")
	for i := range n {
		if i > 0 {
			b.WriteString(" AND ")
		}
		if i%2 == 0 {
			b.WriteString("c.k10>=0")
		} else {
			b.WriteString("c.u!=-1")
		}
	}
	return b.String()
}

// BenchmarkQuerySize runs a query of 1k, 10k and 40k ANDed conditions (up
// to ~470 KB, under query.MaxLength) over 200 items: parse, plan, index
// access and the re-check together. The cost per condition should stay
// flat as the query grows (it grew with the size before AND chains were
// one node). Run with:
//
//	go test ./engine -run '^$' -bench 'BenchmarkQuerySize' -benchtime 3x
func BenchmarkQuerySize(b *testing.B) {
	db, c := loadQueryData(b, IndexingConsistent, 200)
	defer db.Close()
	ctx := context.Background()
	for _, n := range []int{1000, 10_000, 40_000} {
		sql := longAndQuery(n)
		b.Run(fmt.Sprintf("conditions=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(sql)))
			for b.Loop() {
				results := 0
				for _, err := range c.Query(ctx, sql) {
					if err != nil {
						b.Fatal(err)
					}
					results++
				}
				if results != 200 {
					b.Fatalf("%d results, want 200", results)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/condition")
		})
	}
}
