package engine

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// BenchmarkPolicyHistory measures a point read, a COUNT query and a
// DefaultTTL change in a container of 200 items after 10, 1,000 and 10,000
// earlier DefaultTTL changes that alternate between TTL off and on (with a
// TTL long enough that nothing expires). Every figure should be flat across
// the counts: the engine's cost must not grow with the number of past
// policy changes. Run it with
//
//	go test ./engine -run '^$' -bench PolicyHistory -benchtime 2000x
func BenchmarkPolicyHistory(b *testing.B) {
	for _, changes := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("changes=%d", changes), func(b *testing.B) {
			ctx := context.Background()
			clk := newFakeClock(t0)
			db := openTest(b, fastDir(b), clk, func(o *Options) { o.NoSync = true; o.CompactionInterval = -1 })
			defer db.Close()
			c := mustCreateContainer(b, db, ContainerProperties{ID: "c"})
			const items = 200
			for i := range items {
				if _, err := c.Create(ctx, []byte(fmt.Sprintf(`{"id":"d%d","n":%d}`, i, i))); err != nil {
					b.Fatal(err)
				}
			}
			on := int32(1 << 30)
			flip := func(k int) {
				clk.Advance(1)
				p := ContainerProperties{ID: "c"}
				if k%2 == 0 {
					p.DefaultTTL = &on
				}
				if err := c.SetProperties(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
			for k := range changes {
				flip(k)
			}
			b.Run("read", func(b *testing.B) {
				for i := range b.N {
					if _, err := c.Read(ctx, fmt.Sprintf("d%d", i%items)); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("count", func(b *testing.B) {
				for range b.N {
					n := 0
					for it, err := range c.Query(ctx, "SELECT VALUE COUNT(1) FROM c") {
						if err != nil {
							b.Fatal(err)
						}
						if string(it.Body) != fmt.Sprint(items) {
							b.Fatalf("COUNT = %s, want %d", it.Body, items)
						}
						n++
					}
					if n != 1 {
						b.Fatalf("COUNT answered %d rows", n)
					}
				}
			})
			b.Run("set", func(b *testing.B) {
				for i := range b.N {
					flip(changes + i)
				}
			})
		})
	}
}

// fastDir is a directory for benchmarks whose figures should not be the
// disk's fsync latency: under /dev/shm (tmpfs, where fsync costs nothing)
// when the machine has it, else b.TempDir.
func fastDir(b testing.TB) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "ebb-bench-"); err == nil {
			b.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return b.TempDir()
}
