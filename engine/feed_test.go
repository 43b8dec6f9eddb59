package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
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
