package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/ebbdb/ebb/bench/internal/gen"
	"github.com/ebbdb/ebb/bench/internal/store"
)

// BenchmarkDecodeRows times the query workload's decoding of one returned
// document (runQuery's json.Unmarshal into a qdoc) for the rows each
// query store returns for the same documents: the part of every query
// row's latency that the application pays, not the store. ebb's rows carry
// Cosmos DB's system properties (_ts and _etag) besides the document;
// BuntDB's are the stored document itself. The stores' rows are decoded
// in turn, each timed on its own, so that a busy machine slows both alike;
// it reports ns and bytes per row of each, and ebb's time over BuntDB's.
func BenchmarkDecodeRows(b *testing.B) {
	g := gen.NewQueryDocs(750)
	names := store.QueryNames()
	rows := make([][][]byte, len(names))
	for i, name := range names {
		rows[i] = queryRows(b, name, g, 200)
	}
	took := make([]time.Duration, len(names))
	size := make([]int, len(names))
	n := 0
	for b.Loop() {
		for j := range names {
			i := (j + n) % len(names) // each store first in turn
			row := rows[i][n%len(rows[i])]
			start := time.Now()
			var d qdoc
			if err := json.Unmarshal(row, &d); err != nil {
				b.Fatal(err)
			}
			took[i] += time.Since(start)
			size[i] += len(row)
		}
		n++
	}
	for i, name := range names {
		b.ReportMetric(float64(took[i].Nanoseconds())/float64(n), name+"-ns/row")
		b.ReportMetric(float64(size[i])/float64(n), name+"-B/row")
	}
	if len(names) == 2 {
		b.ReportMetric(float64(took[0])/float64(took[1]), names[0]+"/"+names[1])
	}
}

// queryRows stores n query documents in a fresh store name and returns
// copies of the rows an equality query returns for them, in id order.
func queryRows(b *testing.B, name string, g *gen.QueryDocs, n int) [][]byte {
	ctx := context.Background()
	s, err := store.OpenQuery(name, b.TempDir(), store.Options{NoSync: true}, []string{"user", "n", "cat"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var items []store.Item
	for i := range n {
		f := gen.QueryFields{ID: gen.Key("q-", uint64(i)), TTL: 3600, User: "user-1", N: int64(i), Cat: fmt.Sprint("cat-", i%10), Body: uint64(i)}
		items = append(items, store.Item{Key: f.ID, Value: g.Doc(f), TTL: f.TTL})
	}
	if err := s.Put(ctx, items); err != nil {
		b.Fatal(err)
	}
	var rows [][]byte
	if _, err := s.Query(ctx, store.Query{Kind: store.QueryEqual, Prop: "user", Value: "user-1"}, func(doc []byte) error {
		rows = append(rows, bytes.Clone(doc))
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	if len(rows) != n {
		b.Fatalf("%s: %d rows, want %d", name, len(rows), n)
	}
	return rows
}
