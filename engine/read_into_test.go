package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"unsafe"
)

// TestReadInto: ReadInto answers what Read answers, renders into the
// storage it is given (reused from one call to the next, capacity kept, so
// a loop allocates far less than with Read), leaves that storage untouched
// on an error, allocates nothing for a cached etag, and on a keyed
// container works only through Partition.
func TestReadInto(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk)
	defer db.Close()
	c := mustCreateContainer(t, db, ContainerProperties{ID: "c", DefaultTTL: TTL(-1)})
	for i := range 20 {
		pad := bytes.Repeat([]byte("x"), 50*i) // bodies of growing and shrinking sizes
		if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"k%02d","pad":%q}`, i, pad)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Upsert(ctx, []byte(`{"id":"gone","ttl":1}`)); err != nil {
		t.Fatal(err)
	}

	buf := make([]byte, 0, 4096)
	for _, i := range []int{19, 3, 0, 12, 19} {
		id := fmt.Sprintf("k%02d", i)
		want, err := c.Read(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.ReadInto(ctx, id, buf)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Body, want.Body) || got.ID != want.ID || got.ETag != want.ETag || got.TS != want.TS || got.ExpiresAt != want.ExpiresAt {
			t.Fatalf("ReadInto(%s) = %+v, Read = %+v", id, got, want)
		}
		if cap(got.Body) != cap(buf) || unsafe.SliceData(got.Body) != unsafe.SliceData(buf) {
			t.Fatalf("ReadInto(%s) did not render into the %d-byte buffer it was given", id, cap(buf))
		}
		buf = got.Body
	}

	// An error leaves buf as it was.
	before := bytes.Clone(buf)
	if _, err := c.ReadInto(ctx, "absent", buf); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReadInto(absent) = %v, want ErrNotFound", err)
	}
	clk.Advance(5) // "gone" expires
	if _, err := c.ReadInto(ctx, "gone", buf); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReadInto(expired) = %v, want ErrNotFound", err)
	}
	if !bytes.Equal(buf, before) {
		t.Fatal("a failed ReadInto changed the buffer")
	}

	// A small buffer grows.
	got, err := c.ReadInto(ctx, "k19", make([]byte, 0, 8))
	if err != nil || len(got.Body) < 19*50 {
		t.Fatalf("ReadInto with a small buffer: %d bytes, %v", len(got.Body), err)
	}

	// Reused storage: Read allocates the body, ReadInto nothing at all (the
	// etag of k10's commit is cached since it was read above).
	readAllocs := testing.AllocsPerRun(200, func() { c.Read(ctx, "k10") })
	intoAllocs := testing.AllocsPerRun(200, func() {
		it, _ := c.ReadInto(ctx, "k10", buf)
		buf = it.Body
	})
	if intoAllocs != 0 || readAllocs != 1 {
		t.Fatalf("ReadInto makes %.1f allocations a read, Read %.1f; want 0 and 1", intoAllocs, readAllocs)
	}
	t.Logf("allocations a read: Read %.1f, ReadInto %.1f", readAllocs, intoAllocs)

	// A keyed container needs its key.
	k := mustCreateContainer(t, db, ContainerProperties{ID: "keyed", PartitionKeyPath: "/pk"})
	if _, err := k.Upsert(ctx, []byte(`{"id":"a","pk":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := k.ReadInto(ctx, "a", buf); !errors.Is(err, ErrInvalidPartitionKey) {
		t.Fatalf("ReadInto on a keyed container = %v, want ErrInvalidPartitionKey", err)
	}
	it, err := k.Partition(StringKey("x")).ReadInto(ctx, "a", buf)
	if err != nil || it.ID != "a" || it.PartitionKey != StringKey("x") {
		t.Fatalf("Partition.ReadInto = %+v, %v", it, err)
	}
	if _, err := k.Partition(StringKey("y")).ReadInto(ctx, "a", buf); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Partition(y).ReadInto(a) = %v, want ErrNotFound", err)
	}
}
