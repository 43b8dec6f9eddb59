package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
)

// TestPartitionKeysShown: inspect names a container's partition key path,
// and dump and feed show each item's key next to its id, as text and JSON.
func TestPartitionKeysShown(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db")
	db, err := engine.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "k", PartitionKeyPath: "/tenant", ChangeFeedRetention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{`{"id":"x","tenant":"a"}`, `{"id":"x","tenant":5}`, `{"id":"y"}`} {
		if _, err := c.Upsert(ctx, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Partition(engine.NumberKey(5)).Delete(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	stdout, stderr, code := ebb(t, "inspect", dir)
	wantCode(t, code, exitOK, stdout, stderr)
	if !strings.Contains(stdout, "k partition key path: /tenant") {
		t.Errorf("inspect does not show the key path:\n%s", stdout)
	}
	stdout, stderr, code = ebb(t, "inspect", dir, "--json")
	wantCode(t, code, exitOK, stdout, stderr)
	if !strings.Contains(stdout, `"partition_key_path": "/tenant"`) {
		t.Errorf("inspect --json does not show the key path:\n%s", stdout)
	}

	stdout, stderr, code = ebb(t, "feed", dir, "--container", "k", "--all")
	wantCode(t, code, exitOK, stdout, stderr)
	for _, want := range []string{`x pk=["a"]`, `x pk=[5]`, `y pk=[{}]`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("feed does not show %s:\n%s", want, stdout)
		}
	}
	stdout, stderr, code = ebb(t, "feed", dir, "--container", "k", "--json")
	wantCode(t, code, exitOK, stdout, stderr)
	if !strings.Contains(stdout, `"id":"x","partitionKey":"[\"a\"]"`) || strings.Contains(stdout, `[5]`) {
		t.Errorf("feed --json (latest: a/x and y, not the deleted 5/x):\n%s", stdout)
	}

	journals, err := filepath.Glob(filepath.Join(dir, "journal", "*"))
	if err != nil || len(journals) == 0 {
		t.Fatalf("no journal files: %v", err)
	}
	var all string
	for _, j := range journals {
		if fi, err := os.Stat(j); err != nil || fi.Size() == 0 {
			continue
		}
		stdout, stderr, code = ebb(t, "dump", j)
		wantCode(t, code, exitOK, stdout, stderr)
		all += stdout
	}
	for _, want := range []string{`x pk=["a"]`, `x pk=[5]`, `y pk=[{}]`} {
		if !strings.Contains(all, want) {
			t.Errorf("dump does not show %s:\n%s", want, all)
		}
	}
}
