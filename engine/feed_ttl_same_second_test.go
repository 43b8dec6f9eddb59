package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
)

// TestFeedTwoTTLChangesInOneSecond: two DefaultTTL changes in the same
// second, with no write between them, each expire an item at that instant.
// The second change's expiry comes after the first's in the feed, though
// the item it expires is older: a reader given the first expiry is never
// given a change before it later. (TestFeedModel found that the second
// change's expiry was put before the first's, by the seq of the version
// expired, changing the LSN of a change already read.)
func TestFeedTwoTTLChangesInOneSecond(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk)
	defer db.Close()
	props := engine.ContainerProperties{ID: "c", ChangeFeedRetention: time.Hour} // no DefaultTTL: own ttls do not count
	c := mustCreateContainer(t, db, props)
	for _, doc := range []string{`{"id":"a"}`, `{"id":"b","ttl":2}`} {
		if _, err := c.Upsert(ctx, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(3)
	setTTL := func(ttl *int32) {
		t.Helper()
		p := props
		p.DefaultTTL = ttl
		if err := c.SetProperties(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	setTTL(engine.TTL(-1)) // b's own ttl counts: expired at 2, so now, at 3
	first := readFeed(t, c, engine.AllVersionsAndDeletes, "")
	sameLines(t, "after the first change", feedLines(first), []string{"create a @0", "create b @0", "delete b @3 expired"})
	setTTL(engine.TTL(2)) // a's default ttl: expired at 2, so now, at 3
	second := readFeed(t, c, engine.AllVersionsAndDeletes, "")
	sameLines(t, "after the second change", feedLines(second), []string{"create a @0", "create b @0", "delete b @3 expired", "delete a @3 expired"})
	checkFeedShape(t, second)
	if len(first) == 3 && len(second) == 4 && fmt.Sprint(first) != fmt.Sprint(second[:3]) {
		t.Errorf("the changes read before the second change changed:\nwas %v\nnow %v", first, second[:3])
	}
	// A reader that resumes after the first expiry gets the second.
	if len(first) == 3 {
		rest := readFeed(t, c, engine.AllVersionsAndDeletes, first[2].Continuation)
		sameLines(t, "after the first expiry's continuation", feedLines(rest), []string{"delete a @3 expired"})
	}
}
