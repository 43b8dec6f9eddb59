package gateway

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// fill writes items 0..n-1 alternating between keys "1" and "2".
func fill(t *testing.T, e *testEnv, n int) {
	for i := 0; i < n; i++ {
		k := fmt.Sprint(1 + i%2)
		e.must(e.do("POST", docsPath, fmt.Sprintf(`{"id":"%02d","tenant":"%s","n":%d}`, i, k, i), pk(k)...), http.StatusCreated)
	}
}

func TestQueryPages(t *testing.T) {
	e := newItemsEnv(t)
	fill(t, e, 10)
	// One partition, pages of 2, with a continuation until the last page.
	var got []string
	cont := ""
	pages := 0
	for {
		h := append(pk("1"), "x-ms-max-item-count", "2")
		if cont != "" {
			h = append(h, "x-ms-continuation", cont)
		}
		r := e.must(e.query(docsPath, "SELECT * FROM c ORDER BY c.n DESC", nil, h...), http.StatusOK)
		pages++
		d := docs(t, r)
		if len(d) > 2 {
			t.Fatalf("page of %d", len(d))
		}
		for _, x := range d {
			if x.(map[string]any)["_rid"] == nil {
				t.Errorf("query result without _rid: %v", x)
			}
		}
		if r.header.Get("x-ms-documentdb-query-metrics") == "" || r.header.Get("x-ms-item-count") == "" {
			t.Errorf("page headers: %v", r.header)
		}
		got = append(got, ids(t, d)...)
		cont = r.header.Get("x-ms-continuation")
		if cont == "" {
			break
		}
	}
	if want := []string{"08", "06", "04", "02", "00"}; !reflect.DeepEqual(got, want) || pages != 3 {
		t.Errorf("pages %d, ids %v, want %v", pages, got, want)
	}
	// A continuation is for its own query.
	r := e.must(e.query(docsPath, "SELECT * FROM c", nil, append(pk("1"), "x-ms-max-item-count", "2")...), http.StatusOK)
	tok := r.header.Get("x-ms-continuation")
	e.query(docsPath, "SELECT * FROM c WHERE c.n > 0", nil, append(pk("1"), "x-ms-continuation", tok)...).errBody(t, http.StatusBadRequest)
	e.query(docsPath, "SELECT * FROM c", nil, append(pk("1"), "x-ms-continuation", "garbage")...).errBody(t, http.StatusBadRequest)
	e.query(docsPath, "SELECT * FROM c", nil, append(pk("1"), "x-ms-max-item-count", "zero")...).errBody(t, http.StatusBadRequest)

	// Parameters and projections.
	r = e.must(e.query(docsPath, "SELECT VALUE c.id FROM c WHERE c.n >= @min", []map[string]any{{"name": "@min", "value": 7}}, pk("2")...), http.StatusOK)
	if d := docs(t, r); !reflect.DeepEqual(d, []any{"07", "09"}) {
		t.Errorf("projection %v", d)
	}
	r = e.must(e.query(docsPath, "SELECT VALUE COUNT(1) FROM c", nil, pk("2")...), http.StatusOK)
	if d := docs(t, r); !reflect.DeepEqual(d, []any{float64(5)}) {
		t.Errorf("count %v", d)
	}
	e.query(docsPath, "SELECT * FORM c", nil, pk("1")...).errBody(t, http.StatusBadRequest)
	e.query(docsPath, "SELECT * FROM c WHERE c.n = @missing", nil, pk("1")...).errBody(t, http.StatusBadRequest)
	e.do("POST", docsPath, "{", "Content-Type", "application/query+json").errBody(t, http.StatusBadRequest)
}

func TestQueryCrossPartition(t *testing.T) {
	e := newItemsEnv(t)
	fill(t, e, 6)
	cross := []string{"x-ms-documentdb-query-enablecrosspartition", "true"}
	// Across partitions, rows come in the order they were written; a full
	// page always has a continuation.
	var got []string
	cont, pages := "", 0
	for {
		h := append(cross, "x-ms-max-item-count", "3")
		if cont != "" {
			h = append(h, "x-ms-continuation", cont)
		}
		r := e.must(e.query(docsPath, "SELECT * FROM c", nil, h...), http.StatusOK)
		pages++
		got = append(got, ids(t, docs(t, r))...)
		if cont = r.header.Get("x-ms-continuation"); cont == "" {
			break
		}
	}
	if want := []string{"00", "01", "02", "03", "04", "05"}; !reflect.DeepEqual(got, want) || pages != 3 {
		t.Errorf("pages %d, ids %v", pages, got)
	}
	// What a gateway cannot serve across partitions is refused as the
	// service refuses it.
	for _, sql := range []string{"SELECT * FROM c ORDER BY c.n", "SELECT VALUE COUNT(1) FROM c", "SELECT TOP 2 * FROM c", "SELECT * FROM c OFFSET 1 LIMIT 2"} {
		r := e.query(docsPath, sql, nil, cross...)
		if msg := r.errBody(t, http.StatusBadRequest); !strings.Contains(msg, "cross partition query can not be directly served by the gateway") || r.header.Get("x-ms-substatus") != "1004" {
			t.Errorf("%s: %q, substatus %q", sql, msg, r.header.Get("x-ms-substatus"))
		}
	}
	msg := e.query(docsPath, "SELECT * FROM c", nil).errBody(t, http.StatusBadRequest)
	if !strings.Contains(msg, "Cross partition query is required but disabled") {
		t.Errorf("without the cross-partition header: %q", msg)
	}
	// A WHERE that pins the key is a single-partition query.
	r := e.must(e.query(docsPath, "SELECT * FROM c WHERE c.tenant = '1' ORDER BY c.n DESC", nil), http.StatusOK)
	if got := ids(t, docs(t, r)); !reflect.DeepEqual(got, []string{"04", "02", "00"}) {
		t.Errorf("pinned: %v", got)
	}
	// The read feed covers every partition.
	r = e.must(e.do("GET", docsPath, nil), http.StatusOK)
	if n := len(docs(t, r)); n != 6 {
		t.Errorf("read feed: %d items", n)
	}
}

// TestQueryPlan: the plan the JavaScript, Python and .NET SDKs ask for
// before a cross-partition query, and the per-range query that follows.
func TestQueryPlan(t *testing.T) {
	e := newItemsEnv(t)
	fill(t, e, 4)
	plan := []string{"x-ms-cosmos-is-query-plan-request", "True", "x-ms-cosmos-supported-query-features", "OrderBy"}
	p := e.must(e.query(docsPath, "SELECT * FROM c WHERE c.n > 0", nil, plan...), http.StatusOK).json(t)
	if p["partitionedQueryExecutionInfoVersion"] == nil || len(p["queryRanges"].([]any)) != 1 {
		t.Errorf("plan %v", p)
	}
	msg := e.query(docsPath, "SELECT * FROM c ORDER BY c.n", nil, plan...).errBody(t, http.StatusBadRequest)
	if !strings.Contains(msg, "query plans only for queries without ORDER BY") {
		t.Errorf("plan of ORDER BY: %q", msg)
	}
	r := e.must(e.query(docsPath, "SELECT * FROM c WHERE c.n > 0", nil, "x-ms-documentdb-partitionkeyrangeid", "0"), http.StatusOK)
	if got := ids(t, docs(t, r)); !reflect.DeepEqual(got, []string{"01", "02", "03"}) {
		t.Errorf("range 0: %v", got)
	}
	e.query(docsPath, "SELECT * FROM c", nil, "x-ms-documentdb-partitionkeyrangeid", "7").errBody(t, http.StatusBadRequest)
}

// TestQueryCrossPartitionOrder: across partitions rows come in creation
// order, projections too, not in id order.
func TestQueryCrossPartitionOrder(t *testing.T) {
	e := newItemsEnv(t)
	for _, d := range [][2]string{{"z", "1"}, {"b", "2"}, {"y", "1"}, {"a", "2"}} {
		e.must(e.do("POST", docsPath, fmt.Sprintf(`{"id":"%s","tenant":"%s"}`, d[0], d[1]), pk(d[1])...), http.StatusCreated)
	}
	cross := []string{"x-ms-documentdb-query-enablecrosspartition", "true"}
	r := e.must(e.query(docsPath, "SELECT * FROM c", nil, cross...), http.StatusOK)
	if got := ids(t, docs(t, r)); !reflect.DeepEqual(got, []string{"z", "b", "y", "a"}) {
		t.Errorf("SELECT *: %v", got)
	}
	r = e.must(e.query(docsPath, "SELECT VALUE c.id FROM c", nil, cross...), http.StatusOK)
	if got := docs(t, r); !reflect.DeepEqual(got, []any{"z", "b", "y", "a"}) {
		t.Errorf("SELECT VALUE: %v", got)
	}
}
