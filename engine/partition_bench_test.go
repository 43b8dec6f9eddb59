package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ebbdb/ebb/engine"
)

// BenchmarkPartition compares a container with a partition key (item keys
// are composites of key value and id) with one without, on point upserts
// and reads of 10,000 items of ~200 bytes, NoSync:
//
//	go test ./engine -run '^$' -bench BenchmarkPartition
func BenchmarkPartition(b *testing.B) {
	const n = 10000
	ctx := context.Background()
	for _, path := range []string{"", "/tenant"} {
		name := "plain"
		if path != "" {
			name = "keyed"
		}
		db, err := engine.Open(b.TempDir(), &engine.Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "c", PartitionKeyPath: path})
		if err != nil {
			b.Fatal(err)
		}
		docs := make([][]byte, n)
		parts := make([]*engine.Partition, n)
		ids := make([]string, n)
		for i := range docs {
			tenant := fmt.Sprintf("tenant-%03d", i%100)
			ids[i] = fmt.Sprintf("item-%05d", i)
			docs[i] = fmt.Appendf(nil, `{"id":%q,"tenant":%q,"n":%d,"s":"some text that pads the document to a couple of hundred bytes","tags":["a","b","c"]}`, ids[i], tenant, i)
			parts[i] = c.Partition(engine.NoneKey())
			if path != "" {
				parts[i] = c.Partition(engine.StringKey(tenant))
			}
		}
		for i := range docs {
			if _, err := parts[i].Upsert(ctx, docs[i]); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(name+"/upsert", func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := parts[i%n].Upsert(ctx, docs[i%n]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(name+"/read", func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := parts[i%n].Read(ctx, ids[i%n]); err != nil {
					b.Fatal(err)
				}
				i = (i + 7919) % n
			}
		})
		db.Close()
	}
}
