package sdktest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// invalidTTLMessage is Cosmos DB's text for an item ttl it refuses.
func invalidTTLMessage(v string) string {
	return fmt.Sprintf("The input ttl '%s' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire.", v)
}

// badTTLs are item ttl values Cosmos DB refuses. exact marks those whose
// error text is pinned (integers, printed as given).
var badTTLs = []struct {
	raw   string
	exact bool
}{
	{"0", true}, {"-2", true}, {"2147483648", false},
	{"1.5", false}, {`"10"`, false}, {"null", false}, {"true", false},
}

// wantInvalidTTL fails unless err is a 400 that carries Cosmos DB's message.
func wantInvalidTTL(t testing.TB, what string, err error, raw string, exact bool) {
	t.Helper()
	if statusOf(err) != 400 {
		t.Errorf("%s with ttl %s: got %v, want HTTP 400", what, raw, err)
		return
	}
	msg := err.Error()
	if exact && !strings.Contains(msg, invalidTTLMessage(raw)) {
		t.Errorf("%s with ttl %s: error lacks %q:\n%s", what, raw, invalidTTLMessage(raw), msg)
	}
	if !exact && !strings.Contains(msg, "The input ttl '") {
		t.Errorf("%s with ttl %s: error lacks \"The input ttl '\":\n%s", what, raw, msg)
	}
}

// TestTTLInvalidRefused writes every refused ttl through create, replace,
// upsert, patch and batch, on containers with TTL off, -1 and n: each is a
// 400 with Cosmos DB's message, nothing is created, and the existing item is
// unchanged. Valid extremes (-1, 2147483647, 6e1) are accepted.
func TestTTLInvalidRefused(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	db := newDatabase(t, s.client(t), "ttlInvalid")
	ctx := context.Background()
	pk := azcosmos.NewPartitionKeyString("p")
	for _, def := range []*int32{nil, ptr[int32](-1), ptr[int32](100)} {
		name := "off"
		if def != nil {
			name = fmt.Sprint(*def)
		}
		c := newContainer(t, db, "c"+strings.ReplaceAll(name, "-", "m"), "/pk", def)
		good := []byte(`{"id":"good","pk":"p","v":1}`)
		created, err := c.CreateItem(ctx, pk, good, withContent)
		if err != nil {
			t.Fatalf("container %s: create good: %v", name, err)
		}
		for _, bad := range badTTLs {
			doc := []byte(fmt.Sprintf(`{"id":"bad","pk":"p","ttl":%s}`, bad.raw))
			_, err := c.CreateItem(ctx, pk, doc, nil)
			wantInvalidTTL(t, "container "+name+": create", err, bad.raw, bad.exact)
			if _, err := c.ReadItem(ctx, pk, "bad", nil); statusOf(err) != 404 {
				t.Errorf("container %s: item created despite ttl %s: read gave %v", name, bad.raw, err)
			}
			_, err = c.UpsertItem(ctx, pk, doc, nil)
			wantInvalidTTL(t, "container "+name+": upsert (new)", err, bad.raw, bad.exact)

			over := []byte(fmt.Sprintf(`{"id":"good","pk":"p","v":2,"ttl":%s}`, bad.raw))
			_, err = c.ReplaceItem(ctx, pk, "good", over, nil)
			wantInvalidTTL(t, "container "+name+": replace", err, bad.raw, bad.exact)
			_, err = c.UpsertItem(ctx, pk, over, nil)
			wantInvalidTTL(t, "container "+name+": upsert (existing)", err, bad.raw, bad.exact)

			batch := c.NewTransactionalBatch(pk)
			batch.CreateItem([]byte(`{"id":"b1","pk":"p"}`), nil)
			batch.CreateItem([]byte(fmt.Sprintf(`{"id":"b2","pk":"p","ttl":%s}`, bad.raw)), nil)
			br, err := c.ExecuteTransactionalBatch(ctx, batch, nil)
			if err == nil && br.Success {
				t.Errorf("container %s: batch with ttl %s succeeded", name, bad.raw)
			}
			if _, err := c.ReadItem(ctx, pk, "b1", nil); statusOf(err) != 404 {
				t.Errorf("container %s: failed batch (ttl %s) left b1 behind: read gave %v", name, bad.raw, err)
			}
		}
		var ops azcosmos.PatchOperations
		ops.AppendSet("/ttl", 0)
		_, err = c.PatchItem(ctx, pk, "good", ops, nil)
		wantInvalidTTL(t, "container "+name+": patch set /ttl", err, "0", true)

		after, err := c.ReadItem(ctx, pk, "good", nil)
		if err != nil {
			t.Fatalf("container %s: read good: %v", name, err)
		}
		if after.ETag != created.ETag || !bytes.Contains(after.Value, []byte(`"v":1`)) || bytes.Contains(after.Value, []byte(`"ttl"`)) {
			t.Errorf("container %s: refused writes changed the item:\nbefore %s (%s)\nafter  %s (%s)", name, created.Value, created.ETag, after.Value, after.ETag)
		}

		for i, ok := range []string{"-1", "2147483647", "6e1", "60.0"} {
			id := fmt.Sprintf("ok%d", i)
			if _, err := c.CreateItem(ctx, pk, []byte(fmt.Sprintf(`{"id":%q,"pk":"p","ttl":%s}`, id, ok)), nil); err != nil {
				t.Errorf("container %s: create with valid ttl %s: %v", name, ok, err)
			}
		}
	}
}

// TestDefaultTTLInvalidRefused: a container defaultTtl of 0, -2 or above
// 2147483647 is a 400 on create (no container is made) and on replace (the
// container keeps its settings).
func TestDefaultTTLInvalidRefused(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	db := newDatabase(t, s.client(t), "defTTLInvalid")
	ctx := context.Background()
	for i, bad := range []int32{0, -2, -100} {
		id := fmt.Sprintf("bad%d", i)
		props := azcosmos.ContainerProperties{
			ID:                     id,
			PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
			DefaultTimeToLive:      ptr(bad),
		}
		_, err := db.CreateContainer(ctx, props, nil)
		if statusOf(err) != 400 {
			t.Errorf("create container with defaultTtl %d: got %v, want HTTP 400", bad, err)
		}
		c, _ := db.NewContainer(id)
		if _, err := c.Read(ctx, nil); statusOf(err) != 404 {
			t.Errorf("container with defaultTtl %d exists after a refused create: read gave %v", bad, err)
		}
	}

	c := newContainer(t, db, "ok", "/pk", ptr[int32](50))
	read, err := c.Read(ctx, nil)
	if err != nil {
		t.Fatalf("read container: %v", err)
	}
	props := *read.ContainerProperties
	props.DefaultTimeToLive = ptr[int32](0)
	if _, err := c.Replace(ctx, props, nil); statusOf(err) != 400 {
		t.Errorf("replace container with defaultTtl 0: got %v, want HTTP 400", err)
	}
	again, err := c.Read(ctx, nil)
	if err != nil {
		t.Fatalf("read container: %v", err)
	}
	if d := again.ContainerProperties.DefaultTimeToLive; d == nil || *d != 50 {
		t.Errorf("refused replace changed defaultTtl to %v, want 50", d)
	}
}
