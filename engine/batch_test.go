package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestBatchLimits: a batch takes operations up to its limits, by count and
// by bytes of documents, and no further; the operation beyond a limit is
// not kept (the batch's memory stays bounded), ExecuteBatch refuses the
// batch with ErrBatchTooLarge naming the limit and the count, and nothing
// is written. Random limits, sizes and operation mixes; the zero Batch has
// the defaults, NewBatch the DB's.
func TestBatchLimits(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 9))
	for round := range 12 {
		maxOps, maxBytes := 1+rng.IntN(20), 200+rng.IntN(5000)
		zero := round%4 == 0 // the zero Batch against a DB with the default limits
		var db *DB
		if zero {
			maxOps, maxBytes = DefaultMaxBatchOperations, DefaultMaxBatchBytes
			db = openTest(t, t.TempDir(), newFakeClock(t0))
		} else {
			db = openTest(t, t.TempDir(), newFakeClock(t0), func(o *Options) { o.MaxBatchOperations, o.MaxBatchBytes = maxOps, maxBytes })
		}
		c := mustCreateContainer(t, db, ContainerProperties{ID: "c"})
		b := c.NewBatch()
		if zero {
			b = new(Batch)
		}
		ops, bytes, n := 0, 0, 0
		var refusedAt int
		for {
			id := fmt.Sprintf("k%05d", n)
			pad := rng.IntN(maxBytes/4 + 1)
			if zero {
				pad = rng.IntN(80_000)
			}
			doc := fmt.Sprintf(`{"id":%q,"pad":"%s"}`, id, strings.Repeat("x", pad))
			before, isDelete := b.Len(), rng.IntN(5) == 0
			if isDelete {
				b.Delete(id)
			} else {
				b.Upsert([]byte(doc))
			}
			if b.Len() == before {
				refusedAt = n
				break
			}
			ops++
			if !isDelete {
				bytes += len(doc) // stored as given: no whitespace, no system properties
			}
			n++
			if ops > maxOps || bytes > maxBytes {
				t.Fatalf("round %d: batch took %d operations / %d bytes, beyond the limits %d / %d", round, ops, bytes, maxOps, maxBytes)
			}
		}
		if b.Len() != ops || b.bytes != bytes {
			t.Fatalf("round %d: batch holds %d operations / %d bytes, want %d / %d", round, b.Len(), b.bytes, ops, bytes)
		}
		_, err := c.ExecuteBatch(ctx, b)
		if !errors.Is(err, ErrBatchTooLarge) {
			t.Fatalf("round %d: ExecuteBatch after %d operations: %v, want ErrBatchTooLarge", round, ops, err)
		}
		want := fmt.Sprintf("more than the limit of %d", maxBytes)
		if ops == maxOps {
			want = fmt.Sprintf("batch operation %d (", refusedAt)
			want2 := fmt.Sprintf(") is one more than the limit of %d operations", maxOps)
			if !strings.Contains(err.Error(), want2) {
				t.Errorf("round %d: error %q does not say %q", round, err, want2)
			}
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("round %d: error %q does not say %q", round, err, want)
		}
		if st := c.Stats(); st.Items != 0 {
			t.Errorf("round %d: a refused batch wrote %d items", round, st.Items)
		}
		db.Close()
	}
}

// TestBatchBeyondDBLimits: a zero Batch (default limits) executed on a DB
// with lower limits is refused with ErrBatchTooLarge, naming the count.
func TestBatchBeyondDBLimits(t *testing.T) {
	db := openTest(t, t.TempDir(), newFakeClock(t0), func(o *Options) { o.MaxBatchOperations, o.MaxBatchBytes = 3, 100 })
	defer db.Close()
	c := mustCreateContainer(t, db, ContainerProperties{ID: "c"})
	var b Batch
	for i := range 4 {
		b.Upsert(fmt.Appendf(nil, `{"id":"k%d"}`, i))
	}
	if _, err := c.ExecuteBatch(context.Background(), &b); !errors.Is(err, ErrBatchTooLarge) || !strings.Contains(err.Error(), "4 operations, more than the limit of 3") {
		t.Errorf("4 operations on a DB limited to 3: %v", err)
	}
	var big Batch
	big.Upsert(fmt.Appendf(nil, `{"id":"a","pad":"%s"}`, strings.Repeat("x", 100)))
	if _, err := c.ExecuteBatch(context.Background(), &big); !errors.Is(err, ErrBatchTooLarge) || !strings.Contains(err.Error(), "more than the limit of 100") {
		t.Errorf("a batch of 120 bytes on a DB limited to 100: %v", err)
	}
}

// TestWriteEntryPointsNilAndEmpty: nil and empty inputs on every write
// entry point get a clear error (or, for a nil option, no effect), never a
// panic. A nil or empty batch is refused with ErrEmptyBatch; methods on a
// nil *Batch do nothing.
func TestWriteEntryPointsNilAndEmpty(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), newFakeClock(t0))
	defer db.Close()
	c := mustCreateContainer(t, db, ContainerProperties{ID: "c"})
	var nilOpt WriteOption
	noPanic := func(name string, f func() error, want error) {
		t.Helper()
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("%s panicked: %v", name, p)
			}
		}()
		if err := f(); !errors.Is(err, want) || (want != nil && err.Error() == want.Error()) {
			t.Errorf("%s = %v, want %v wrapped with detail", name, err, want)
		}
	}
	one := func(_ Item, err error) error { return err }
	many := func(_ []Item, err error) error { return err }
	noPanic("Create(nil)", func() error { return one(c.Create(ctx, nil)) }, ErrInvalidDocument)
	noPanic("Upsert(empty)", func() error { return one(c.Upsert(ctx, []byte{})) }, ErrInvalidDocument)
	noPanic("Replace(nil)", func() error { return one(c.Replace(ctx, nil)) }, ErrInvalidDocument)
	noPanic(`Delete("")`, func() error { return c.Delete(ctx, "") }, ErrInvalidDocument)
	noPanic(`Read("")`, func() error { return one(c.Read(ctx, "")) }, ErrInvalidDocument)
	noPanic("ExecuteBatch(nil)", func() error { return many(c.ExecuteBatch(ctx, nil)) }, ErrEmptyBatch)
	noPanic("ExecuteBatch(empty)", func() error { return many(c.ExecuteBatch(ctx, new(Batch))) }, ErrEmptyBatch)
	noPanic("ExecuteBatch(NewBatch())", func() error { return many(c.ExecuteBatch(ctx, c.NewBatch())) }, ErrEmptyBatch)
	noPanic("Batch.Upsert(nil)", func() error { return many(c.ExecuteBatch(ctx, new(Batch).Upsert(nil))) }, ErrInvalidDocument)
	noPanic(`Batch.Delete("")`, func() error { return many(c.ExecuteBatch(ctx, new(Batch).Delete(""))) }, ErrInvalidDocument)
	noPanic("methods on a nil *Batch", func() error {
		var b *Batch
		b = b.Create([]byte(`{"id":"a"}`)).Upsert(nil).Replace(nil).Delete("a")
		if b.Len() != 0 {
			return errors.New("a nil batch has operations")
		}
		return many(c.ExecuteBatch(ctx, b))
	}, ErrEmptyBatch)
	noPanic("CreateContainer(zero properties)", func() error { _, err := db.CreateContainer(ctx, ContainerProperties{}); return err }, ErrInvalidProperties)
	noPanic("SetProperties(zero properties)", func() error { return c.SetProperties(ctx, ContainerProperties{}) }, ErrInvalidProperties)
	noPanic(`DeleteContainer("")`, func() error { return db.DeleteContainer(ctx, "") }, ErrNotFound)

	// A nil write option is no option: the write goes through.
	if _, err := c.Upsert(ctx, []byte(`{"id":"a"}`), nilOpt); err != nil {
		t.Errorf("Upsert with a nil option: %v", err)
	}
	if _, err := c.ExecuteBatch(ctx, new(Batch).Upsert([]byte(`{"id":"b"}`), nilOpt).Delete("a", nilOpt)); err != nil {
		t.Errorf("a batch with nil options: %v", err)
	}
	if err := c.Delete(ctx, "b", nilOpt); err != nil {
		t.Errorf("Delete with a nil option: %v", err)
	}
}

// TestBatchResultBodiesAreSeparate: the bodies ExecuteBatch returns (which
// share one allocation) are each the item as Read returns it, and writing
// past the end of one, as append does, never changes another.
func TestBatchResultBodiesAreSeparate(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), newFakeClock(t0))
	defer db.Close()
	c := mustCreateContainer(t, db, ContainerProperties{ID: "c"})
	b := c.NewBatch()
	for i := range 5 {
		b.Upsert([]byte(fmt.Sprintf(`{"id":"k%d","v":%q}`, i, strings.Repeat("v", i*10))))
	}
	items, err := c.ExecuteBatch(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]string, len(items))
	for i, it := range items {
		want[i] = string(it.Body)
		got, err := c.Read(ctx, it.ID)
		if err != nil || string(got.Body) != want[i] {
			t.Fatalf("item %d: batch returned %s, Read %s, %v", i, it.Body, got.Body, err)
		}
	}
	for i := range items {
		_ = append(items[i].Body, "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"...)
	}
	for i, it := range items {
		if string(it.Body) != want[i] {
			t.Fatalf("item %d changed by appending to another: %s", i, it.Body)
		}
	}
}

// TestBatchLimitCountsStoredBytes: the byte limit counts documents as
// stored, without whitespace and system properties: a batch of documents
// whose text is over the limit and whose stored form is not commits.
func TestBatchLimitCountsStoredBytes(t *testing.T) {
	db := openTest(t, t.TempDir(), newFakeClock(t0), func(o *Options) { o.MaxBatchBytes = 1000 })
	defer db.Close()
	c := mustCreateContainer(t, db, ContainerProperties{ID: "c"})
	b := c.NewBatch()
	spaces := strings.Repeat(" ", 200)
	stored := 0
	for i := range 8 {
		d := fmt.Sprintf(`{%s"id":"k%d",%s"_etag":"old",%s"v":%d%s}`, spaces, i, spaces, spaces, i, spaces)
		stored += len(fmt.Sprintf(`{"id":"k%d","v":%d}`, i, i))
		b.Upsert([]byte(d))
	}
	if b.Len() != 8 {
		t.Fatalf("the batch took %d of 8 operations of %d stored bytes under a limit of 1000", b.Len(), stored)
	}
	items, err := c.ExecuteBatch(context.Background(), b)
	if err != nil || len(items) != 8 {
		t.Fatalf("ExecuteBatch: %d items, %v", len(items), err)
	}
}
