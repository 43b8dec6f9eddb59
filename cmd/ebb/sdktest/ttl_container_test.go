package sdktest

import (
	"context"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// setDefaultTTL replaces a container's defaultTtl (nil: TTL off).
func setDefaultTTL(t testing.TB, c *azcosmos.ContainerClient, def *int32) {
	t.Helper()
	r, err := c.Read(context.Background(), nil)
	if err != nil {
		t.Fatalf("read container: %v", err)
	}
	props := *r.ContainerProperties
	props.DefaultTimeToLive = def
	if _, err := c.Replace(context.Background(), props, nil); err != nil {
		t.Fatalf("replace container defaultTtl %v: %v", def, err)
	}
}

// TestTTLContainerChangeAppliesAtOnce: with TTL off items live on and their
// own ttl is kept but ignored; turning TTL on (-1) makes an item whose own
// ttl has run out vanish at once, setting n does the same for items without
// a ttl of their own, and the count query agrees with the reads.
func TestTTLContainerChangeAppliesAtOnce(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	db := newDatabase(t, s.client(t), "ttlChange")
	c := newContainer(t, db, "c", "/pk", nil)
	ctx := context.Background()
	pk := azcosmos.NewPartitionKeyString("p")
	tsOwn := createRaw(t, c, "p", `{"id":"own","pk":"p","ttl":1}`)
	tsPlain := createRaw(t, c, "p", `{"id":"plain","pk":"p"}`)
	createRaw(t, c, "p", `{"id":"forever","pk":"p","ttl":-1}`)

	sleepUntil(max(tsOwn, tsPlain) + 1)
	for _, id := range []string{"own", "plain", "forever"} {
		if _, err := c.ReadItem(ctx, pk, id, nil); err != nil {
			t.Fatalf("TTL off: read %s: %v", id, err)
		}
	}

	setDefaultTTL(t, c, ptr[int32](-1))
	if _, err := c.ReadItem(ctx, pk, "own", nil); statusOf(err) != 404 {
		t.Errorf("defaultTtl -1: item with ttl 1 written at %d: read gave %v, want 404", tsOwn, err)
	}
	if _, err := c.ReadItem(ctx, pk, "plain", nil); err != nil {
		t.Errorf("defaultTtl -1: item without ttl: %v", err)
	}

	setDefaultTTL(t, c, ptr[int32](1))
	if _, err := c.ReadItem(ctx, pk, "plain", nil); statusOf(err) != 404 {
		t.Errorf("defaultTtl 1: item without ttl written at %d: read gave %v, want 404", tsPlain, err)
	}
	if ids := listIDs(t, c, "p"); len(ids) != 1 || ids[0] != "forever" {
		t.Errorf("after defaultTtl 1 the query lists %v, want [forever]", ids)
	}
	pager := c.NewQueryItemsPager("SELECT VALUE COUNT(1) FROM c", pk, nil)
	page, err := pager.NextPage(ctx)
	if err != nil || len(page.Items) != 1 || string(page.Items[0]) != "1" {
		t.Errorf("count after expiry: %v %q, want [1]", err, page.Items)
	}
}
