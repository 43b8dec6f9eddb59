package engine

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestFeedKeepOutlivesLiveVersion: what the change feed needs is worked out
// at one moment and used by compactions a little later (the background
// compactor reuses it for feedKeepMaxAge). A version that was an item's
// live, newest one then, and has expired since, is still needed: the file
// holding it must not be dropped unread because the index no longer counts
// it live. (TestFeedExactlyOnceAcrossKills lost such versions, about one
// run in ten: a change a reader had been shown vanished from the feed.)
func TestFeedKeepOutlivesLiveVersion(t *testing.T) {
	// Both ways a compaction removes a file: dropped unread, or rewritten
	// with what is still needed.
	for _, how := range []string{"drop", "rewrite"} {
		t.Run(how, func(t *testing.T) {
			clk := newFakeClock(t0)
			db := openTest(t, t.TempDir(), clk, func(o *Options) { o.CompactionInterval = -1 })
			c := mustCreateContainer(t, db, ContainerProperties{ID: "c", DefaultTTL: TTL(-1), ChangeFeedRetention: time.Hour})
			ctx := context.Background()
			if _, err := c.Upsert(ctx, []byte(`{"id":"a","ttl":5}`)); err != nil {
				t.Fatal(err)
			}
			if err := SealNow(ctx, db); err != nil {
				t.Fatal(err)
			}
			files := SegmentNums(c)
			if len(files) != 1 {
				t.Fatalf("after the seal: files %v, want one", files)
			}
			keep, err := c.feedNeeded(ctx) // a is live: the index counts it
			if err != nil {
				t.Fatal(err)
			}
			clk.Advance(10) // a expires
			db.sealMu.Lock()
			if how == "drop" {
				err = c.dropFilesLocked(files, keep)
			} else {
				err = c.rewriteLocked(ctx, files, keep, nil)
			}
			db.sealMu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for ch, err := range c.ChangeFeed(ctx, ChangeFeedOptions{Mode: AllVersionsAndDeletes}) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, fmt.Sprint(ch.Op, " ", ch.ID))
			}
			if len(got) != 2 || got[0] != "create a" {
				t.Fatalf("the feed holds %q, want the create of a and its expiry", got)
			}
		})
	}
}
