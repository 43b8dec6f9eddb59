package engine

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// forceSeal seals every memtable now, as the background sealer would.
func forceSeal(t *testing.T, db *DB) {
	t.Helper()
	db.sealMu.Lock()
	defer db.sealMu.Unlock()
	if err := db.sealNowLocked(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestNoResurrection replays the histories in which dropping a dead record
// could let an older version of the same id come back at the next open:
// each step seals, runs background compaction rounds and reopens, and the
// id must stay gone throughout. (No compaction resurrects a deleted, superseded or expired version.)
func TestNoResurrection(t *testing.T) {
	type step func(c *Container)
	ctx := context.Background()
	upsert := func(doc string) step {
		return func(c *Container) {
			if _, err := c.Upsert(ctx, []byte(doc)); err != nil {
				panic(err)
			}
		}
	}
	del := func(id string) step {
		return func(c *Container) {
			if err := c.Delete(ctx, id); err != nil {
				panic(err)
			}
		}
	}
	const seal, wait = "seal", "wait"
	cases := []struct {
		name  string
		steps []any
	}{
		{"delete and re-create in one memtable, then expiry", []any{
			upsert(`{"id":"x","v":1,"ttl":-1}`), seal,
			del("x"), upsert(`{"id":"x","v":2,"ttl":5}`), wait, seal,
		}},
		{"tombstone superseded by a re-create that expires", []any{
			upsert(`{"id":"x","v":1,"ttl":-1}`), seal,
			del("x"), seal,
			upsert(`{"id":"x","v":2,"ttl":5}`), seal, wait,
		}},
		{"tombstone merged away while the re-create sits in a large file", []any{
			upsert(`{"id":"x","v":1,"ttl":-1}`), seal,
			del("x"), seal, // a small file of one tombstone, hiding the first file
			upsert(`{"id":"x","v":2,"ttl":5,"pad":"` + noise(1<<20) + `"}`), seal, // large: never merged
			upsert(`{"id":"n1","ttl":-1}`), seal,
			upsert(`{"id":"n2","ttl":-1}`), seal,
			upsert(`{"id":"n3","ttl":-1}`), seal, // four small files: merged with the tombstone
			wait,
		}},
		{"upsert over a never-expiring version, then expiry", []any{
			upsert(`{"id":"x","v":1,"ttl":-1}`), seal,
			upsert(`{"id":"x","v":2,"ttl":5}`), seal, wait,
		}},
		{"expiry in the memtable over a sealed version", []any{
			upsert(`{"id":"x","v":1,"ttl":-1}`), seal,
			upsert(`{"id":"x","v":2,"ttl":5}`), wait, seal,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock(t0)
			dir := t.TempDir()
			noBackground := func(o *Options) { o.CompactionInterval = -1; o.NoSync = true }
			db := openTest(t, dir, clk, noBackground)
			c := mustCreateContainer(t, db, ContainerProperties{ID: "c", DefaultTTL: TTL(-1)})
			// Neighbours keep the first files alive, so they are rewritten
			// (not dropped whole) and the old version of x stays on disk.
			for i := range 20 {
				upsert(fmt.Sprintf(`{"id":"keep%d","ttl":-1,"pad":"%s"}`, i, noise(160<<10)))(c)
			}
			gone := false
			check := func(when string) {
				t.Helper()
				_, err := c.Read(ctx, "x")
				if gone && !errors.Is(err, ErrNotFound) {
					t.Fatalf("%s: x is back: %v", when, err)
				}
			}
			for i, s := range tc.steps {
				switch s := s.(type) {
				case step:
					s(c)
				case string:
					if s == seal {
						forceSeal(t, db)
					} else {
						clk.Advance(10)
						gone = true
					}
				}
				for round := range 3 {
					if err := c.compactStep(ctx, nil); err != nil {
						t.Fatal(err)
					}
					check(fmt.Sprintf("step %d compaction round %d", i, round))
				}
				db.Close()
				db = openTest(t, dir, clk, noBackground)
				c, _ = db.Container("c")
				check(fmt.Sprintf("step %d after reopen", i))
			}
			if !gone {
				t.Fatal("case never expired x")
			}
			if err := c.Compact(ctx); err != nil {
				t.Fatal(err)
			}
			db.Close()
			db = openTest(t, dir, clk, noBackground)
			defer db.Close()
			c, _ = db.Container("c")
			check("after a full compaction and reopen")
			if st := c.Stats(); st.Items < 20 {
				t.Fatalf("neighbours lost: %+v", st)
			}
		})
	}
}

// noise returns n hex digits that do not compress, to make files large.
func noise(n int) string {
	r := rand.New(rand.NewPCG(uint64(n), 7))
	b := make([]byte, n/2)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return hex.EncodeToString(b)
}
