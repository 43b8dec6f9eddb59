package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ebbdb/ebb/bench/internal/gen"
)

// TestQueryStores: each query store answers every kind of query with the
// live documents only, before and after some of them expire.
func TestQueryStores(t *testing.T) {
	g := gen.NewQueryDocs(750)
	for _, name := range QueryNames() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, err := OpenQuery(name, t.TempDir(), Options{}, []string{"user", "n", "cat"})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// 40 documents: users u0..u3, n = i, cats a (even i) and b;
			// those with i%4 == 1 expire after 1 s.
			var items []Item
			for i := range 40 {
				f := gen.QueryFields{ID: gen.Key("q-", uint64(i)), User: fmt.Sprintf("u%d", i%4), N: int64(i),
					Cat: []string{"a", "b"}[i%2], Body: uint64(i)}
				if i%4 == 1 {
					f.TTL = 1
				}
				items = append(items, Item{Key: f.ID, Value: g.Doc(f), TTL: f.TTL})
			}
			written := time.Now().Unix()
			if err := s.Put(ctx, items); err != nil {
				t.Fatal(err)
			}
			ns := func(q Query) []int64 {
				t.Helper()
				var out []int64
				n, err := s.Query(ctx, q, func(doc []byte) error {
					var d struct{ N int64 }
					if err := json.Unmarshal(doc, &d); err != nil {
						return err
					}
					out = append(out, d.N)
					return nil
				})
				if err != nil || n != len(out) {
					t.Fatalf("%s: %v (n %d, %d docs)", s.Describe(q), err, n, len(out))
				}
				return out
			}
			count := func(q Query) int {
				t.Helper()
				n, err := s.Query(ctx, q, nil)
				if err != nil {
					t.Fatalf("%s: %v", s.Describe(q), err)
				}
				return n
			}
			// check runs every query and returns what differs from the
			// answers due before (expired false) or after the expiry.
			check := func(expired bool) string {
				t.Helper()
				u1 := ns(Query{Kind: QueryEqual, Prop: "user", Value: "u1"})
				slices.Sort(u1)
				rng := ns(Query{Kind: QueryRange, Prop: "n", Lo: 10, Hi: 20})
				slices.Sort(rng)
				top := ns(Query{Kind: QueryTop, Prop: "n", K: 3})
				cb := count(Query{Kind: QueryCount, Prop: "cat", Value: "b"})
				wantU1, wantRange, wantTop, wantB := []int64{1, 5, 9, 13, 17, 21, 25, 29, 33, 37},
					[]int64{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, []int64{39, 38, 37}, 20
				if expired {
					wantU1, wantRange, wantTop, wantB = nil, []int64{10, 11, 12, 14, 15, 16, 18, 19}, []int64{39, 38, 36}, 10
				}
				if c := count(Query{Kind: QueryCount, Prop: "cat", Value: "none"}); c != 0 {
					return fmt.Sprintf("count of a missing category: %d", c)
				}
				if !slices.Equal(u1, wantU1) || !slices.Equal(rng, wantRange) || !slices.Equal(top, wantTop) || cb != wantB {
					return fmt.Sprintf("expired %v: user u1 %v, range %v, top %v, count b %d", expired, u1, rng, top, cb)
				}
				return ""
			}
			// The documents with a TTL expire at the start of the second
			// after they were written (written or later): the answers
			// before it are checked only if every query ran within it.
			if diff := check(false); diff != "" && time.Now().Unix() == written {
				t.Error(diff)
			}
			for time.Now().Unix() < written+2 {
				time.Sleep(50 * time.Millisecond)
			}
			if diff := check(true); diff != "" {
				t.Error(diff)
			}
			if s.Describe(Query{Kind: QueryTop, Prop: "n", K: 3}) == "" {
				t.Error("no description")
			}
			if h, ok := s.(Housekeeper); !ok {
				t.Error("no backlog")
			} else if _, err := h.Backlog(ctx); err != nil {
				t.Errorf("backlog: %v", err)
			}
			if e, ok := s.(Explainer); ok {
				if plan, err := e.Explain(Query{Kind: QueryEqual, Prop: "user", Value: "u1"}); err != nil || plan == "" {
					t.Errorf("explain: %q, %v", plan, err)
				}
			}
		})
	}
	if CanQuery("badger") || !CanQuery("ebb") {
		t.Error("CanQuery")
	}
	if _, err := OpenQuery("pebble", t.TempDir(), Options{}, nil); err == nil {
		t.Error("pebble opened for queries")
	}
}
