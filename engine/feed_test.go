package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/tool"
)

// readFeed reads c's feed to its end (no Follow).
func readFeed(t testing.TB, c *engine.Container, mode engine.ChangeFeedMode, from string) []engine.Change {
	t.Helper()
	var out []engine.Change
	for ch, err := range c.ChangeFeed(context.Background(), engine.ChangeFeedOptions{Mode: mode, Continuation: from}) {
		if err != nil {
			t.Fatalf("ChangeFeed(%v, from %q): %v", mode, from, err)
		}
		out = append(out, ch)
	}
	return out
}

// feedLines renders changes as "op id @ts[ expired]" relative to t0.
func feedLines(chs []engine.Change) []string {
	out := make([]string, len(chs))
	for i, ch := range chs {
		s := fmt.Sprintf("%s %s @%d", ch.Op, ch.ID, ch.TS-t0)
		if ch.TTLExpired {
			s += " expired"
		}
		out[i] = s
	}
	return out
}

// checkFeedShape checks what every feed must satisfy: LSNs strictly
// increasing, PreviousLSN naming an earlier change of the same item,
// bodies only on writes.
func checkFeedShape(t testing.TB, chs []engine.Change) {
	t.Helper()
	byLSN := map[uint64]engine.Change{}
	for i, ch := range chs {
		if i > 0 && ch.LSN <= chs[i-1].LSN {
			t.Errorf("change %d (%s %s) LSN %d after %d", i, ch.Op, ch.ID, ch.LSN, chs[i-1].LSN)
		}
		if (ch.Op == engine.ChangeDelete) != (ch.Body == nil) {
			t.Errorf("change %d (%s %s): body %q", i, ch.Op, ch.ID, ch.Body)
		}
		if ch.PreviousLSN != 0 {
			p, ok := byLSN[ch.PreviousLSN]
			if ok && p.ID != ch.ID {
				t.Errorf("change %d (%s %s): previous LSN %d is item %q", i, ch.Op, ch.ID, ch.PreviousLSN, p.ID)
			}
		}
		byLSN[ch.LSN] = ch
	}
}

func sameLines(t testing.TB, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\ngot:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestFeedAllVersionsOrder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := newFakeClock(t0)
	db := openTest(t, dir, clk)
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(-1), ChangeFeedRetention: time.Hour})
	must := func(_ engine.Item, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Create(ctx, []byte(`{"id":"a","ttl":10}`)))
	must(c.Create(ctx, []byte(`{"id":"b"}`)))
	clk.Advance(5)
	must(c.Replace(ctx, []byte(`{"id":"b","v":2}`)))
	must(c.Upsert(ctx, []byte(`{"id":"d","ttl":3}`))) // expires at 8
	clk.Advance(5)
	must(c.Upsert(ctx, []byte(`{"id":"c"}`)))
	clk.Advance(1)
	if err := c.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	must(c.Upsert(ctx, []byte(`{"id":"a"}`)))
	b := c.NewBatch()
	b.Upsert([]byte(`{"id":"z"}`)).Upsert([]byte(`{"id":"y","ttl":1}`)).Upsert([]byte(`{"id":"c","v":2}`))
	if _, err := c.ExecuteBatch(ctx, b); err != nil {
		t.Fatal(err)
	}
	clk.Advance(1)
	want := []string{
		"create a @0", "create b @0", "replace b @5", "create d @5", "expire-d @8", "expire-a @10", "create c @10",
		"delete b @11", "create a @11", "replace c @11", "create y @11", "create z @11", "expire-y @12",
	}
	for i, w := range want {
		if id, at, ok := strings.Cut(strings.TrimPrefix(w, "expire-"), " "); ok && strings.HasPrefix(w, "expire-") {
			want[i] = "delete " + id + " " + at + " expired"
		}
	}
	got := readFeed(t, c, engine.AllVersionsAndDeletes, "")
	sameLines(t, "feed", feedLines(got), want)
	checkFeedShape(t, got)

	// Every continuation resumes strictly after its change.
	for i, ch := range got {
		rest := readFeed(t, c, engine.AllVersionsAndDeletes, ch.Continuation)
		if len(rest) != len(got)-i-1 || (len(rest) > 0 && rest[0].LSN != got[i+1].LSN) {
			t.Fatalf("from change %d: %d changes, want %d", i, len(rest), len(got)-i-1)
		}
	}
	// The same feed, LSNs and all, after a compaction, a restart and
	// another compaction.
	same := func(what string) {
		t.Helper()
		again := readFeed(t, c, engine.AllVersionsAndDeletes, "")
		if fmt.Sprint(again) != fmt.Sprint(got) {
			t.Fatalf("%s: feed changed:\n%v\nwas\n%v", what, feedLines(again), feedLines(got))
		}
	}
	if err := c.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	same("after Compact")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, dir, clk)
	defer db.Close()
	var err error
	if c, err = db.Container("c"); err != nil {
		t.Fatal(err)
	}
	same("after reopen")
	if err := c.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	same("after reopen and Compact")
}

func expiredLine(id string, at int64) string { return fmt.Sprintf("delete %s @%d expired", id, at) }

func TestFeedDefaultTTLChange(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := newFakeClock(t0)
	db := openTest(t, dir, clk)
	defer func() { db.Close() }()
	props := engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(-1), ChangeFeedRetention: time.Hour}
	c := mustCreateContainer(t, db, props)
	up := func(doc string) {
		t.Helper()
		if _, err := c.Upsert(ctx, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	setTTL := func(n int32) {
		t.Helper()
		p := props
		p.DefaultTTL = engine.TTL(n)
		if err := c.SetProperties(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	up(`{"id":"x"}`)
	up(`{"id":"k","ttl":-1}`)
	clk.Advance(5)
	up(`{"id":"y"}`)
	clk.Advance(5)
	up(`{"id":"z"}`) // at 10, before the change: before x's expiry
	setTTL(7)        // at 10: x (ts 0) expires now; y (ts 5) at 12
	up(`{"id":"w"}`) // at 10, after the change
	up(`{"id":"x"}`) // created again
	clk.Advance(1)
	setTTL(100) // y's expiry moves to 105
	setTTL(1)   // at 11: y, z, w, x expire now, k never
	clk.Advance(1)
	want := []string{
		"create x @0", "create k @0", "create y @5", "create z @10",
		expiredLine("x", 10), "create w @10", "create x @10",
		// By the seq of the version that expired.
		expiredLine("y", 11), expiredLine("z", 11), expiredLine("w", 11), expiredLine("x", 11),
	}
	got := readFeed(t, c, engine.AllVersionsAndDeletes, "")
	sameLines(t, "feed", feedLines(got), want)
	checkFeedShape(t, got)
	db.Close()
	db = openTest(t, dir, clk)
	c, _ = db.Container("c")
	again := readFeed(t, c, engine.AllVersionsAndDeletes, "")
	if fmt.Sprint(again) != fmt.Sprint(got) {
		t.Fatalf("after reopen: %v", feedLines(again))
	}
}

func TestFeedRetentionErrors(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk)
	defer db.Close()
	off := mustCreateContainer(t, db, engine.ContainerProperties{ID: "off"})
	if _, err := off.Upsert(ctx, []byte(`{"id":"a"}`)); err != nil {
		t.Fatal(err)
	}
	feedErr := func(c *engine.Container, mode engine.ChangeFeedMode, from string) error {
		for _, err := range c.ChangeFeed(ctx, engine.ChangeFeedOptions{Mode: mode, Continuation: from}) {
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := feedErr(off, engine.AllVersionsAndDeletes, ""); !errors.Is(err, engine.ErrFeedRetention) {
		t.Fatalf("retention off: %v, want ErrFeedRetention", err)
	}
	if got := readFeed(t, off, engine.LatestVersion, ""); len(got) != 1 {
		t.Fatalf("LatestVersion with retention off: %v", feedLines(got))
	}
	if _, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "neg", ChangeFeedRetention: -time.Second}); !errors.Is(err, engine.ErrInvalidProperties) {
		t.Fatalf("negative retention: %v", err)
	}

	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "c", ChangeFeedRetention: 10 * time.Second})
	if _, err := c.Upsert(ctx, []byte(`{"id":"a"}`)); err != nil {
		t.Fatal(err)
	}
	first := readFeed(t, c, engine.AllVersionsAndDeletes, "")
	if len(first) != 1 {
		t.Fatalf("feed: %v", feedLines(first))
	}
	tok := first[0].Continuation
	clk.Advance(10)
	if err := feedErr(c, engine.AllVersionsAndDeletes, tok); err != nil {
		t.Fatalf("continuation at the retention's edge: %v", err)
	}
	clk.Advance(1)
	if err := feedErr(c, engine.AllVersionsAndDeletes, tok); !errors.Is(err, engine.ErrFeedRetention) {
		t.Fatalf("continuation older than the retention: %v", err)
	}
	if err := feedErr(off, engine.LatestVersion, tok); !errors.Is(err, engine.ErrInvalidFeedOptions) || !strings.Contains(err.Error(), "another container") {
		t.Fatalf("another container's token: %v", err)
	}
	if err := feedErr(c, engine.ChangeFeedMode(9), ""); !errors.Is(err, engine.ErrInvalidFeedOptions) || !strings.Contains(err.Error(), "unknown mode 9") {
		t.Fatalf("unknown mode: %v", err)
	}
	for _, bad := range []string{"x", "ebbfeed1.1.2.3", "ebbfeed1.2.a.3.1.3.YQ", "ebbfeed1.2.1.3.7.3.YQ", "ebbfeed1.2.1.3.1.3.!!", "ebbfeed1.2.1.3.1.4.YQ"} {
		err := feedErr(c, engine.AllVersionsAndDeletes, bad)
		if !errors.Is(err, engine.ErrInvalidFeedOptions) || !strings.Contains(err.Error(), "malformed continuation token") {
			t.Errorf("token %q: %v", bad, err)
		}
	}
}

func TestFeedLatestVersion(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk)
	defer db.Close()
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(-1)})
	for _, doc := range []string{`{"id":"a","v":1}`, `{"id":"b","ttl":5}`, `{"id":"c"}`, `{"id":"d"}`} {
		if _, err := c.Upsert(ctx, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(1)
	if _, err := c.Upsert(ctx, []byte(`{"id":"a","v":2}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	got := readFeed(t, c, engine.LatestVersion, "")
	sameLines(t, "latest", feedLines(got), []string{"replace b @0", "replace d @0", "replace a @1"})
	checkFeedShape(t, got)
	clk.Advance(4) // b expires
	rest := readFeed(t, c, engine.LatestVersion, got[0].Continuation)
	sameLines(t, "latest after b", feedLines(rest), []string{"replace d @0", "replace a @1"})
	if rest[1].LSN != got[2].LSN || string(rest[1].Body) != string(got[2].Body) {
		t.Fatalf("a: %+v, was %+v", rest[1], got[2])
	}
}

// follow runs a follower of c's feed and sends what it sees.
func follow(ctx context.Context, c *engine.Container, mode engine.ChangeFeedMode, from string) <-chan engine.Change {
	out := make(chan engine.Change, 1024)
	go func() {
		defer close(out)
		for ch, err := range c.ChangeFeed(ctx, engine.ChangeFeedOptions{Mode: mode, Continuation: from, Follow: true}) {
			if err != nil {
				out <- engine.Change{Op: 0, ID: err.Error()}
				return
			}
			out <- ch
		}
	}()
	return out
}

func next(t *testing.T, ch <-chan engine.Change, within time.Duration) engine.Change {
	t.Helper()
	select {
	case c, ok := <-ch:
		if !ok {
			t.Fatal("follower ended")
		}
		if c.Op == 0 {
			t.Fatalf("follower: %s", c.ID)
		}
		return c
	case <-time.After(within):
		t.Fatalf("follower: nothing within %v", within)
	}
	return engine.Change{}
}

func TestFeedFollow(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk)
	defer db.Close()
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(-1), ChangeFeedRetention: time.Hour})
	all := follow(ctx, c, engine.AllVersionsAndDeletes, "")
	latest := follow(ctx, c, engine.LatestVersion, "")
	start := time.Now()
	if _, err := c.Upsert(context.Background(), []byte(`{"id":"a","ttl":3}`)); err != nil {
		t.Fatal(err)
	}
	if got := next(t, all, 2*time.Second); got.Op != engine.ChangeCreate || got.ID != "a" {
		t.Fatalf("all: %+v", got)
	}
	if got := next(t, latest, 2*time.Second); got.ID != "a" {
		t.Fatalf("latest: %+v", got)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("write seen after %v", d)
	}
	clk.Advance(2)
	select {
	case got := <-all:
		t.Fatalf("before a's expiry: %+v", got)
	case <-time.After(100 * time.Millisecond):
	}
	clk.Advance(1) // a expires now
	start = time.Now()
	got := next(t, all, 2*time.Second)
	if !got.TTLExpired || got.ID != "a" || got.TS != t0+3 {
		t.Fatalf("expiry: %+v", got)
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("expiry seen %v after the clock reached it", d)
	}
	// A deleted container's followers end with ErrNotFound.
	if err := db.DeleteContainer(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []<-chan engine.Change{all, latest} {
		got := next2(t, f)
		if got.Op != 0 || !strings.Contains(got.ID, "not found") {
			t.Fatalf("after DeleteContainer: %+v", got)
		}
	}
}

// next2 returns the next thing a follower sends, an error included.
func next2(t *testing.T, ch <-chan engine.Change) engine.Change {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(2 * time.Second):
		t.Fatal("follower: nothing within 2s")
	}
	return engine.Change{}
}

func TestFeedRetentionCompaction(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(t0)
	dir := t.TempDir()
	db := openTest(t, dir, clk, func(o *engine.Options) {
		o.SealThreshold = 16 << 10
		o.CompactionInterval = 5 * time.Millisecond
	})
	defer db.Close()
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(-1), ChangeFeedRetention: 10 * time.Second})
	plain := mustCreateContainer(t, db, engine.ContainerProperties{ID: "plain", DefaultTTL: engine.TTL(-1)})
	pad := strings.Repeat("x", 200)
	const items, versions = 20, 30
	for v := range versions {
		for i := range items {
			doc := fmt.Sprintf(`{"id":"i%d","v":%d,"pad":%q,"ttl":%d}`, i, v, pad, 1000+v)
			for _, k := range []*engine.Container{c, plain} {
				if _, err := k.Upsert(ctx, []byte(doc)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if v%10 == 9 {
			clk.Advance(1)
		}
	}
	for _, k := range []*engine.Container{c, plain} {
		if err := k.Delete(ctx, "i0"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond) // background seals and compactions
	got := readFeed(t, c, engine.AllVersionsAndDeletes, "")
	if want := items*versions + 1; len(got) != want {
		t.Fatalf("%d changes, want %d", len(got), want)
	}
	checkFeedShape(t, got)
	m := c.Metrics()
	if m.FeedRetainedBytes < int64(items*(versions-1)*200) {
		t.Fatalf("FeedRetainedBytes %d: the old versions are not counted", m.FeedRetainedBytes)
	}
	if err := c.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if again := readFeed(t, c, engine.AllVersionsAndDeletes, ""); fmt.Sprint(again) != fmt.Sprint(got) {
		t.Fatal("Compact within the retention changed the feed")
	}
	// The offline tools take files holding several versions of an item in
	// their stride, and read the same feed.
	if rep, err := tool.Verify(dir); err != nil || !rep.Clean() {
		t.Fatalf("Verify with retained versions: %v %+v", err, rep)
	}
	page, err := tool.Feed(dir, tool.FeedOptions{Container: "c", All: true, Wall: clk.Now})
	if err != nil || len(page.Changes) != len(got) || page.Changes[len(got)-1].Continuation != got[len(got)-1].Continuation {
		t.Fatalf("tool.Feed: %v, %d changes, want %d", err, len(page.Changes), len(got))
	}
	last := got[len(got)-1]

	// Past the retention, compaction reclaims the old versions: the
	// container takes the space of one without a feed.
	clk.Advance(20)
	for _, k := range []*engine.Container{c, plain} {
		if err := k.Compact(ctx); err != nil {
			t.Fatal(err)
		}
	}
	m, mp := c.Metrics(), plain.Metrics()
	if m.FeedRetainedBytes != 0 {
		t.Errorf("FeedRetainedBytes %d past the retention", m.FeedRetainedBytes)
	}
	if m.LiveBytes != mp.LiveBytes || float64(m.DiskBytes) > 1.2*float64(mp.DiskBytes) {
		t.Errorf("past the retention: live %d disk %d; without a feed: live %d disk %d", m.LiveBytes, m.DiskBytes, mp.LiveBytes, mp.DiskBytes)
	}
	if rest := readFeed(t, c, engine.AllVersionsAndDeletes, ""); len(rest) != 0 {
		t.Errorf("past the retention: %v", feedLines(rest))
	}
	// A change now replaces a version older than the retention: its
	// PreviousLSN is that version's LSN as the feed reported it.
	if _, err := c.Upsert(ctx, []byte(`{"id":"i5"}`)); err != nil {
		t.Fatal(err)
	}
	rest := readFeed(t, c, engine.AllVersionsAndDeletes, "")
	var prev engine.Change
	for _, ch := range got {
		if ch.ID == "i5" {
			prev = ch
		}
	}
	if len(rest) != 1 || rest[0].Op != engine.ChangeReplace || rest[0].PreviousLSN != prev.LSN || rest[0].LSN <= last.LSN {
		t.Fatalf("replace of i5: %+v (its previous version %d, last change %d)", rest, prev.LSN, last.LSN)
	}
}

// A clock reset keeps expiry final with retention on too: the versions
// the feed kept are removed with the rest, and the feed starts over.
func TestFeedResetClock(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ahead := newFakeClock(t0 + 1_000_000)
	db := openTest(t, dir, ahead)
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(-1), ChangeFeedRetention: time.Hour})
	for _, doc := range []string{`{"id":"a","ttl":5}`, `{"id":"a","ttl":5,"v":2}`, `{"id":"b"}`} {
		if _, err := c.Upsert(ctx, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	ahead.Advance(10)
	if n := len(readFeed(t, c, engine.AllVersionsAndDeletes, "")); n != 4 {
		t.Fatalf("%d changes before the reset", n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	wall := newFakeClock(t0)
	if _, err := engine.ResetClock(dir, &engine.Options{Clock: wall.Now}); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, dir, wall)
	defer db.Close()
	c, _ = db.Container("c")
	if _, err := c.Read(ctx, "a"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("a after the reset: %v", err)
	}
	got := readFeed(t, c, engine.LatestVersion, "")
	sameLines(t, "latest after the reset", feedLines(got), []string{"replace b @1000000"})
}

// Turning retention on for a container that has items: the feed covers the
// changes from the next second on (what came before was not kept).
func TestFeedRetentionTurnedOn(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := newFakeClock(t0)
	db := openTest(t, dir, clk)
	defer func() { db.Close() }()
	props := engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(-1)}
	c := mustCreateContainer(t, db, props)
	for _, doc := range []string{`{"id":"a"}`, `{"id":"a","v":2}`, `{"id":"b","ttl":3}`} {
		if _, err := c.Upsert(ctx, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(1)
	props.ChangeFeedRetention = time.Hour
	if err := c.SetProperties(ctx, props); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Upsert(ctx, []byte(`{"id":"a","v":3}`)); err != nil { // same second: not covered
		t.Fatal(err)
	}
	clk.Advance(1)
	if _, err := c.Upsert(ctx, []byte(`{"id":"a","v":4}`)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(1) // b expires
	want := []string{"replace a @2", expiredLine("b", 3)}
	got := readFeed(t, c, engine.AllVersionsAndDeletes, "")
	sameLines(t, "feed", feedLines(got), want)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, dir, clk)
	c, _ = db.Container("c")
	again := readFeed(t, c, engine.AllVersionsAndDeletes, "")
	sameLines(t, "feed after reopen", feedLines(again), want)
	if c.Properties().ChangeFeedRetention != time.Hour {
		t.Fatalf("retention after reopen: %v", c.Properties().ChangeFeedRetention)
	}
	props.ChangeFeedRetention = 0
	if err := c.SetProperties(ctx, props); err != nil {
		t.Fatal(err)
	}
	for _, err := range c.ChangeFeed(ctx, engine.ChangeFeedOptions{Mode: engine.AllVersionsAndDeletes}) {
		if !errors.Is(err, engine.ErrFeedRetention) {
			t.Fatalf("retention turned off: %v", err)
		}
	}
}

// With the real clock, a follower sees an expiry within about feedPoll of
// its instant (the instant is a whole second: when the clock reaches it).
func TestFeedFollowExpiryRealClock(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for expiries in real time")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := engine.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(-1), ChangeFeedRetention: time.Hour})
	all := follow(ctx, c, engine.AllVersionsAndDeletes, "")
	for i, ttl := range []int{1, 2} {
		if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"x%d","ttl":%d}`, i, ttl)); err != nil {
			t.Fatal(err)
		}
	}
	var delays []time.Duration
	for len(delays) < 2 {
		ch := next(t, all, 5*time.Second)
		if ch.TTLExpired {
			delays = append(delays, time.Since(time.Unix(ch.TS, 0)))
		}
	}
	t.Logf("expiries seen %v after their instants", delays)
	for _, d := range delays {
		if d > 250*time.Millisecond {
			t.Errorf("an expiry seen %v after its instant", d)
		}
	}
}
