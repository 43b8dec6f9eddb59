package gateway

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestTTLMatrix: container defaultTtl absent, -1 or 10 against item ttl
// absent, -1 or 5, under a clock the test moves; an expired item is gone
// from reads and queries at once.
func TestTTLMatrix(t *testing.T) {
	e := newEnv(t)
	e.mkdb("d")
	type tc struct {
		def, ttl any // nil: absent
		expires  int // seconds after the write; 0: never
	}
	cases := []tc{
		{nil, nil, 0}, {nil, -1, 0}, {nil, 5, 0},
		{-1, nil, 0}, {-1, -1, 0}, {-1, 5, 5},
		{10, nil, 10}, {10, -1, 0}, {10, 5, 5},
	}
	for i, c := range cases {
		props := map[string]any{"id": fmt.Sprintf("c%d", i), "partitionKey": map[string]any{"paths": []string{"/k"}}}
		if c.def != nil {
			props["defaultTtl"] = c.def
		}
		e.mkcoll("d", props)
		doc := map[string]any{"id": "a", "k": "p"}
		if c.ttl != nil {
			doc["ttl"] = c.ttl
		}
		e.must(e.do("POST", fmt.Sprintf("/dbs/d/colls/c%d/docs", i), doc, pk("p")...), http.StatusCreated)
	}
	check := func(elapsed int) {
		t.Helper()
		for i, c := range cases {
			live := c.expires == 0 || elapsed < c.expires
			want := http.StatusNotFound
			if live {
				want = http.StatusOK
			}
			path := fmt.Sprintf("/dbs/d/colls/c%d/docs", i)
			if r := e.do("GET", path+"/a", nil, pk("p")...); r.status != want {
				t.Errorf("t+%ds, defaultTtl %v, ttl %v: read status %d, want %d", elapsed, c.def, c.ttl, r.status, want)
			}
			n := len(docs(t, e.must(e.query(path, "SELECT * FROM c", nil, "x-ms-documentdb-query-enablecrosspartition", "true"), http.StatusOK)))
			if (n == 1) != live {
				t.Errorf("t+%ds, defaultTtl %v, ttl %v: query found %d items, live %v", elapsed, c.def, c.ttl, n, live)
			}
		}
	}
	check(0)
	e.clock.Advance(4 * time.Second)
	check(4)
	e.clock.Advance(time.Second)
	check(5)
	e.clock.Advance(5 * time.Second)
	check(10)
	e.clock.Advance(time.Hour)
	check(3610)
}

// TestTTLDefaultChange: a defaultTtl set on a container applies at once to
// the items already in it, as in Cosmos DB.
func TestTTLDefaultChange(t *testing.T) {
	e := newEnv(t)
	e.mkdb("d")
	e.mkcoll("d", map[string]any{"id": "c"})
	e.must(e.do("POST", "/dbs/d/colls/c/docs", `{"id":"a"}`), http.StatusCreated)
	e.clock.Advance(20 * time.Second)
	e.must(e.do("GET", "/dbs/d/colls/c/docs/a", nil), http.StatusOK)
	e.must(e.do("PUT", "/dbs/d/colls/c", map[string]any{"id": "c", "defaultTtl": 10}), http.StatusOK)
	e.do("GET", "/dbs/d/colls/c/docs/a", nil).errBody(t, http.StatusNotFound)
}

// TestTTLInvalid: the service's text for an invalid ttl.
func TestTTLInvalid(t *testing.T) {
	e := newEnv(t)
	e.mkdb("d")
	e.mkcoll("d", map[string]any{"id": "c", "defaultTtl": -1})
	for _, ttl := range []string{"0", "-2", "2147483648", "1.5"} {
		msg := e.do("POST", "/dbs/d/colls/c/docs", `{"id":"a","ttl":`+ttl+`}`).errBody(t, http.StatusBadRequest)
		want := "The input ttl '" + ttl + "' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."
		if msg != want {
			t.Errorf("ttl %s: message %q, want %q", ttl, msg, want)
		}
	}
	e.do("GET", "/dbs/d/colls/c/docs/a", nil).errBody(t, http.StatusNotFound)
}
