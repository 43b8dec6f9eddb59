package main

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/tool"
)

// TestClockReset: a database written with a clock years ahead keeps that
// clock (its now goes on from it); "ebb clock reset" brings it back to the
// wall clock, an item found expired under the old clock stays gone, a live
// one stays, and new writes are stamped by the wall clock.
func TestClockReset(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db")
	ahead := time.Date(2033, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	fake := ahead
	db, err := engine.Open(dir, &engine.Options{Clock: func() time.Time { return time.Unix(fake, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(-1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{`{"id":"gone","ttl":1}`, `{"id":"keep"}`} {
		if _, err := c.Upsert(ctx, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	fake += 10
	if _, err := c.Read(ctx, "gone"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("read of an item expired 9 s ago: %v", err)
	}
	// Open elsewhere: the reset must not run.
	stdout, stderr, code := ebb(t, "clock", "reset", dir)
	wantCode(t, code, exitFailed, stdout, stderr)
	if !strings.Contains(stderr, "locked") {
		t.Errorf("reset of an open database: stderr %q, want it to say the database is locked", stderr)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	stdout, stderr, code = ebb(t, "inspect", dir)
	wantCode(t, code, exitOK, stdout, stderr)
	if !strings.Contains(stdout, "ahead of the wall clock") || !strings.Contains(stdout, "now 2033-01-01 00:00:10Z") {
		t.Errorf("inspect of a database whose clock is ahead:\n%s", stdout)
	}

	before := time.Now().Unix()
	stdout, stderr, code = ebb(t, "clock", "reset", dir)
	wantCode(t, code, exitOK, stdout, stderr)
	if !strings.Contains(stdout, "reset from 2033-01-01T00:00:10Z to ") || !strings.Contains(stderr, "clock reset") {
		t.Errorf("reset output:\nstdout %s\nstderr %s", stdout, stderr)
	}
	stdout, stderr, code = ebb(t, "inspect", "--json", dir)
	wantCode(t, code, exitOK, stdout, stderr)
	var rep tool.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Now >= ahead || rep.Now < before {
		t.Errorf("after the reset inspect says now %d, want the wall clock (%d or later, before %d)", rep.Now, before, ahead)
	}

	db, err = engine.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err = db.Container("c")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(ctx, "gone"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("after the reset the item found expired before reads %v", err)
	}
	if it, err := c.Read(ctx, "keep"); err != nil || it.TS != ahead {
		t.Errorf("after the reset the live item reads _ts %d, %v; want _ts %d", it.TS, err, ahead)
	}
	it, err := c.Upsert(ctx, []byte(`{"id":"new","ttl":60}`))
	if err != nil {
		t.Fatal(err)
	}
	if it.TS < before || it.TS > time.Now().Unix() {
		t.Errorf("a write after the reset has _ts %d, want the wall clock's", it.TS)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	stdout, stderr, code = ebb(t, "clock", "reset", dir)
	wantCode(t, code, exitOK, stdout, stderr)
	if !strings.Contains(stdout, "nothing to reset") {
		t.Errorf("a second reset: %s", stdout)
	}
	stdout, stderr, code = ebb(t, "clock", "reset", t.TempDir())
	wantCode(t, code, exitUsage, stdout, stderr)
}
