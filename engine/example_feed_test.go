package engine_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/ebbdb/ebb/engine"
)

// React to expiries: a follower of the all-versions-and-deletes feed sees
// each lease's expiry at the instant it expired, and resumes from the last
// continuation it kept.
func ExampleContainer_ChangeFeed() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := exampleDir()
	defer os.RemoveAll(dir)
	clock := &manualClock{}
	clock.sec.Store(1_700_000_000)
	db, err := engine.Open(dir, &engine.Options{Clock: clock.Now})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "leases", DefaultTTL: engine.TTL(30),
		ChangeFeedRetention: 24 * time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	seen := make(chan engine.Change)
	go func() {
		var saved string // a real consumer stores it with what it did
		for ch, err := range c.ChangeFeed(ctx, engine.ChangeFeedOptions{
			Mode: engine.AllVersionsAndDeletes, Continuation: saved, Follow: true}) {
			if err != nil {
				close(seen) // ctx ended
				return
			}
			saved = ch.Continuation
			seen <- ch
		}
	}()
	if _, err := c.Create(ctx, []byte(`{"id":"worker-1","ttl":10}`)); err != nil {
		log.Fatal(err)
	}
	ch := <-seen
	fmt.Println(ch.Op, ch.ID)
	clock.Advance(10 * time.Second) // the lease expires now
	ch = <-seen
	fmt.Println(ch.Op, ch.ID, "expired:", ch.TTLExpired, "after", ch.TS-1_700_000_000, "s")
	// Output:
	// create worker-1
	// delete worker-1 expired: true after 10 s
}
