package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/vfs"
)

// TestFeedExactlyOnceAcrossCrashes runs writers (upserts with ttls,
// deletes, batches, clock moves, DefaultTTL changes, background seals and
// compactions) while a consumer follows the AllVersionsAndDeletes feed,
// keeping each change's continuation as it handles it; then cuts the power
// (vfs.CrashFS: whatever was not fsynced is lost or torn) or closes, and
// resumes from the last continuation kept. At the end, what the consumer
// saw, round after round, must be exactly the feed read in one go: each
// change once, in order, none that was reported lost, none added before
// where it was reported.
func TestFeedExactlyOnceAcrossCrashes(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 14))
	dir := t.TempDir()
	clk := newFakeClock(t0)
	rounds := 12
	if testing.Short() {
		rounds = 5
	}
	var (
		mu    sync.Mutex
		seen  []engine.Change
		token string
	)
	opts := func(fs vfs.FS) *engine.Options {
		return &engine.Options{Clock: clk.Now, FS: fs, JournalSegmentSize: 8 << 10, SealThreshold: 16 << 10,
			CompactionInterval: 10 * time.Millisecond, RewriteThreshold: 0.3}
	}
	props := engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(-1), ChangeFeedRetention: time.Hour}
	for r := range rounds {
		cfs, err := vfs.NewCrashFS(dir)
		if err != nil {
			t.Fatal(err)
		}
		db, err := engine.Open(dir, opts(cfs))
		if err != nil {
			t.Fatalf("round %d: Open: %v", r, err)
		}
		c, err := db.Container("c")
		if errors.Is(err, engine.ErrNotFound) {
			c, err = db.CreateContainer(context.Background(), props)
		}
		if err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			from := token
			mu.Unlock()
			for ch, err := range c.ChangeFeed(ctx, engine.ChangeFeedOptions{Mode: engine.AllVersionsAndDeletes, Continuation: from, Follow: true}) {
				if err != nil {
					return // the power cut, the close or the end of ctx
				}
				mu.Lock()
				seen = append(seen, ch)
				token = ch.Continuation
				mu.Unlock()
			}
		}()
		crash := rnd.IntN(4) > 0
		work(c, clk, props, rnd, 20+rnd.IntN(60))
		if crash {
			cfs.Crash()
		}
		cancel()
		wg.Wait()
		db.Close()
		if crash {
			if err := cfs.Apply(vfs.Tail(rnd.IntN(4)), rnd); err != nil {
				t.Fatal(err)
			}
		}
	}
	db, err := engine.Open(dir, &engine.Options{Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.Container("c")
	if err != nil {
		t.Fatal(err)
	}
	all := readFeed(t, c, engine.AllVersionsAndDeletes, "")
	rest := readFeed(t, c, engine.AllVersionsAndDeletes, token)
	got := append(seen, rest...)
	checkFeedShape(t, all)
	if len(got) != len(all) {
		t.Errorf("the consumer saw %d changes (and %d after), the feed holds %d", len(seen), len(rest), len(all))
	}
	for i := range min(len(got), len(all)) {
		if fmt.Sprint(got[i]) != fmt.Sprint(all[i]) {
			lo, hi := max(0, i-8), min(i+8, len(got), len(all))
			t.Logf("the consumer saw:\n%s\nthe feed holds:\n%s", strings.Join(feedLSNLines(got[lo:hi]), "\n"), strings.Join(feedLSNLines(all[lo:hi]), "\n"))
			t.Fatalf("change %d: the consumer saw %s %s @%d lsn %d, the feed holds %s %s @%d lsn %d (replay: seed %d)",
				i, got[i].Op, got[i].ID, got[i].TS-t0, got[i].LSN, all[i].Op, all[i].ID, all[i].TS-t0, all[i].LSN, seed)
		}
	}
	t.Logf("%d rounds, %d changes (%d of them expiries)", rounds, len(all), countExpired(all))
}

func feedLSNLines(chs []engine.Change) []string {
	out := feedLines(chs)
	for i, ch := range chs {
		out[i] = fmt.Sprintf("%d.%d+%d prev %d.%d: %s", ch.LSN>>20, ch.LSN&(1<<20-1), 0, ch.PreviousLSN>>20, ch.PreviousLSN&(1<<20-1), out[i])
	}
	return out
}

func countExpired(chs []engine.Change) (n int) {
	for _, ch := range chs {
		if ch.TTLExpired {
			n++
		}
	}
	return n
}

// work runs n random operations on c; errors (a cut power, a missing
// item) are part of the game.
func work(c *engine.Container, clk *fakeClock, props engine.ContainerProperties, rnd *rand.Rand, n int) {
	ctx := context.Background()
	id := func() string { return fmt.Sprintf("k%d", rnd.IntN(12)) }
	doc := func() []byte {
		switch rnd.IntN(3) {
		case 0:
			return fmt.Appendf(nil, `{"id":%q,"n":%d}`, id(), rnd.IntN(100))
		case 1:
			return fmt.Appendf(nil, `{"id":%q,"ttl":-1}`, id())
		}
		return fmt.Appendf(nil, `{"id":%q,"ttl":%d,"pad":"%0400d"}`, id(), 1+rnd.IntN(4), 0)
	}
	for range n {
		switch k := rnd.IntN(20); {
		case k < 10:
			c.Upsert(ctx, doc())
		case k < 12:
			c.Create(ctx, doc())
		case k < 14:
			c.Delete(ctx, id())
		case k < 16:
			b := c.NewBatch()
			used := map[string]bool{}
			for range 1 + rnd.IntN(4) {
				d := doc()
				var m struct{ ID string }
				fmt.Sscanf(string(d), `{"id":%q`, &m.ID)
				if !used[m.ID] {
					used[m.ID] = true
					b.Upsert(d)
				}
			}
			c.ExecuteBatch(ctx, b)
		case k < 19:
			clk.Advance(1)
		default:
			p := props
			p.DefaultTTL = engine.TTL([]int32{-1, 2, 5}[rnd.IntN(3)])
			c.SetProperties(ctx, p)
		}
		if rnd.IntN(8) == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}
