package workload

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ebbdb/ebb/bench/internal/gen"
	"github.com/ebbdb/ebb/bench/internal/store"
)

// TestQueryWorkload runs the query workload at a tiny size on each store
// with secondary indexes: no expired document is ever returned, and the
// results are the expected ones.
func TestQueryWorkload(t *testing.T) {
	for _, name := range store.QueryNames() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := tiny(t, name, "pebble")
			var log bytes.Buffer
			cfg.Log = &log
			r, err := RunQuery(context.Background(), cfg)
			if err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			if len(r.Stores) != 1 || len(r.Skipped) != 1 || r.Skipped[0] != "pebble" {
				t.Fatalf("stores %d, skipped %v", len(r.Stores), r.Skipped)
			}
			checkQueryRun(t, cfg, r.Stores[0])
			md := r.Markdown()
			for _, want := range []string{"| equality: user = @u |", "| " + name + " |", "expired returned"} {
				if !strings.Contains(md, want) {
					t.Errorf("markdown lacks %q:\n%s", want, md)
				}
			}
		})
	}
}

// checkQueryRun checks one store's run of the query workload.
func checkQueryRun(t *testing.T, cfg *Config, run QueryRun) {
	t.Helper()
	c := cfg.Query
	if run.FillDocsPerSec <= 0 || len(run.Queries) != 6 || len(run.Texts) != 6 {
		t.Fatalf("query run %+v", run)
	}
	if run.Store == "ebb" && len(run.Plans) != 6 {
		t.Errorf("ebb plans %v", run.Plans)
	}
	for _, q := range run.Queries {
		if q.ExpiredReturned != 0 || q.Wrong != 0 || q.Runs < c.MinRuns || q.Latency.P50 <= 0 {
			t.Errorf("%s: %+v", q.Query, q)
		}
		if q.MeanRows != q.MeanExpected {
			t.Errorf("%s: %v rows on average, expected %v", q.Query, q.MeanRows, q.MeanExpected)
		}
		switch q.Query {
		case "equality":
			// PerUser documents per user, about half of them live.
			if q.MeanRows < float64(c.PerUser)/4 || q.MeanRows > float64(c.PerUser)*3/4 {
				t.Errorf("equality: %v rows on average", q.MeanRows)
			}
		case "top":
			if q.MeanRows != float64(c.TopK) {
				t.Errorf("top: %v rows", q.MeanRows)
			}
		case "count_expired":
			if q.MeanRows != 0 {
				t.Errorf("count of an expired category: %v", q.MeanRows)
			}
		case "count_live", "tenth", "range":
			if q.MeanRows <= 0 {
				t.Errorf("%s: no rows", q.Query)
			}
		}
	}
	s := run.Storm
	var before, after int64
	for _, k := range s.Kinds {
		before += k.Before.Count
		after += k.After.Count
	}
	if s.N != c.StormN || s.Queries == 0 || s.RowsChecked == 0 || s.ExpiredReturned != 0 || s.Wrong != 0 ||
		len(s.Kinds) != 5 || before == 0 || after == 0 || s.kind("tenth").Query != "tenth" {
		t.Errorf("storm %+v", s)
	}
}

// TestQueryCheck: the harness's check counts expired documents, foreign
// documents and wrong counts.
func TestQueryCheck(t *testing.T) {
	c := QueryConfig{N: 400, DocSize: 750, PerUser: 200, Width: 1000, TopK: 3, LongTTL: 3600}
	set := newQset(c, 0)
	set.written = c.N
	now := time.Now().Unix()
	for i := range set.docs {
		if set.docs[i].short {
			set.docs[i].exp = now // expired from now on
		}
	}
	want := set.expect(now)
	var live, dead int = -1, -1
	for i, d := range set.docs {
		if d.user != 0 {
			continue
		}
		if d.short && dead < 0 {
			dead = i
		} else if !d.short && live < 0 {
			live = i
		}
	}
	doc := func(i int) qdoc {
		d := set.docs[i]
		return qdoc{ID: gen.Key(qPrefix, uint64(i)), User: userName(int(d.user)), N: d.n, Cat: qCats[d.cat]}
	}
	q := store.Query{Kind: store.QueryEqual, Prop: "user", Value: userName(0)}
	if v := set.check(q, []qdoc{doc(live), doc(dead)}, 2, now, want); v.expired != 1 || !v.wrong {
		t.Errorf("expired document: %+v", v)
	}
	if v := set.check(q, []qdoc{doc(live), doc(dead)}, 2, now-1, nil); v.expired != 0 || v.wrong {
		t.Errorf("document before its expiry: %+v", v)
	}
	foreign := doc(live)
	foreign.ID = "q-99999"
	if v := set.check(q, []qdoc{foreign}, 1, now, nil); !v.wrong {
		t.Errorf("foreign document: %+v", v)
	}
	other := doc(live)
	other.User = userName(1)
	if v := set.check(q, []qdoc{other}, 1, now, nil); !v.wrong {
		t.Errorf("document of another user: %+v", v)
	}
	count := store.Query{Kind: store.QueryCount, Prop: "cat", Value: "gone-0"}
	if v := set.check(count, nil, 3, now, nil); v.expired != 3 || !v.wrong {
		t.Errorf("count of expired documents: %+v", v)
	}
	top := store.Query{Kind: store.QueryTop, Prop: "n", K: 3}
	var docs []qdoc
	for _, n := range want.top(3) {
		for i := range set.docs {
			if set.docs[i].n == n {
				docs = append(docs, doc(i))
			}
		}
	}
	if v := set.check(top, docs, 3, now, want); v.wrong || v.expired != 0 || len(docs) != 3 {
		t.Errorf("exact top: %+v", v)
	}
	docs[0], docs[1] = docs[1], docs[0]
	if v := set.check(top, docs, 3, now, want); !v.wrong {
		t.Errorf("top out of order: %+v", v)
	}
	// The layout: every user holds PerUser documents, n is a permutation.
	seen := map[int64]bool{}
	users := make([]int, set.users)
	for _, d := range set.docs {
		seen[d.n] = true
		users[d.user]++
	}
	if len(seen) != c.N || fmt.Sprint(users) != fmt.Sprint([]int{200, 200}) {
		t.Errorf("%d distinct n, users %v", len(seen), users)
	}
}
