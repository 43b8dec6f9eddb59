package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
)

// TestFeed: ebb feed prints what Container.ChangeFeed reads (same changes,
// LSNs and tokens), while the database is open in this process, in both
// modes, from a token, as text and JSON; and refuses what it cannot do.
func TestFeed(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db")
	now := time.Now().Unix()
	clk := now - 100
	db, err := engine.Open(dir, &engine.Options{Clock: func() time.Time { return time.Unix(clk, 0) }, SealThreshold: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(-1), ChangeFeedRetention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	for i, doc := range []string{`{"id":"a","ttl":5}`, `{"id":"b"}`, `{"id":"b","v":2}`, `{"id":"c","pad":"` + strings.Repeat("x", 3000) + `"}`, `{"id":"d"}`} {
		if _, err := c.Upsert(ctx, []byte(doc)); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			if err := c.Delete(ctx, "d"); err == nil {
				t.Fatal("delete of a missing item")
			}
		}
	}
	if err := c.Delete(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Upsert(ctx, []byte(`{"id":"p"}`)); err != nil {
		t.Fatal(err)
	}
	clk = now // a expired 95 s ago; the tool judges with the wall clock

	for _, mode := range []engine.ChangeFeedMode{engine.LatestVersion, engine.AllVersionsAndDeletes} {
		var want []engine.Change
		for ch, err := range c.ChangeFeed(ctx, engine.ChangeFeedOptions{Mode: mode}) {
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, ch)
		}
		args := []string{"feed", dir, "--container", "c", "--json"}
		if mode == engine.AllVersionsAndDeletes {
			args = append(args, "--all")
		}
		stdout, stderr, code := ebb(t, args...)
		wantCode(t, code, exitOK, stdout, stderr)
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		if len(lines) != len(want) {
			t.Fatalf("%v: %d lines, want %d:\n%s", mode, len(lines), len(want), stdout)
		}
		for i, line := range lines {
			var got struct {
				Op           string          `json:"op"`
				ID           string          `json:"id"`
				LSN          uint64          `json:"lsn"`
				TS           int64           `json:"ts"`
				Expired      bool            `json:"timeToLiveExpired"`
				Body         json.RawMessage `json:"body"`
				Continuation string          `json:"continuation"`
			}
			if err := json.Unmarshal([]byte(line), &got); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			w := want[i]
			if got.Op != w.Op.String() || got.ID != w.ID || got.LSN != w.LSN || got.TS != w.TS || got.Expired != w.TTLExpired ||
				got.Continuation != w.Continuation || string(got.Body) != string(w.Body) {
				t.Errorf("%v line %d: %s\nwant %+v", mode, i, line, w)
			}
		}
		if mode == engine.AllVersionsAndDeletes {
			if !strings.Contains(stdout, `"timeToLiveExpired":true`) {
				t.Errorf("no expiry in:\n%s", stdout)
			}
			stdout, stderr, code = ebb(t, "feed", dir, "--container", "c", "--all", "--from", want[len(want)-3].Continuation)
			wantCode(t, code, exitOK, stdout, stderr)
			if n := strings.Count(stdout, "\n"); n != 2 {
				t.Errorf("--from: %d lines, want 2:\n%s", n, stdout)
			}
		}
	}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"feed", dir, "--container", "plain", "--all"}, exitFailed, "retention"},
		{[]string{"feed", dir, "--container", "nope"}, exitFailed, `no container "nope"`},
		{[]string{"feed", dir, "--container", "c", "--from", "junk"}, exitFailed, "malformed continuation token"},
		{[]string{"feed", dir}, exitUsage, "--container is required"},
		{[]string{"feed", t.TempDir(), "--container", "c"}, exitUsage, "empty"},
	} {
		stdout, stderr, code := ebb(t, tc.args...)
		wantCode(t, code, tc.code, stdout, stderr)
		if !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: stderr %q, want %q in it", tc.args, stderr, tc.msg)
		}
	}
}
