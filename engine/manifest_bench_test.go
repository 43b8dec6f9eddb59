package engine

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkCreateContainer measures one CreateContainer in a database that
// already holds 100, 1,000 or 10,000 containers. A create appends one edit
// to the MANIFEST, so the figure should be flat across the counts (the
// occasional full rewrite, when the edits outgrow the snapshot, is
// amortized over thousands of creates). The directory is on tmpfs where
// the machine has one, so the figure is the engine's work, not fsync
// latency. Run it with
//
//	go test ./engine -run '^$' -bench CreateContainer -benchtime 500x
func BenchmarkCreateContainer(b *testing.B) {
	for _, existing := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("existing=%d", existing), func(b *testing.B) {
			ctx := context.Background()
			clk := newFakeClock(t0)
			db := openTest(b, fastDir(b), clk, func(o *Options) { o.CompactionInterval = -1 })
			defer db.Close()
			for i := range existing {
				mustCreateContainer(b, db, ContainerProperties{ID: fmt.Sprintf("old-%06d", i)})
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := db.CreateContainer(ctx, ContainerProperties{ID: fmt.Sprintf("new-%06d", i)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
