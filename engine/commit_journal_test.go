package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine/vfs"
	"github.com/ebbdb/ebb/segment"
)

// TestJournalQueueFailure: with NoSync, a journal write that fails in the
// journal queue makes the DB read-only (the next write gets ErrReadOnly with
// the cause), reads go on, Close returns, and after a reopen the writes that
// survive are exactly the first m of a writer's sequence, m at least the
// number written to the journal before the fault: the queue loses only the
// newest acknowledged writes, each whole, never one without those before it.
func TestJournalQueueFailure(t *testing.T) {
	dir := t.TempDir()
	fs := vfs.NewFaultFS(vfs.OS, 1)
	clk := newFakeClock(t0)
	db := openTest(t, dir, clk, func(o *Options) { o.FS, o.NoSync, o.CompactionInterval = fs, true, -1 })
	c := mustCreateContainer(t, db, ContainerProperties{ID: "c"})
	ctx := context.Background()
	doc := func(i int) []byte { return fmt.Appendf(nil, `{"id":"k%05d","v":%d}`, i, i) }

	const before = 50
	for i := range before {
		if _, err := c.Upsert(ctx, doc(i)); err != nil {
			t.Fatal(err)
		}
	}
	db.jq.drain() // these are in the journal
	fs.Inject(vfs.Rule{Op: vfs.OpWrite, Path: "journal/", Err: syscall.EIO, Count: 1})
	acked := before
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for err == nil && time.Now().Before(deadline) {
		if _, err = c.Upsert(ctx, doc(acked)); err == nil {
			acked++
		}
	}
	if !errors.Is(err, ErrReadOnly) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("writes after the journal fault: %v, want ErrReadOnly wrapping EIO", err)
	}
	if it, err := c.Read(ctx, "k00000"); err != nil || it.ID != "k00000" {
		t.Fatalf("read after the failure: %+v, %v", it, err)
	}
	fs.Clear()
	if err := db.Close(); err == nil {
		t.Fatal("Close after a journal failure returned nil")
	}

	db = openTest(t, dir, clk)
	defer db.Close()
	c, err = db.Container("c")
	if err != nil {
		t.Fatal(err)
	}
	m := 0
	for it, err := range c.Items(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("k%05d", m); it.ID != want {
			t.Fatalf("item %d after reopen is %s, want %s: not a prefix of the writes", m, it.ID, want)
		}
		if v := bodyField(t, it, "v"); v != float64(m) {
			t.Fatalf("item %s has v %v, want %d", it.ID, v, m)
		}
		m++
	}
	if m < before || m > acked {
		t.Fatalf("%d items after reopen; want between the %d journaled before the fault and the %d acknowledged", m, before, acked)
	}
	t.Logf("%d writes acknowledged, %d survived the failed journal write", acked, m)
}

// TestJournalDurableWaitsForQueue: with NoSync, a background compaction
// that drops an older version, superseded by a write still waiting in the
// journal queue, does not commit the drop before that write is in the
// journal and fsynced: a power loss right after the compaction keeps the
// newer version (without the wait it lost both, a state that never was).
// An explicit Compact seals first, which drains the queue anyway.
func TestJournalDurableWaitsForQueue(t *testing.T) {
	dir := t.TempDir()
	cfs, err := vfs.NewCrashFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock(t0)
	db := openTest(t, dir, clk, func(o *Options) { o.FS, o.NoSync, o.CompactionInterval = cfs, true, -1 })
	c := mustCreateContainer(t, db, ContainerProperties{ID: "c"})
	ctx := context.Background()
	if _, err := c.Upsert(ctx, []byte(`{"id":"x","v":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := SealNow(ctx, db); err != nil {
		t.Fatal(err)
	}

	release := make(chan struct{})
	db.jq.mu.Lock()
	db.jq.beforeWrite = func() { <-release }
	db.jq.mu.Unlock()
	if _, err := c.Upsert(ctx, []byte(`{"id":"x","v":2}`)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- CompactStep(ctx, c) }()
	select {
	case err := <-done:
		close(release)
		t.Fatalf("the compaction returned (%v) while the write superseding the version it drops waited in the journal queue", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(allFiles(c)); n != 0 {
		t.Fatalf("%d segment files after the compaction, want 0: the superseded version's file was not dropped", n)
	}
	cfs.Crash()
	db.Close()
	if err := cfs.Apply(vfs.TailCut, nil); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, dir, clk)
	defer db.Close()
	c, err = db.Container("c")
	if err != nil {
		t.Fatal(err)
	}
	it, err := c.Read(ctx, "x")
	if err != nil {
		t.Fatalf("after the power loss: %v, want x with v 2", err)
	}
	if v := bodyField(t, it, "v"); v != float64(2) {
		t.Fatalf("after the power loss x has v %v, want 2", v)
	}
}

// TestJournalQueueCompresses: with NoSync the commit leader hands the
// journal queue plain records and the queue stores each entry as
// segment.AppendPayload would have: compressed when that pays, plain when
// not, one entry per write in seq order, each decoding to its own records.
func TestJournalQueueCompresses(t *testing.T) {
	db := openTest(t, t.TempDir(), newFakeClock(t0), func(o *Options) { o.NoSync, o.CompactionInterval = true, -1 })
	defer db.Close()
	c := mustCreateContainer(t, db, ContainerProperties{ID: "c"})
	ctx := context.Background()
	first := db.jnl.NextSeq()
	pad := strings.Repeat("abcdefgh", 128) // 1 KiB that compresses well
	var b Batch
	for i := range 10 {
		b.Upsert(fmt.Appendf(nil, `{"id":"b%d","pad":%q}`, i, pad))
	}
	if _, err := c.ExecuteBatch(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Upsert(ctx, []byte(`{"id":"small"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"big","pad":%q}`, pad)); err != nil {
		t.Fatal(err)
	}
	db.jq.drain()

	want := []struct {
		ids        []string
		compressed bool
	}{
		{[]string{"b0", "b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9"}, true},
		{[]string{"small"}, false},
		{[]string{"big"}, true},
	}
	var got int
	err := db.jnl.Replay(first, func(seq uint64, payload []byte) error {
		if got >= len(want) {
			return fmt.Errorf("entry %d beyond the %d written", seq, len(want))
		}
		w := want[got]
		if seq != first+uint64(got) {
			return fmt.Errorf("entry %d has seq %d, want %d", got, seq, first+uint64(got))
		}
		if _, compressed, err := segment.PayloadSize(payload); err != nil || compressed != w.compressed {
			return fmt.Errorf("entry %d (%v): compressed %v, %v; want compressed %v", seq, w.ids, compressed, err, w.compressed)
		}
		plain, err := segment.DecodePayload(payload, nil)
		if err != nil {
			return err
		}
		var ids []string
		for len(plain) > 0 {
			var rec segment.Record
			n, err := segment.DecodeRecord(plain, &rec)
			if err != nil {
				return fmt.Errorf("entry %d: %w", seq, err)
			}
			if rec.Seq != seq {
				return fmt.Errorf("entry %d holds a record of seq %d", seq, rec.Seq)
			}
			ids = append(ids, rec.ID)
			plain = plain[n:]
		}
		if !slices.Equal(ids, w.ids) {
			return fmt.Errorf("entry %d holds %v, want %v", seq, ids, w.ids)
		}
		got++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != len(want) {
		t.Fatalf("%d journal entries after the writes, want %d", got, len(want))
	}
}
