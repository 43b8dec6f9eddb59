package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ebbdb/ebb/engine"
)

// TestLargeGroupsCommitEveryBatch writes batches of about 100 KiB from
// several goroutines at once, so that commit groups hold several large
// compressed payloads, and checks every item, before and after a reopen
// that replays the journal.
func TestLargeGroupsCommitEveryBatch(t *testing.T) {
	for _, noSync := range []bool{true, false} {
		t.Run(fmt.Sprintf("NoSync=%v", noSync), func(t *testing.T) {
			dir := t.TempDir()
			clk := newFakeClock(t0)
			// A seal threshold above everything written: the reopen replays it all.
			opts := func(o *engine.Options) { o.NoSync = noSync; o.SealThreshold = 1 << 30 }
			db := openTest(t, dir, clk, opts)
			c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "c"})
			const writers, batches, perBatch = 6, 8, 50
			body := func(w, b, i int) string {
				return fmt.Sprintf(`{"id":"w%d-b%d-i%d","w":%d,"pad":"%s"}`, w, b, i, w, strings.Repeat(string(rune('a'+(w+b+i)%26)), 2000))
			}
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for b := range batches {
						batch := c.NewBatch()
						for i := range perBatch {
							batch.Upsert([]byte(body(w, b, i)))
						}
						if _, err := c.ExecuteBatch(context.Background(), batch); err != nil {
							t.Errorf("writer %d batch %d: %v", w, b, err)
							return
						}
					}
				})
			}
			wg.Wait()
			check := func(c *engine.Container, when string) {
				for w := range writers {
					for b := range batches {
						for i := range perBatch {
							id := fmt.Sprintf("w%d-b%d-i%d", w, b, i)
							it, err := c.Read(context.Background(), id)
							if err != nil {
								t.Fatalf("%s: Read(%s): %v", when, id, err)
							}
							if want := body(w, b, i)[1:]; !bytes.HasSuffix(it.Body, []byte(want)) {
								t.Fatalf("%s: Read(%s) = %.80s…", when, id, it.Body)
							}
						}
					}
				}
			}
			check(c, "before the reopen")
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = openTest(t, dir, clk, opts)
			defer db.Close()
			c, err := db.Container("c")
			if err != nil {
				t.Fatal(err)
			}
			check(c, "after the reopen")
		})
	}
}
