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

// TestItemExpiresAt: Item.ExpiresAt, as every call that returns items
// fills it (Create, Upsert, Replace, batches, Read, Items, queries), is
// _ts plus the effective ttl by policy.Effective's rules, or 0 when the
// item never expires; after SetProperties changes DefaultTTL at time tc,
// a live item's is max(_ts + the new effective ttl, tc), or 0. Random
// DefaultTTL and ttl combinations, random policy changes.
func TestItemExpiresAt(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 12))
	randDefault := func() *int32 {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return engine.TTL(-1)
		default:
			return engine.TTL(int32(1 + rng.IntN(500)))
		}
	}
	randTTL := func() int32 {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return -1
		default:
			return int32(1 + rng.IntN(500))
		}
	}
	for round := range 8 {
		clk := newFakeClock(t0)
		db := openTest(t, t.TempDir(), clk)
		def := randDefault()
		c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "c", DefaultTTL: def})
		type written struct {
			ts  int64
			ttl int32
		}
		items := map[string]written{}
		// want is the expiry the model expects under a policy that has
		// been def since before the item was written.
		want := func(w written, def *int32) int64 {
			if eff, finite := policy.Effective(def, w.ttl); finite {
				return w.ts + eff
			}
			return 0
		}
		doc := func(id string, ttl int32) []byte {
			if ttl == 0 {
				return fmt.Appendf(nil, `{"id":%q}`, id)
			}
			return fmt.Appendf(nil, `{"id":%q,"ttl":%d}`, id, ttl)
		}
		for i := range 30 {
			clk.Advance(int64(rng.IntN(3)))
			id := fmt.Sprintf("r%d-%02d", round, i)
			ttl := randTTL()
			w := written{ts: clk.Unix(), ttl: ttl}
			var got []engine.Item
			switch i % 4 {
			case 0:
				it, err := c.Create(ctx, doc(id, ttl))
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, it)
			case 1:
				it, err := c.Upsert(ctx, doc(id, ttl))
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, it)
			case 2:
				if _, err := c.Upsert(ctx, doc(id, randTTL())); err != nil {
					t.Fatal(err)
				}
				it, err := c.Replace(ctx, doc(id, ttl))
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, it)
			case 3:
				var b engine.Batch
				its, err := c.ExecuteBatch(ctx, b.Upsert(doc(id, ttl)).Upsert(doc(id+"-b", ttl)))
				if err != nil {
					t.Fatal(err)
				}
				items[id+"-b"] = w
				got = append(got, its...)
			}
			items[id] = w
			for _, it := range got {
				if e := want(items[it.ID], def); it.ExpiresAt != e {
					t.Fatalf("round %d: write of %s (ttl %d, DefaultTTL %s): ExpiresAt %d, want %d", round, it.ID, ttl, showTTL(def), it.ExpiresAt, e)
				}
			}
		}
		// checkAll compares every read path against expected(id), for
		// the items live now.
		checkAll := func(when string, expected func(string) int64) {
			t.Helper()
			now := clk.Unix()
			live := 0
			for id := range items {
				e := expected(id)
				it, err := c.Read(ctx, id)
				if e != 0 && e <= now {
					if !errors.Is(err, engine.ErrNotFound) {
						t.Fatalf("%s: Read(%s) expired at %d, now %d: %v", when, id, e, now, err)
					}
					continue
				}
				live++
				if err != nil {
					t.Fatalf("%s: Read(%s): %v", when, id, err)
				}
				if it.ExpiresAt != e {
					t.Fatalf("%s: Read(%s).ExpiresAt = %d, want %d", when, id, it.ExpiresAt, e)
				}
			}
			n := 0
			for it, err := range c.Items(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				n++
				if e := expected(it.ID); it.ExpiresAt != e {
					t.Fatalf("%s: Items: %s ExpiresAt = %d, want %d", when, it.ID, it.ExpiresAt, e)
				}
			}
			for _, sql := range []string{`SELECT * FROM c`, `SELECT c.id FROM c WHERE c.id >= "r"`} {
				for it, err := range c.Query(ctx, sql) {
					if err != nil {
						t.Fatal(err)
					}
					n++
					if e := expected(it.ID); it.ExpiresAt != e {
						t.Fatalf("%s: %s: %s ExpiresAt = %d, want %d", when, sql, it.ID, it.ExpiresAt, e)
					}
				}
			}
			if n != 3*live {
				t.Fatalf("%s: Items and two queries yielded %d items, want 3 × %d", when, n, live)
			}
		}
		checkAll("as written", func(id string) int64 { return want(items[id], def) })

		// A policy change at tc: live items take max(ts+new eff, tc).
		clk.Advance(int64(rng.IntN(200)))
		tc := clk.Unix()
		def2 := randDefault()
		props := c.Properties()
		props.DefaultTTL = def2
		if err := c.SetProperties(ctx, props); err != nil {
			t.Fatal(err)
		}
		checkAll(fmt.Sprintf("after SetProperties %s -> %s", showTTL(def), showTTL(def2)), func(id string) int64 {
			w := items[id]
			if e := want(w, def); e != 0 && e <= tc {
				return e // expired before the change: stays expired
			}
			eff, finite := policy.Effective(def2, w.ttl)
			if !finite {
				return 0
			}
			return max(w.ts+eff, tc)
		})
		db.Close()
	}
}

func showTTL(d *int32) string {
	if d == nil {
		return "off"
	}
	return fmt.Sprint(*d)
}
