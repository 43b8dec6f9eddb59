package sdktest

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestServeRestartKeepsData: `ebb serve` exits 0 on SIGTERM, and a new
// server on the same --dir serves what the first stored, with its
// container's defaultTtl and its items' _etag unchanged. It logs how long
// each start took until the endpoint was printed (no assertion: the
// machine is shared).
func TestServeRestartKeepsData(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	pk := azcosmos.NewPartitionKeyString("p")

	start := time.Now()
	s1 := launch(t, dir)
	t.Logf("first start: endpoint printed after %v", time.Since(start))
	db := newDatabase(t, s1.client(t), "keep")
	c := newContainer(t, db, "c", "/pk", ptr[int32](3600))
	w, err := c.CreateItem(ctx, pk, []byte(`{"id":"a","pk":"p","v":1}`), nil)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	s1.stop(t, syscall.SIGTERM)

	start = time.Now()
	s2 := launch(t, dir)
	t.Logf("restart: endpoint printed after %v", time.Since(start))
	defer s2.stop(t, syscall.SIGINT)
	client := s2.client(t)
	c2, err := client.NewContainer("keep", "c")
	if err != nil {
		t.Fatal(err)
	}
	props, err := c2.Read(ctx, nil)
	if err != nil {
		t.Fatalf("read container after restart: %v", err)
	}
	if d := props.ContainerProperties.DefaultTimeToLive; d == nil || *d != 3600 {
		t.Errorf("after restart defaultTtl %v, want 3600", d)
	}
	r, err := c2.ReadItem(ctx, pk, "a", nil)
	if err != nil {
		t.Fatalf("read item after restart: %v", err)
	}
	if r.ETag != w.ETag {
		t.Errorf("after restart _etag %q, want %q", r.ETag, w.ETag)
	}
}
