package engine

import (
	"bytes"
	"context"
	"testing"
)

// TestOmitBody: a write with OmitBody returns its item without a Body but
// with the ID, TS, ETag and expiry a write without it returns, and stores
// the same document; in a batch it applies to its own operation only; an
// IfMatch with it still decides.
func TestOmitBody(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk)
	defer db.Close()
	c := mustCreateContainer(t, db, ContainerProperties{ID: "c", DefaultTTL: TTL(100)})

	full, err := c.Upsert(ctx, []byte(`{"id":"a","v":1}`))
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(1)
	lean, err := c.Upsert(ctx, []byte(`{"id":"b","v":2,"ttl":30}`), OmitBody())
	if err != nil {
		t.Fatal(err)
	}
	if lean.Body != nil || lean.ID != "b" || lean.TS != full.TS+1 || lean.ETag == "" || lean.ETag == full.ETag ||
		lean.ExpiresAt != lean.TS+30 {
		t.Fatalf("Upsert with OmitBody = %+v (after %+v)", lean, full)
	}
	got, err := c.Read(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if got.ETag != lean.ETag || got.TS != lean.TS || !bytes.Contains(got.Body, []byte(`"v":2`)) {
		t.Fatalf("Read(b) = %+v %s after a write that returned %+v", got, got.Body, lean)
	}

	if _, err := c.Replace(ctx, []byte(`{"id":"b","v":3}`), IfMatch(full.ETag), OmitBody()); err == nil {
		t.Fatal("Replace with a stale IfMatch and OmitBody succeeded")
	}
	it, err := c.Replace(ctx, []byte(`{"id":"b","v":3}`), IfMatch(lean.ETag), OmitBody())
	if err != nil || it.Body != nil || it.ETag == lean.ETag {
		t.Fatalf("Replace with IfMatch and OmitBody = %+v, %v", it, err)
	}

	b := c.NewBatch().Upsert([]byte(`{"id":"x"}`), OmitBody()).Upsert([]byte(`{"id":"y"}`)).Create([]byte(`{"id":"z"}`), OmitBody())
	items, err := c.ExecuteBatch(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 3 || items[0].Body != nil || items[2].Body != nil || items[1].Body == nil ||
		items[0].ETag == "" || items[2].ETag == "" {
		t.Fatalf("batch items = %+v", items)
	}
	for _, it := range items {
		r, err := c.Read(ctx, it.ID)
		if err != nil || r.ETag != it.ETag {
			t.Fatalf("Read(%s) = %+v, %v; the batch returned etag %s", it.ID, r, err, it.ETag)
		}
	}
	if y, _ := c.Read(ctx, "y"); !bytes.Equal(y.Body, items[1].Body) {
		t.Fatalf("batch body of y %s, Read %s", items[1].Body, y.Body)
	}
}
