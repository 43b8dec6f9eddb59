package sdktest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// doc is the item shape the CRUD tests use.
type doc struct {
	ID   string `json:"id"`
	PK   string `json:"pk"`
	V    int    `json:"v"`
	ETag string `json:"_etag,omitempty"`
	RID  string `json:"_rid,omitempty"`
	TS   int64  `json:"_ts,omitempty"`
}

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readDoc reads id in partition pk and decodes it.
func readDoc(t testing.TB, c *azcosmos.ContainerClient, pk, id string) (doc, azcosmos.ItemResponse) {
	t.Helper()
	r, err := c.ReadItem(context.Background(), azcosmos.NewPartitionKeyString(pk), id, nil)
	if err != nil {
		t.Fatalf("read %s/%s: %v", pk, id, err)
	}
	var d doc
	if err := json.Unmarshal(r.Value, &d); err != nil {
		t.Fatalf("read %s/%s: body %s: %v", pk, id, r.Value, err)
	}
	return d, r
}

// TestItemCRUDPartitionKeys: the same id lives independently in two
// partitions; create conflicts, If-Match, upsert, delete and the system
// properties behave as Cosmos DB's do.
func TestItemCRUDPartitionKeys(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	db := newDatabase(t, s.client(t), "crud")
	c := newContainer(t, db, "items", "/pk", nil)
	ctx := context.Background()
	p1, p2 := azcosmos.NewPartitionKeyString("p1"), azcosmos.NewPartitionKeyString("p2")

	r1, err := c.CreateItem(ctx, p1, marshal(t, doc{ID: "a", PK: "p1", V: 1}), nil)
	if err != nil {
		t.Fatalf("create p1/a: %v", err)
	}
	if r1.RawResponse.StatusCode != 201 || len(r1.Value) != 0 || r1.ETag == "" || r1.SessionToken == nil {
		t.Errorf("create p1/a: status %d, body %q, etag %q, session token %v; want 201, no body (Prefer: return=minimal), an etag and a session token",
			r1.RawResponse.StatusCode, r1.Value, r1.ETag, r1.SessionToken)
	}
	if _, err := c.CreateItem(ctx, p2, marshal(t, doc{ID: "a", PK: "p2", V: 2}), nil); err != nil {
		t.Fatalf("create p2/a (same id, other partition): %v", err)
	}
	_, err = c.CreateItem(ctx, p1, marshal(t, doc{ID: "a", PK: "p1", V: 9}), nil)
	wantStatus(t, "create duplicate p1/a", err, 409)

	a1, rr := readDoc(t, c, "p1", "a")
	a2, _ := readDoc(t, c, "p2", "a")
	if a1.V != 1 || a2.V != 2 {
		t.Fatalf("same id in two partitions: p1/a v=%d, p2/a v=%d; want 1 and 2", a1.V, a2.V)
	}
	if a1.ETag == "" || a1.RID == "" || a1.TS == 0 || string(rr.ETag) != a1.ETag {
		t.Errorf("p1/a system properties: _etag %q (header %q), _rid %q, _ts %d", a1.ETag, rr.ETag, a1.RID, a1.TS)
	}
	_, err = c.ReadItem(ctx, azcosmos.NewPartitionKeyString("p3"), "a", nil)
	wantStatus(t, "read a in a partition without it", err, 404)

	// Partition key in the header and in the body must agree.
	_, err = c.CreateItem(ctx, p1, marshal(t, doc{ID: "x", PK: "p2"}), nil)
	wantStatus(t, "create with a partition key header unlike the body's", err, 400)

	// Replace with If-Match: the current etag wins, a stale one is refused.
	etag := azcore.ETag(a1.ETag)
	rep, err := c.ReplaceItem(ctx, p1, "a", marshal(t, doc{ID: "a", PK: "p1", V: 10}), &azcosmos.ItemOptions{IfMatchEtag: &etag, EnableContentResponseOnWrite: true})
	if err != nil {
		t.Fatalf("replace p1/a If-Match current etag: %v", err)
	}
	if rep.ETag == etag {
		t.Errorf("replace kept the etag %q", etag)
	}
	_, err = c.ReplaceItem(ctx, p1, "a", marshal(t, doc{ID: "a", PK: "p1", V: 11}), &azcosmos.ItemOptions{IfMatchEtag: &etag})
	wantStatus(t, "replace p1/a with a stale If-Match", err, 412)
	if d, _ := readDoc(t, c, "p1", "a"); d.V != 10 {
		t.Errorf("after the refused replace p1/a has v=%d, want 10", d.V)
	}
	_, err = c.ReplaceItem(ctx, p1, "nope", marshal(t, doc{ID: "nope", PK: "p1"}), nil)
	wantStatus(t, "replace a missing item", err, 404)
	if d, _ := readDoc(t, c, "p2", "a"); d.V != 2 {
		t.Errorf("replace in p1 touched p2/a: v=%d", d.V)
	}

	// Upsert creates (201) then replaces (200).
	u1, err := c.UpsertItem(ctx, p2, marshal(t, doc{ID: "b", PK: "p2", V: 1}), nil)
	if err != nil || u1.RawResponse.StatusCode != 201 {
		t.Fatalf("upsert new p2/b: %v, want 201", err)
	}
	u2, err := c.UpsertItem(ctx, p2, marshal(t, doc{ID: "b", PK: "p2", V: 2}), nil)
	if err != nil || u2.RawResponse.StatusCode != 200 {
		t.Fatalf("upsert existing p2/b: %v, want 200", err)
	}
	stale := u1.ETag
	_, err = c.UpsertItem(ctx, p2, marshal(t, doc{ID: "b", PK: "p2", V: 3}), &azcosmos.ItemOptions{IfMatchEtag: &stale})
	wantStatus(t, "upsert p2/b with a stale If-Match", err, 412)

	// Delete one partition's a; the other's stays.
	d, err := c.DeleteItem(ctx, p1, "a", nil)
	if err != nil || d.RawResponse.StatusCode != 204 {
		t.Fatalf("delete p1/a: %v, want 204", err)
	}
	_, err = c.ReadItem(ctx, p1, "a", nil)
	wantStatus(t, "read deleted p1/a", err, 404)
	_, err = c.DeleteItem(ctx, p1, "a", nil)
	wantStatus(t, "delete p1/a again", err, 404)
	if d, _ := readDoc(t, c, "p2", "a"); d.V != 2 {
		t.Errorf("deleting p1/a changed p2/a: v=%d", d.V)
	}
}

// TestContainerProperties: a container keeps its partition key, defaultTtl
// and indexing policy, Replace changes them, and the database and container
// feeds list what exists.
func TestContainerProperties(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	client := s.client(t)
	db := newDatabase(t, client, "props")
	ctx := context.Background()
	props := azcosmos.ContainerProperties{
		ID:                     "c",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/tenant"}},
		DefaultTimeToLive:      ptr[int32](3600),
		IndexingPolicy: &azcosmos.IndexingPolicy{
			Automatic:     true,
			IndexingMode:  azcosmos.IndexingModeConsistent,
			IncludedPaths: []azcosmos.IncludedPath{{Path: "/*"}},
			ExcludedPaths: []azcosmos.ExcludedPath{{Path: "/\"_etag\"/?"}},
		},
	}
	if _, err := db.CreateContainer(ctx, props, nil); err != nil {
		t.Fatalf("create container: %v", err)
	}
	_, err := db.CreateContainer(ctx, props, nil)
	wantStatus(t, "create the container again", err, 409)
	c, _ := db.NewContainer("c")
	r, err := c.Read(ctx, nil)
	if err != nil {
		t.Fatalf("read container: %v", err)
	}
	got := r.ContainerProperties
	if len(got.PartitionKeyDefinition.Paths) != 1 || got.PartitionKeyDefinition.Paths[0] != "/tenant" {
		t.Errorf("partition key paths %v, want [/tenant]", got.PartitionKeyDefinition.Paths)
	}
	if got.DefaultTimeToLive == nil || *got.DefaultTimeToLive != 3600 {
		t.Errorf("defaultTtl %v, want 3600", got.DefaultTimeToLive)
	}
	if got.IndexingPolicy == nil || got.IndexingPolicy.IndexingMode != azcosmos.IndexingModeConsistent {
		t.Errorf("indexing policy %+v, want consistent", got.IndexingPolicy)
	}

	upd := *got
	upd.DefaultTimeToLive = ptr[int32](-1)
	if _, err := c.Replace(ctx, upd, nil); err != nil {
		t.Fatalf("replace container with defaultTtl -1: %v", err)
	}
	r, err = c.Read(ctx, nil)
	if err != nil {
		t.Fatalf("read container: %v", err)
	}
	if d := r.ContainerProperties.DefaultTimeToLive; d == nil || *d != -1 {
		t.Errorf("after replace defaultTtl %v, want -1", d)
	}
	// TTL needs an index (Cosmos DB refuses TTL with indexing mode none).
	upd2 := *r.ContainerProperties
	upd2.IndexingPolicy = &azcosmos.IndexingPolicy{IndexingMode: azcosmos.IndexingModeNone}
	_, err = c.Replace(ctx, upd2, nil)
	wantStatus(t, "replace container with defaultTtl -1 and indexing mode none", err, 400)
	upd2.DefaultTimeToLive = nil
	if _, err := c.Replace(ctx, upd2, nil); err != nil {
		t.Fatalf("replace container without defaultTtl, indexing mode none: %v", err)
	}
	r, err = c.Read(ctx, nil)
	if err != nil {
		t.Fatalf("read container: %v", err)
	}
	if d := r.ContainerProperties.DefaultTimeToLive; d != nil {
		t.Errorf("after removing defaultTtl it is %d, want absent", *d)
	}
	if ip := r.ContainerProperties.IndexingPolicy; ip == nil || ip.IndexingMode != azcosmos.IndexingModeNone {
		t.Errorf("after replace indexing policy %+v, want none", ip)
	}

	var names []string
	pager := db.NewQueryContainersPager("SELECT * FROM root r", nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatalf("query containers: %v", err)
		}
		for _, cp := range page.Containers {
			names = append(names, cp.ID)
		}
	}
	if len(names) != 1 || names[0] != "c" {
		t.Errorf("containers %v, want [c]", names)
	}
	if _, err := c.Delete(ctx, nil); err != nil {
		t.Fatalf("delete container: %v", err)
	}
	_, err = c.Read(ctx, nil)
	wantStatus(t, "read deleted container", err, 404)
	if _, err := db.Delete(ctx, nil); err != nil {
		t.Fatalf("delete database: %v", err)
	}
	_, err = db.Read(ctx, nil)
	wantStatus(t, "read deleted database", err, 404)
}
