package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
)

// TestFeedModel runs random operations (creates, upserts, replaces,
// deletes, batches, clock moves, DefaultTTL changes, seals, compactions,
// rounds of the background compactor, reopens) and after each checks the
// feed against the container's state:
//
//   - the AllVersionsAndDeletes feed read now starts with the feed read
//     before, change for change (nothing reported ever changes or goes);
//   - replaying it, item by item, is a valid history (a create of an
//     absent item, a replace, delete or expiry of a present one, each
//     PreviousLSN naming the version it follows) that ends in exactly the
//     items Items lists, with their bodies;
//   - the LatestVersion feed lists those items too, in LSN order;
//   - a follower that resumes from its last continuation across reopens
//     saw the whole feed, once.
func TestFeedModel(t *testing.T) {
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	base := rand.Uint64()
	for i := range seeds {
		seed := base + uint64(i)
		t.Run(fmt.Sprint(seed), func(t *testing.T) { feedModelRun(t, seed, 160) })
	}
}

func feedModelRun(t *testing.T, seed uint64, steps int) {
	rnd := rand.New(rand.NewPCG(seed, 41))
	ctx := context.Background()
	dir := t.TempDir()
	clk := newFakeClock(t0)
	open := func() (*engine.DB, *engine.Container) {
		db := openTest(t, dir, clk, func(o *engine.Options) { o.SealThreshold = 8 << 10 })
		c, err := db.Container("c")
		if err != nil {
			c = mustCreateContainer(t, db, engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(-1), ChangeFeedRetention: 1000 * time.Hour})
		}
		return db, c
	}
	db, c := open()
	defer func() { db.Close() }()

	var (
		fmu      sync.Mutex
		followed []engine.Change
		token    string
	)
	fctx, stop := context.WithCancel(ctx)
	follower := make(chan struct{})
	startFollower := func() {
		fctx, stop = context.WithCancel(ctx)
		follower = make(chan struct{})
		from := token
		go func() {
			defer close(follower)
			for ch, err := range c.ChangeFeed(fctx, engine.ChangeFeedOptions{Mode: engine.AllVersionsAndDeletes, Continuation: from, Follow: true}) {
				if err != nil {
					return
				}
				fmu.Lock()
				followed = append(followed, ch)
				token = ch.Continuation
				fmu.Unlock()
			}
		}()
	}
	stopFollower := func() { stop(); <-follower }
	startFollower()

	var trace []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d after:\n  %s\n%s", seed, strings.Join(trace, "\n  "), fmt.Sprintf(format, args...))
	}
	// Six ids, written again and again, and now and then a new one, whose
	// versions hide nothing, so that a file of them dies whole.
	fresh := 0
	id := func() string {
		if rnd.IntN(4) == 0 {
			fresh++
			return fmt.Sprintf("u%d", fresh)
		}
		return fmt.Sprintf("i%d", rnd.IntN(6))
	}
	doc := func(k string) string {
		switch rnd.IntN(4) {
		case 0:
			return fmt.Sprintf(`{"id":%q,"n":%d}`, k, rnd.IntN(100))
		case 1:
			return fmt.Sprintf(`{"id":%q,"ttl":-1,"n":%d}`, k, rnd.IntN(100))
		}
		return fmt.Sprintf(`{"id":%q,"ttl":%d}`, k, 1+rnd.IntN(4))
	}
	var prev []engine.Change
	for step := range steps {
		var op string
		switch k := rnd.IntN(28); {
		case k < 8:
			d := doc(id())
			_, err := c.Upsert(ctx, []byte(d))
			op = fmt.Sprintf("upsert %s: %v", d, err)
		case k < 10:
			d := doc(id())
			_, err := c.Create(ctx, []byte(d))
			op = fmt.Sprintf("create %s: %v", d, err)
		case k < 12:
			d := doc(id())
			_, err := c.Replace(ctx, []byte(d))
			op = fmt.Sprintf("replace %s: %v", d, err)
		case k < 14:
			k := id()
			op = fmt.Sprintf("delete %s: %v", k, c.Delete(ctx, k))
		case k < 16:
			b := c.NewBatch()
			var ds []string
			for _, k := range rnd.Perm(6)[:1+rnd.IntN(3)] {
				d := doc(fmt.Sprintf("i%d", k))
				b.Upsert([]byte(d))
				ds = append(ds, d)
			}
			_, err := c.ExecuteBatch(ctx, b)
			op = fmt.Sprintf("batch %s: %v", strings.Join(ds, " "), err)
		case k < 20:
			n := 1 + rnd.Int64N(3)
			clk.Advance(n)
			op = fmt.Sprintf("clock +%d", n)
		case k < 21:
			p := c.Properties()
			p.DefaultTTL = []*int32{nil, engine.TTL(-1), engine.TTL(2), engine.TTL(5)}[rnd.IntN(4)]
			op = fmt.Sprintf("defaultTtl %v: %v", defaultTTLString(p.DefaultTTL), c.SetProperties(ctx, p))
		case k < 23:
			op = fmt.Sprintf("compact: %v", c.Compact(ctx))
		case k < 25:
			// A file of the few writes since the last seal.
			op = fmt.Sprintf("seal: %v", engine.SealNow(ctx, db))
		case k < 27:
			// What the feed needs is reused from an earlier round while
			// the clock moves on: items live then may have died since.
			op = fmt.Sprintf("background compaction: %v", engine.CompactStep(ctx, c))
		default:
			stopFollower()
			if err := db.Close(); err != nil {
				fail("Close: %v", err)
			}
			db, c = open()
			startFollower()
			op = "reopen"
		}
		trace = append(trace, fmt.Sprintf("%d @%d %s", step, clk.Unix()-t0, op))

		all := readFeed(t, c, engine.AllVersionsAndDeletes, "")
		if len(all) < len(prev) || fmt.Sprint(all[:len(prev)]) != fmt.Sprint(prev) {
			fail("the feed changed:\nnow  %v\nwas  %v", feedLines(all), feedLines(prev))
		}
		prev = all
		live := map[string]engine.Change{}
		for i, ch := range all {
			cur, present := live[ch.ID]
			switch {
			case i > 0 && ch.LSN <= all[i-1].LSN:
				fail("change %d: LSN %d after %d", i, ch.LSN, all[i-1].LSN)
			case ch.Op == engine.ChangeCreate && (present || ch.PreviousLSN != 0):
				fail("change %d: create of %s (present %v, previous %d)", i, ch.ID, present, ch.PreviousLSN)
			case ch.Op != engine.ChangeCreate && (!present || ch.PreviousLSN != cur.LSN):
				fail("change %d: %s of %s, present %v, previous %d, want %d\n%v", i, ch.Op, ch.ID, present, ch.PreviousLSN, cur.LSN, feedLines(all))
			case ch.TTLExpired && ch.Op != engine.ChangeDelete:
				fail("change %d: expired %s", i, ch.Op)
			}
			if ch.Op == engine.ChangeDelete {
				delete(live, ch.ID)
			} else {
				live[ch.ID] = ch
			}
		}
		var items []string
		for it, err := range c.Items(ctx) {
			if err != nil {
				fail("Items: %v", err)
			}
			items = append(items, it.ID+" "+string(it.Body))
		}
		var fromFeed []string
		for k, ch := range live {
			fromFeed = append(fromFeed, k+" "+string(ch.Body))
		}
		slices.Sort(fromFeed)
		if strings.Join(items, "\n") != strings.Join(fromFeed, "\n") {
			fail("live items:\n%s\nthe feed ends with:\n%s\nfeed:\n%s", strings.Join(items, "\n"), strings.Join(fromFeed, "\n"), strings.Join(feedLines(all), "\n"))
		}
		latest := readFeed(t, c, engine.LatestVersion, "")
		var fromLatest []string
		for i, ch := range latest {
			if i > 0 && ch.LSN <= latest[i-1].LSN {
				fail("LatestVersion change %d: LSN %d after %d", i, ch.LSN, latest[i-1].LSN)
			}
			fromLatest = append(fromLatest, ch.ID+" "+string(ch.Body))
		}
		slices.Sort(fromLatest)
		if strings.Join(items, "\n") != strings.Join(fromLatest, "\n") {
			fail("live items:\n%s\nLatestVersion:\n%s", strings.Join(items, "\n"), strings.Join(fromLatest, "\n"))
		}
	}
	// The follower catches up, then has seen the feed exactly.
	deadline := time.Now().Add(5 * time.Second)
	caughtUp := func() bool {
		fmu.Lock()
		defer fmu.Unlock()
		return len(followed) >= len(prev)
	}
	for !caughtUp() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	stopFollower()
	if fmt.Sprint(followed) != fmt.Sprint(prev) {
		fail("the follower saw:\n%s\nthe feed:\n%s", strings.Join(feedLines(followed), "\n"), strings.Join(feedLines(prev), "\n"))
	}
}

func defaultTTLString(p *int32) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}
