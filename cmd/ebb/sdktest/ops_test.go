package sdktest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestPatch: every patch operation, a conditional patch, patching a missing
// item, and refused operations leaving the item unchanged.
func TestPatch(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	db := newDatabase(t, s.client(t), "patch")
	c := newContainer(t, db, "items", "/pk", nil)
	ctx := context.Background()
	pk := azcosmos.NewPartitionKeyString("p")
	if _, err := c.CreateItem(ctx, pk, []byte(`{"id":"a","pk":"p","n":1,"old":"x","keep":"k","arr":[1,2],"obj":{"in":1}}`), nil); err != nil {
		t.Fatalf("create: %v", err)
	}

	var ops azcosmos.PatchOperations
	ops.AppendSet("/set", "s")
	ops.AppendAdd("/arr/1", 9)
	ops.AppendReplace("/obj/in", 2)
	ops.AppendRemove("/old")
	ops.AppendIncrement("/n", 5)
	r, err := c.PatchItem(ctx, pk, "a", ops, withContent)
	if err != nil {
		t.Fatalf("patch: %v", err)
	}
	var got map[string]any
	if err := json.Unmarshal(r.Value, &got); err != nil {
		t.Fatalf("patch response %s: %v", r.Value, err)
	}
	want := map[string]any{"set": "s", "arr": []any{1.0, 9.0, 2.0}, "obj": map[string]any{"in": 2.0}, "n": 6.0, "keep": "k"}
	for k, v := range want {
		if !reflect.DeepEqual(got[k], v) {
			t.Errorf("after patch %s = %v, want %v (item %s)", k, got[k], v, r.Value)
		}
	}
	if _, ok := got["old"]; ok {
		t.Errorf("after remove /old the item still has it: %s", r.Value)
	}
	read, err := c.ReadItem(ctx, pk, "a", nil)
	if err != nil || read.ETag != r.ETag {
		t.Errorf("read after patch: %v, etag %q, want the patch's %q", err, read.ETag, r.ETag)
	}

	// Conditional patch: the filter must match.
	var cond azcosmos.PatchOperations
	cond.SetCondition("from c where c.n = 100")
	cond.AppendSet("/flag", true)
	_, err = c.PatchItem(ctx, pk, "a", cond, nil)
	wantStatus(t, "patch with a false condition", err, 412)
	var cond2 azcosmos.PatchOperations
	cond2.SetCondition("from c where c.n = 6")
	cond2.AppendSet("/flag", true)
	if _, err := c.PatchItem(ctx, pk, "a", cond2, nil); err != nil {
		t.Errorf("patch with a true condition: %v", err)
	}

	var missing azcosmos.PatchOperations
	missing.AppendSet("/x", 1)
	_, err = c.PatchItem(ctx, pk, "nope", missing, nil)
	wantStatus(t, "patch a missing item", err, 404)

	before, err := c.ReadItem(ctx, pk, "a", nil)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	for name, bad := range map[string]func(*azcosmos.PatchOperations){
		"replace a missing path": func(p *azcosmos.PatchOperations) { p.AppendReplace("/nothere", 1) },
		"increment a string":     func(p *azcosmos.PatchOperations) { p.AppendIncrement("/keep", 1) },
		"remove a missing path":  func(p *azcosmos.PatchOperations) { p.AppendRemove("/nothere") },
		"set the id":             func(p *azcosmos.PatchOperations) { p.AppendSet("/id", "b") },
		"set the partition key":  func(p *azcosmos.PatchOperations) { p.AppendSet("/pk", "q") },
		"a valid op, then a bad one": func(p *azcosmos.PatchOperations) {
			p.AppendSet("/good", 1)
			p.AppendIncrement("/keep", 1)
		},
	} {
		var p azcosmos.PatchOperations
		bad(&p)
		_, err := c.PatchItem(ctx, pk, "a", p, nil)
		if s := statusOf(err); s != 400 && s != 409 {
			t.Errorf("patch %s: got %v, want HTTP 400", name, err)
		}
	}
	after, err := c.ReadItem(ctx, pk, "a", nil)
	if err != nil || after.ETag != before.ETag {
		t.Errorf("refused patches changed the item: %v\nbefore %s\nafter  %s", err, before.Value, after.Value)
	}
}

// TestTransactionalBatch: a batch applies all its operations in order and
// reports each; a failing operation rolls the whole batch back and reports
// 424 for the others.
func TestTransactionalBatch(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	db := newDatabase(t, s.client(t), "batch")
	c := newContainer(t, db, "items", "/pk", nil)
	ctx := context.Background()
	pk := azcosmos.NewPartitionKeyString("p")
	if _, err := c.CreateItem(ctx, pk, []byte(`{"id":"old","pk":"p","n":1}`), nil); err != nil {
		t.Fatalf("create: %v", err)
	}

	b := c.NewTransactionalBatch(pk)
	b.CreateItem([]byte(`{"id":"new","pk":"p","n":1}`), nil)
	b.UpsertItem([]byte(`{"id":"up","pk":"p","n":2}`), nil)
	b.ReplaceItem("old", []byte(`{"id":"old","pk":"p","n":3}`), nil)
	var ops azcosmos.PatchOperations
	ops.AppendIncrement("/n", 10)
	b.PatchItem("new", ops, nil)
	b.ReadItem("new", nil)
	b.DeleteItem("up", nil)
	r, err := c.ExecuteTransactionalBatch(ctx, b, nil)
	if err != nil {
		t.Fatalf("batch: %v", err)
	}
	if !r.Success || len(r.OperationResults) != 6 {
		t.Fatalf("batch: success %v, results %s; want true and 6 results", r.Success, batchResults(r))
	}
	wantCodes := []int32{http.StatusCreated, http.StatusCreated, http.StatusOK, http.StatusOK, http.StatusOK, http.StatusNoContent}
	for i, op := range r.OperationResults {
		if op.StatusCode != wantCodes[i] {
			t.Errorf("operation %d: status %d, want %d", i, op.StatusCode, wantCodes[i])
		}
	}
	var readBack struct{ N int }
	if err := json.Unmarshal(r.OperationResults[4].ResourceBody, &readBack); err != nil || readBack.N != 11 {
		t.Errorf("batch read of new: %s (%v), want n=11 (the patch before it applied)", r.OperationResults[4].ResourceBody, err)
	}
	if _, err := c.ReadItem(ctx, pk, "up", nil); statusOf(err) != 404 {
		t.Errorf("item deleted in the batch: read gave %v", err)
	}

	// A conflict in the third operation: nothing is applied.
	b2 := c.NewTransactionalBatch(pk)
	b2.CreateItem([]byte(`{"id":"x1","pk":"p"}`), nil)
	b2.ReplaceItem("old", []byte(`{"id":"old","pk":"p","n":99}`), nil)
	b2.CreateItem([]byte(`{"id":"new","pk":"p"}`), nil)
	r2, err := c.ExecuteTransactionalBatch(ctx, b2, nil)
	if err != nil {
		t.Fatalf("failing batch: %v", err)
	}
	if r2.Success || r2.RawResponse.StatusCode != http.StatusMultiStatus || len(r2.OperationResults) != 3 {
		t.Fatalf("failing batch: success %v, status %d, %d results; want false, 207, 3", r2.Success, r2.RawResponse.StatusCode, len(r2.OperationResults))
	}
	for i, want := range []int32{http.StatusFailedDependency, http.StatusFailedDependency, http.StatusConflict} {
		if got := r2.OperationResults[i].StatusCode; got != want {
			t.Errorf("failing batch operation %d: status %d, want %d", i, got, want)
		}
	}
	if _, err := c.ReadItem(ctx, pk, "x1", nil); statusOf(err) != 404 {
		t.Errorf("rolled-back batch created x1: read gave %v", err)
	}
	var old struct{ N int }
	r3, err := c.ReadItem(ctx, pk, "old", nil)
	if err != nil || json.Unmarshal(r3.Value, &old) != nil || old.N != 3 {
		t.Errorf("rolled-back batch changed old: %v %s, want n=3", err, r3.Value)
	}

	// Every operation must use the batch's partition key.
	b4 := c.NewTransactionalBatch(pk)
	b4.CreateItem([]byte(`{"id":"y","pk":"other"}`), nil)
	r4, err := c.ExecuteTransactionalBatch(ctx, b4, nil)
	if err == nil && r4.Success {
		t.Errorf("batch creating an item of another partition succeeded")
	}
}

// batchResults describes a batch response's operation results for errors.
func batchResults(r azcosmos.TransactionalBatchResponse) string {
	var b strings.Builder
	for i, op := range r.OperationResults {
		fmt.Fprintf(&b, "\n  %d: status %d, body %s", i, op.StatusCode, op.ResourceBody)
	}
	return b.String()
}
