package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/policy"
)

// TestPolicyPruneKeepsVisibility: random DefaultTTL changes between random
// writes, seals, compactions and reopens never make the engine's answer
// about any item differ from the one the full, unpruned policy history
// gives (expiry is final, so this history is what decides items written
// under older policies); and the history the MANIFEST keeps stays within
// policy.PruneLen entries however many changes there were.
func TestPolicyPruneKeepsVisibility(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 77))
			clk := newFakeClock(t0)
			dir := t.TempDir()
			db := openTest(t, dir, clk)
			defer func() { db.Close() }()
			c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "p"})
			full := policy.History{}.With(t0, nil)
			type item struct {
				ts  int64
				ttl int32
			}
			items := map[string]item{}
			randTTL := func() *int32 {
				switch rng.IntN(4) {
				case 0:
					return nil
				case 1:
					return engine.TTL(-1)
				}
				return engine.TTL(1 + rng.Int32N(40))
			}
			check := func(step string) {
				t.Helper()
				now := clk.Unix()
				for id, it := range items {
					want := !policy.Expired(full.ExpiresAt(it.ts, it.ttl), now)
					_, err := c.Read(ctx, id)
					if err != nil && !errors.Is(err, engine.ErrNotFound) {
						t.Fatal(err)
					}
					if got := err == nil; got != want {
						t.Fatalf("%s, at %d: item %s (ts %d, ttl %d) visible=%v; the full history %v says %v",
							step, now, id, it.ts, it.ttl, got, full, want)
					}
				}
			}
			for step := range 120 {
				clk.Advance(rng.Int64N(12))
				switch r := rng.IntN(10); {
				case r < 4:
					id := fmt.Sprintf("i%d", step)
					ttl := int32(0)
					doc := fmt.Sprintf(`{"id":%q}`, id)
					switch rng.IntN(3) {
					case 0:
						ttl = -1
					case 1:
						ttl = 1 + rng.Int32N(40)
					}
					if ttl != 0 {
						doc = fmt.Sprintf(`{"id":%q,"ttl":%d}`, id, ttl)
					}
					it, err := c.Upsert(ctx, []byte(doc))
					if err != nil {
						t.Fatal(err)
					}
					items[id] = item{it.TS, ttl}
				case r < 8:
					d := randTTL()
					if err := c.SetProperties(ctx, engine.ContainerProperties{ID: "p", DefaultTTL: d}); err != nil {
						t.Fatal(err)
					}
					full = full.With(clk.Unix(), d)
				case r < 9:
					if err := c.Compact(ctx); err != nil {
						t.Fatal(err)
					}
				default:
					if err := db.Close(); err != nil {
						t.Fatal(err)
					}
					m, err := engine.ReadManifest(dir)
					if err != nil {
						t.Fatal(err)
					}
					if n := len(m.Containers[0].History); n > policy.PruneLen {
						t.Fatalf("the MANIFEST keeps %d history entries after %d changes, want at most %d", n, len(full), policy.PruneLen)
					}
					db = openTest(t, dir, clk)
					if c, err = db.Container("p"); err != nil {
						t.Fatal(err)
					}
				}
				check(fmt.Sprintf("step %d", step))
			}
			if len(full) <= policy.PruneLen {
				t.Fatalf("only %d changes: the test did not exercise pruning", len(full))
			}
		})
	}
}
