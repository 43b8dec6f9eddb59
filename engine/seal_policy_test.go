package engine

import (
	"context"
	"errors"
	"testing"
)

// TestSealDuringPolicyChange seals a memtable in the moment between a
// DefaultTTL change's taking effect in memory and its manifest write. The
// seal leaves out the item the new policy has expired, so the index must
// forget that item with the memtable. (TestModel found that it did not:
// the index filed items by the new policy only after the write, so the
// seal's marking missed the item and it stayed pending for good, pointing
// into a memtable that was gone.)
func TestSealDuringPolicyChange(t *testing.T) {
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk, func(o *Options) { o.CompactionInterval = -1 })
	c := mustCreateContainer(t, db, ContainerProperties{ID: "c"}) // no DefaultTTL
	ctx := context.Background()
	if _, err := c.Upsert(ctx, []byte(`{"id":"a"}`)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(43)
	// Freeze the memtable, as a seal's first step does.
	if err := db.control(ctx, func(int64) error {
		db.memGen++
		c.mu.Lock()
		c.frozen, c.mem = c.mem, newMemtable(db.memGen, 0)
		c.mu.Unlock()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sealed := false
	testHookPolicyUnwritten = func(hc *Container) {
		did, err := hc.sealFrozen()
		if err != nil {
			t.Error(err)
		}
		sealed = did
	}
	defer func() { testHookPolicyUnwritten = nil }()
	ttl := int32(20) // a expired 23 s ago under it
	if err := c.SetProperties(ctx, ContainerProperties{ID: "c", DefaultTTL: &ttl}); err != nil {
		t.Fatal(err)
	}
	testHookPolicyUnwritten = nil
	if !sealed {
		t.Fatal("the hook sealed nothing")
	}
	if _, err := c.Read(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Read(a) = %v, want ErrNotFound", err)
	}
	if st := c.Stats(); st.Items != 0 || st.ExpiredPending != 0 {
		t.Fatalf("after the seal: %+v, want no item and none pending", st)
	}
	if err := c.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.ExpiredPending != 0 {
		t.Fatalf("after Compact: %+v, want none pending", st)
	}
}
