package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ebbdb/ebb/engine"
)

// These tests walk through the TTL rules (policy's doc) rule by rule through the public API.

func TestExpiryIsInvisibleEverywhereAtOnce(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk)
	defer db.Close()
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "s", DefaultTTL: engine.TTL(10)})
	for i := range 5 {
		if _, err := c.Create(ctx, []byte(fmt.Sprintf(`{"id":"short%d"}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Create(ctx, []byte(`{"id":"forever","ttl":-1}`)); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Items != 6 {
		t.Fatalf("Stats.Items = %d, want 6", st.Items)
	}
	clk.Advance(9)
	if _, err := c.Read(ctx, "short0"); err != nil {
		t.Fatalf("at ts+9: %v", err)
	}
	clk.Advance(1)
	if _, err := c.Read(ctx, "short0"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("at ts+10: Read = %v, want ErrNotFound", err)
	}
	st := c.Stats()
	if st.Items != 1 || st.ExpiredPending != 5 {
		t.Fatalf("Stats = %+v, want 1 item and 5 expired pending", st)
	}
	var ids []string
	for it, err := range c.Items(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, it.ID)
	}
	if fmt.Sprint(ids) != "[forever]" {
		t.Fatalf("Items = %v, want [forever]", ids)
	}
	if _, err := c.Replace(ctx, []byte(`{"id":"short1"}`)); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("Replace expired = %v, want ErrNotFound", err)
	}
	if err := c.Delete(ctx, "short1"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("Delete expired = %v, want ErrNotFound", err)
	}
	it, err := c.Create(ctx, []byte(`{"id":"short2","v":2}`))
	if err != nil {
		t.Fatalf("Create over expired id = %v, want success", err)
	}
	if it.TS != clk.Unix() {
		t.Fatalf("new item _ts = %d, want %d", it.TS, clk.Unix())
	}
	it, err = c.Upsert(ctx, []byte(`{"id":"short3","v":3}`))
	if err != nil || bodyField(t, it, "v") != float64(3) {
		t.Fatalf("Upsert over expired id = %v, %s", err, it.Body)
	}
	if st := c.Stats(); st.Items != 3 {
		t.Fatalf("Stats.Items = %d, want 3", st.Items)
	}
}

func TestDefaultTTLChanges(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(t0)
	dir := t.TempDir()
	db := openTest(t, dir, clk)
	defer db.Close()
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "p"})
	mustWrite := func(doc string) {
		t.Helper()
		if _, err := c.Upsert(ctx, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	visible := func(id string) bool {
		_, err := c.Read(ctx, id)
		if err != nil && !errors.Is(err, engine.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	set := func(d *int32) {
		t.Helper()
		if err := c.SetProperties(ctx, engine.ContainerProperties{ID: "p", DefaultTTL: d}); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(`{"id":"old"}`)
	mustWrite(`{"id":"own","ttl":50}`)
	mustWrite(`{"id":"never","ttl":-1}`)
	clk.Advance(100) // TTL off: nothing expires, own ttl ignored
	if !visible("old") || !visible("own") || !visible("never") {
		t.Fatal("with TTL off every item must be visible")
	}
	mustWrite(`{"id":"young"}`)
	set(engine.TTL(60)) // retroactive: old (100 s) expires now; own's ttl 50 counts again
	if visible("old") || visible("own") || !visible("young") || !visible("never") {
		t.Fatalf("after DefaultTTL 60: old=%v own=%v young=%v never=%v", visible("old"), visible("own"), visible("young"), visible("never"))
	}
	set(nil) // TTL off again: expired items stay gone (expiry is final)
	if visible("old") || visible("own") {
		t.Fatal("an expired item came back after TTL was removed")
	}
	clk.Advance(1000)
	if !visible("young") {
		t.Fatal("with TTL off an unexpired item must not expire")
	}
	set(engine.TTL(-1)) // -1: items without ttl never expire, own ttl counts
	mustWrite(`{"id":"own2","ttl":5}`)
	clk.Advance(5)
	if !visible("young") || visible("own2") {
		t.Fatalf("DefaultTTL -1: young=%v own2=%v", visible("young"), visible("own2"))
	}
	// Raising the TTL does not bring back what expired; a restart neither.
	set(engine.TTL(1 << 30))
	if visible("own2") || visible("old") {
		t.Fatal("raising DefaultTTL brought an item back")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	clk.Set(t0) // and the wall clock ran back by hours
	db = openTest(t, dir, clk)
	defer db.Close()
	c, err := db.Container("p")
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Properties(); p.DefaultTTL == nil || *p.DefaultTTL != 1<<30 {
		t.Fatalf("DefaultTTL after reopen = %v", p.DefaultTTL)
	}
	for _, id := range []string{"old", "own", "own2"} {
		if visible(id) {
			t.Errorf("%s visible after reopen with the clock behind", id)
		}
	}
	for _, id := range []string{"young", "never"} {
		if !visible(id) {
			t.Errorf("%s not visible after reopen", id)
		}
	}
	it, err := c.Upsert(ctx, []byte(`{"id":"new"}`))
	if err != nil {
		t.Fatal(err)
	}
	if it.TS < t0+1105 {
		t.Errorf("a write after the clock ran back got _ts %d, older than earlier writes", it.TS)
	}
}

func TestValidationRejectsAndWritesNothing(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk)
	defer db.Close()
	if _, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "n", DefaultTTL: engine.TTL(5), Indexing: engine.IndexingNone}); !errors.Is(err, engine.ErrInvalidProperties) {
		t.Fatalf("TTL with indexing none = %v", err)
	}
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "n", Indexing: engine.IndexingNone})
	if err := c.SetProperties(ctx, engine.ContainerProperties{ID: "n", DefaultTTL: engine.TTL(5), Indexing: engine.IndexingNone}); !errors.Is(err, engine.ErrInvalidProperties) {
		t.Fatalf("turning TTL on with indexing none = %v", err)
	}
	d := mustCreateContainer(t, db, engine.ContainerProperties{ID: "d", DefaultTTL: engine.TTL(5)})
	if err := d.SetProperties(ctx, engine.ContainerProperties{ID: "d", DefaultTTL: engine.TTL(5), Indexing: engine.IndexingNone}); !errors.Is(err, engine.ErrInvalidProperties) {
		t.Fatalf("indexing none with TTL on = %v", err)
	}
	before := c.Stats()
	for _, tc := range []struct {
		doc  string
		want error
	}{
		{`[1]`, engine.ErrInvalidDocument},
		{`{"id":1}`, engine.ErrInvalidDocument},
		{`{"id":""}`, engine.ErrInvalidDocument},
		{`{"id":"a/b"}`, engine.ErrInvalidDocument},
		{`{"id":"a"`, engine.ErrInvalidDocument},
		{`{"id":"a","ttl":0}`, engine.ErrInvalidTTL},
		{`{"id":"a","ttl":"10"}`, engine.ErrInvalidTTL},
	} {
		if _, err := c.Create(ctx, []byte(tc.doc)); !errors.Is(err, tc.want) {
			t.Errorf("Create(%s) = %v, want %v", tc.doc, err, tc.want)
		}
	}
	if st := c.Stats(); st.Items != 0 || st.DiskBytes != before.DiskBytes {
		t.Fatalf("rejected writes left %+v, was %+v", st, before)
	}
	_, err := c.Create(ctx, []byte(`{"id":"a","ttl":0}`))
	if want := `ttl 0`; err == nil || !contains(err.Error(), want) || !contains(err.Error(), `"a"`) {
		t.Errorf("error %q should name the item and the value", err)
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub)))
}

func TestRestartSealCompact(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(t0)
	dir := t.TempDir()
	small := func(o *engine.Options) { o.SealThreshold = 16 << 10; o.BlockSize = 4 << 10 }
	db := openTest(t, dir, clk, small)
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(100)})
	for i := range 2000 {
		doc := fmt.Sprintf(`{"id":"k%04d","n":%d,"pad":"%0100d"}`, i, i, i)
		if i%2 == 0 {
			doc = fmt.Sprintf(`{"id":"k%04d","n":%d,"ttl":-1}`, i, i)
		}
		if _, err := c.Upsert(ctx, []byte(doc)); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 && i > 0 {
			if err := c.Delete(ctx, fmt.Sprintf("k%04d", i-1)); err != nil && !errors.Is(err, engine.ErrNotFound) {
				t.Fatal(err)
			}
		}
	}
	want := c.Stats().Items
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, dir, clk, small)
	c, _ = db.Container("c")
	if got := c.Stats().Items; got != want {
		t.Fatalf("after reopen %d items, want %d", got, want)
	}
	clk.Advance(100) // odd items expire
	st := c.Stats()
	if st.ExpiredPending == 0 {
		t.Fatalf("no expired items pending: %+v", st)
	}
	before := st.DiskBytes
	if err := c.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	st = c.Stats()
	if st.ExpiredPending != 0 || st.DiskBytes >= before {
		t.Fatalf("after Compact: %+v (disk before %d)", st, before)
	}
	n := 0
	for it, err := range c.Items(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if bodyField(t, it, "ttl") != float64(-1) {
			t.Fatalf("item %s should have expired", it.Body)
		}
		n++
	}
	if int64(n) != st.Items {
		t.Fatalf("Items yielded %d, Stats says %d", n, st.Items)
	}
	db.Close()
	db = openTest(t, dir, clk, small)
	defer db.Close()
	c, _ = db.Container("c")
	if got := c.Stats(); got.Items != st.Items {
		t.Fatalf("after compact+reopen %+v, want %d items", got, st.Items)
	}
}
