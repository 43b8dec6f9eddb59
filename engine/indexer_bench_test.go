package engine

import (
	"runtime"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine/query"
	"github.com/ebbdb/ebb/index"
)

// BenchmarkIndexWriteParts times the two halves of indexing a write of
// BenchmarkWriteBatch100's documents apart from the rest of the write:
// /terms computes a document's terms (outside the lock), /set files them in
// the index of a container of 200k items (under the lock), both per item.
func BenchmarkIndexWriteParts(b *testing.B) {
	p := docs1K()
	m, err := query.PathPolicy{}.Compile()
	if err != nil {
		b.Fatal(err)
	}
	cfg := &indexConfig{mode: IndexingConsistent, paths: m, terms: true}
	docs := make([][]byte, len(p.tails))
	for i := range docs {
		docs[i] = p.doc("doc-", uint64(i))
	}
	b.Run("terms", func(b *testing.B) {
		b.ReportAllocs()
		var l index.TermList
		for i := 0; b.Loop(); i++ {
			l.Reset()
			bodyTerms(docs[i%len(docs)], cfg, &l)
		}
	})
	b.Run("set", func(b *testing.B) {
		const n = 200_000
		lists := make([]*index.TermList, len(docs))
		for i := range lists {
			lists[i] = new(index.TermList)
			bodyTerms(docs[i], cfg, lists[i])
		}
		ids := make([]string, n)
		for i := range ids {
			ids[i] = string(perfID(nil, "doc-", uint64(i)))
		}
		var cpu time.Duration
		for b.Loop() {
			b.StopTimer()
			x := index.New(func(int64, int32) int64 { return index.Never })
			for i := range n {
				x.Put(index.Slot{ID: ids[i], Seq: uint64(i + 1)})
			}
			runtime.GC()
			b.StartTimer()
			start := cpuTime()
			for i := range n {
				x.SetTermList(ids[i], uint64(i+1), lists[i%len(lists)])
			}
			cpu += cpuTime() - start
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1000/float64(b.N*n), "µs/item")
		b.ReportMetric(float64(cpu)/float64(time.Microsecond)/float64(b.N*n), "cpu-µs/item")
	})
}
