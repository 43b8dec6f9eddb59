package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// countQuery runs a COUNT query and returns its number.
func countQuery(t *testing.T, c *Container, sql string) int {
	t.Helper()
	got := runQuery(t, c, sql)
	var n int
	if _, err := fmt.Sscan(string(got[0].Body), &n); err != nil {
		t.Fatalf("%s: %s: %v", sql, got[0].Body, err)
	}
	return n
}

// TestConsistentQuerySetsQueuedTerms: with the index loop held, a
// consistent query sets the queued puts' terms itself before it reads the
// index, so it sees every write that returned before it (the index alone
// answers these COUNTs, with no document re-checked).
func TestConsistentQuerySetsQueuedTerms(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), newFakeClock(t0))
	defer db.Close()
	c := mustCreateContainer(t, db, ContainerProperties{ID: "q"})
	for i := range 50 {
		if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"i%02d","n":1}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	waitIndexed(t, c)
	if plan, err := c.Explain(`SELECT VALUE COUNT(1) FROM c WHERE c.n = 2`); err != nil {
		t.Fatal(err)
	} else if !strings.Contains(plan, "count from the index") {
		t.Fatalf("the test needs a COUNT the index answers alone; plan:\n%s", plan)
	}

	db.indexHold.Lock()
	defer db.indexHold.Unlock()
	for round := range 3 {
		// Move 10 items from n=1 to n=2, one write at a time: their old
		// terms (n=1) stay in the index until the new ones are set.
		for i := round * 10; i < round*10+10; i++ {
			if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"i%02d","n":2}`, i)); err != nil {
				t.Fatal(err)
			}
		}
		if n := c.ix.queued.Load(); n != 10 {
			t.Fatalf("round %d: %d puts queued, want the 10 written", round, n)
		}
		want := (round + 1) * 10
		if got := countQuery(t, c, `SELECT VALUE COUNT(1) FROM c WHERE c.n = 2`); got != want {
			t.Fatalf("round %d: COUNT(n = 2) = %d, want %d", round, got, want)
		}
		if got := countQuery(t, c, `SELECT VALUE COUNT(1) FROM c WHERE c.n = 1`); got != 50-want {
			t.Fatalf("round %d: COUNT(n = 1) = %d, want %d", round, got, 50-want)
		}
		if n := c.ix.queued.Load(); n != 0 {
			t.Fatalf("round %d: %d puts still queued after a consistent query", round, n)
		}
	}
	if err := CheckIndex(c); err != nil {
		t.Fatal(err)
	}
}

// TestTermQueueBounded: with the index loop held, writers set terms
// themselves once more than maxQueuedPuts wait, so the queue (and the
// bodies it holds) stays bounded, and every write is indexed.
func TestTermQueueBounded(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), newFakeClock(t0))
	defer db.Close()
	c := mustCreateContainer(t, db, ContainerProperties{ID: "q"})
	db.indexHold.Lock()
	defer db.indexHold.Unlock()
	const n = 3 * maxQueuedPuts
	peak := int64(0)
	for i := range n {
		if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"i%04d","n":%d}`, i, i%4)); err != nil {
			t.Fatal(err)
		}
		peak = max(peak, c.ix.queued.Load())
	}
	if peak > maxQueuedPuts {
		t.Fatalf("%d puts queued at the peak, over the bound of %d", peak, maxQueuedPuts)
	}
	if peak < maxQueuedPuts {
		t.Fatalf("%d puts queued at the peak: the writers set terms before the bound of %d", peak, maxQueuedPuts)
	}
	if got := countQuery(t, c, `SELECT VALUE COUNT(1) FROM c WHERE c.n = 3`); got != n/4 {
		t.Fatalf("COUNT(n = 3) = %d, want %d", got, n/4)
	}
}

// TestConsistentQueryReadsItsWrites: writers and consistent queries run at
// once, with the index loop running or held. Every query counts at least
// the writes acknowledged before it started and at most those started;
// each query's COUNT comes from the index alone.
func TestConsistentQueryReadsItsWrites(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprintf("loop-held=%v", held), func(t *testing.T) {
			ctx := context.Background()
			db := openTest(t, t.TempDir(), newFakeClock(t0))
			defer db.Close()
			c := mustCreateContainer(t, db, ContainerProperties{ID: "q"})
			if held {
				db.indexHold.Lock()
				defer db.indexHold.Unlock()
			}
			const writers, each = 4, 300
			var started, acked atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						started.Add(1)
						if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"w%d-%d","n":7}`, w, i)); err != nil {
							errs <- err
							return
						}
						acked.Add(1)
					}
				}()
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			for queries := 0; ; queries++ {
				select {
				case err := <-errs:
					t.Fatal(err)
				default:
				}
				lo := acked.Load()
				got := int64(countQuery(t, c, `SELECT VALUE COUNT(1) FROM c WHERE c.n = 7`))
				hi := started.Load()
				if got < lo || got > hi {
					t.Fatalf("query %d: COUNT = %d, want between %d (acknowledged before) and %d (started after)", queries, got, lo, hi)
				}
				select {
				case <-done:
					if got := countQuery(t, c, `SELECT VALUE COUNT(1) FROM c WHERE c.n = 7`); got != writers*each {
						t.Fatalf("after the writers, COUNT = %d, want %d", got, writers*each)
					}
					return
				default:
				}
			}
		})
	}
}

// TestConsistentQueryExclusivePath: a consistent query that cannot catch
// up outside the lock sets the queued terms under the write lock and runs
// under it: Query, COUNT, ORDER BY, Explain and a partition's Items all
// see every write, and none waits on the lock it holds.
func TestConsistentQueryExclusivePath(t *testing.T) {
	defer func(n int) { settleTries = n }(settleTries)
	settleTries = 0
	ctx := context.Background()
	db := openTest(t, t.TempDir(), newFakeClock(t0))
	defer db.Close()
	c := mustCreateContainer(t, db, ContainerProperties{ID: "q", PartitionKeyPath: "/p"})
	db.indexHold.Lock()
	defer db.indexHold.Unlock()
	for i := range 20 {
		if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"i%02d","p":"k%d","n":%d}`, i, i%2, i)); err != nil {
			t.Fatal(err)
		}
		if got := countQuery(t, c, `SELECT VALUE COUNT(1) FROM c WHERE c.n >= 0`); got != i+1 {
			t.Fatalf("after %d writes, COUNT = %d", i+1, got)
		}
	}
	top := runQuery(t, c, `SELECT TOP 1 c.id FROM c ORDER BY c.n DESC`)
	if len(top) != 1 || !strings.Contains(string(top[0].Body), `"i19"`) {
		t.Fatalf("TOP 1 by n: %v", top)
	}
	if _, err := c.Upsert(ctx, []byte(`{"id":"late","p":"k1","n":-1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Explain(`SELECT * FROM c WHERE c.n = -1`); err != nil {
		t.Fatal(err)
	}
	if n := c.ix.queued.Load(); n != 0 {
		t.Fatalf("%d puts queued after Explain", n)
	}
	if _, err := c.Upsert(ctx, []byte(`{"id":"later","p":"k1","n":-2}`)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range c.Partition(StringKey("k1")).Items(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 12 {
		t.Fatalf("partition k1 has %d items, want 12", n)
	}
}
