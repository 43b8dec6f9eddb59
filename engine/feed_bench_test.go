package engine_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
)

// BenchmarkChangeFeed reads the whole feed of a container of 20,000 items
// of ~200 bytes (half of them written twice), sealed into segment files:
// changes/s per mode.
func BenchmarkChangeFeed(b *testing.B) {
	ctx := context.Background()
	db := openTest(b, b.TempDir(), newFakeClock(t0), func(o *engine.Options) { o.NoSync = true })
	defer db.Close()
	c := mustCreateContainer(b, db, engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(-1), ChangeFeedRetention: time.Hour})
	const n = 20_000
	for i := range n + n/2 {
		doc := fmt.Appendf(nil, `{"id":"item%06d","v":%d,"pad":"%0160d"}`, i%n, i/n, i)
		if _, err := c.Upsert(ctx, doc); err != nil {
			b.Fatal(err)
		}
	}
	if err := c.Compact(ctx); err != nil { // seals: the versions are in segment files
		b.Fatal(err)
	}
	for _, mode := range []engine.ChangeFeedMode{engine.LatestVersion, engine.AllVersionsAndDeletes} {
		b.Run(mode.String(), func(b *testing.B) {
			changes := 0
			for b.Loop() {
				for _, err := range c.ChangeFeed(ctx, engine.ChangeFeedOptions{Mode: mode}) {
					if err != nil {
						b.Fatal(err)
					}
					changes++
				}
			}
			b.ReportMetric(float64(changes)/b.Elapsed().Seconds(), "changes/s")
		})
	}
}

// BenchmarkFeedFollowDelay measures how long after a write is acknowledged
// (with fsync) a follower of the feed receives it, with a container of
// 2,000 items: p50 and p99.
func BenchmarkFeedFollowDelay(b *testing.B) {
	for _, mode := range []engine.ChangeFeedMode{engine.LatestVersion, engine.AllVersionsAndDeletes} {
		b.Run(mode.String(), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			db := openTest(b, b.TempDir(), newFakeClock(t0))
			defer db.Close()
			c := mustCreateContainer(b, db, engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(-1), ChangeFeedRetention: time.Hour})
			for i := range 2000 {
				if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"base%d"}`, i)); err != nil {
					b.Fatal(err)
				}
			}
			got := make(chan time.Time, 16)
			go func() {
				for ch, err := range c.ChangeFeed(ctx, engine.ChangeFeedOptions{Mode: mode, Follow: true}) {
					if err != nil {
						return
					}
					if len(ch.ID) > 1 && ch.ID[0] == 'w' {
						got <- time.Now()
					}
				}
			}()
			time.Sleep(100 * time.Millisecond) // the follower has read the base items
			var delays []time.Duration
			i := 0
			for b.Loop() {
				if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"w%d"}`, i)); err != nil {
					b.Fatal(err)
				}
				acked := time.Now()
				delays = append(delays, (<-got).Sub(acked))
				i++
			}
			slices.Sort(delays)
			b.ReportMetric(float64(delays[len(delays)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(delays[len(delays)*99/100].Microseconds()), "p99-µs")
		})
	}
}
