package gateway

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
)

func batchOf(t *testing.T, r resp) []map[string]any {
	t.Helper()
	var out []map[string]any
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatalf("batch response %s: %v", r.body, err)
	}
	return out
}

func statuses(res []map[string]any) []int {
	var out []int
	for _, r := range res {
		out = append(out, int(r["statusCode"].(float64)))
	}
	return out
}

func TestBatch(t *testing.T) {
	e := newItemsEnv(t)
	e.must(e.do("POST", docsPath, `{"id":"old","tenant":"b","n":1}`, pk("b")...), http.StatusCreated)
	e.must(e.do("POST", docsPath, `{"id":"p","tenant":"b","n":1}`, pk("b")...), http.StatusCreated)
	hdr := append(pk("b"), "x-ms-cosmos-is-batch-request", "True", "x-ms-cosmos-batch-atomic", "True")
	ops := []any{
		map[string]any{"operationType": "Create", "resourceBody": map[string]any{"id": "a", "tenant": "b"}},
		map[string]any{"operationType": "Upsert", "resourceBody": map[string]any{"id": "old", "tenant": "b", "n": 2}},
		map[string]any{"operationType": "Read", "id": "old"},
		map[string]any{"operationType": "Patch", "id": "p", "resourceBody": map[string]any{"operations": []any{map[string]any{"op": "incr", "path": "/n", "value": 10}}}},
		map[string]any{"operationType": "Upsert", "resourceBody": map[string]any{"id": "u", "tenant": "b"}},
	}
	r := e.must(e.do("POST", docsPath, ops, hdr...), http.StatusOK)
	res := batchOf(t, r)
	if got := statuses(res); len(got) != 5 || got[0] != 201 || got[1] != 200 || got[2] != 200 || got[3] != 200 || got[4] != 201 {
		t.Fatalf("statuses %v: %s", got, r.body)
	}
	if res[0]["eTag"] == nil || res[0]["resourceBody"] == nil {
		t.Errorf("create result %v", res[0])
	}
	// The read comes after the upsert of the same item and sees it.
	if rb := res[2]["resourceBody"].(map[string]any); rb["n"].(float64) != 2 || res[2]["eTag"] != res[1]["eTag"] {
		t.Errorf("read after upsert in the batch: %v, upsert %v", res[2], res[1])
	}
	got := e.must(e.do("GET", docsPath+"/p", nil, pk("b")...), http.StatusOK).json(t)
	if got["n"].(float64) != 11 {
		t.Errorf("patch in batch: %v", got)
	}

	// Operations apply in order, each seeing the ones before, several on
	// one item included.
	ops = []any{
		map[string]any{"operationType": "Create", "resourceBody": map[string]any{"id": "new", "tenant": "b", "n": 1}},
		map[string]any{"operationType": "Upsert", "resourceBody": map[string]any{"id": "up", "tenant": "b"}},
		map[string]any{"operationType": "Replace", "id": "old", "resourceBody": map[string]any{"id": "old", "tenant": "b", "n": 5}},
		map[string]any{"operationType": "Patch", "id": "new", "resourceBody": map[string]any{"operations": []any{map[string]any{"op": "incr", "path": "/n", "value": 10}}}},
		map[string]any{"operationType": "Read", "id": "new"},
		map[string]any{"operationType": "Delete", "id": "up"},
	}
	r = e.must(e.do("POST", docsPath, ops, hdr...), http.StatusOK)
	res = batchOf(t, r)
	if got := statuses(res); !reflect.DeepEqual(got, []int{201, 201, 200, 200, 200, 204}) {
		t.Fatalf("statuses %v", got)
	}
	if rb := res[4]["resourceBody"].(map[string]any); rb["n"].(float64) != 11 || rb["_etag"] != res[4]["eTag"] {
		t.Errorf("read of new: %v", res[4])
	}
	e.do("GET", docsPath+"/up", nil, pk("b")...).errBody(t, http.StatusNotFound)
	if got := e.must(e.do("GET", docsPath+"/new", nil, pk("b")...), http.StatusOK).json(t); got["n"].(float64) != 11 {
		t.Errorf("new after the batch: %v", got)
	}
	e.must(e.do("DELETE", docsPath+"/new", nil, pk("b")...), http.StatusNoContent)

	// One failure: 207, its status, 424 for the others, nothing written.
	ops = []any{
		map[string]any{"operationType": "Create", "resourceBody": map[string]any{"id": "new", "tenant": "b"}},
		map[string]any{"operationType": "Create", "resourceBody": map[string]any{"id": "a", "tenant": "b"}},
		map[string]any{"operationType": "Delete", "id": "old"},
	}
	r = e.must(e.do("POST", docsPath, ops, hdr...), http.StatusMultiStatus)
	if got := statuses(batchOf(t, r)); got[0] != 424 || got[1] != 409 || got[2] != 424 {
		t.Errorf("statuses %v", got)
	}
	e.do("GET", docsPath+"/new", nil, pk("b")...).errBody(t, http.StatusNotFound)
	e.must(e.do("GET", docsPath+"/old", nil, pk("b")...), http.StatusOK)

	// A read of a missing item, a stale ifMatch, an item of another key.
	for _, c := range []struct {
		op   map[string]any
		want int
	}{
		{map[string]any{"operationType": "Read", "id": "missing"}, 404},
		{map[string]any{"operationType": "Read", "id": "a"}, 404}, // deleted by operation 0
		{map[string]any{"operationType": "Replace", "id": "old", "ifMatch": `"0000000000000001"`, "resourceBody": map[string]any{"id": "old", "tenant": "b"}}, 412},
		{map[string]any{"operationType": "Create", "resourceBody": map[string]any{"id": "z", "tenant": "other"}}, 400},
		{map[string]any{"operationType": "Create", "resourceBody": map[string]any{"id": "t", "tenant": "b", "ttl": 0}}, 400},
	} {
		r = e.must(e.do("POST", docsPath, []any{map[string]any{"operationType": "Delete", "id": "a"}, c.op}, hdr...), http.StatusMultiStatus)
		if got := statuses(batchOf(t, r)); got[0] != 424 || got[1] != c.want {
			t.Errorf("%v: statuses %v", c.op, got)
		}
	}
	e.must(e.do("GET", docsPath+"/a", nil, pk("b")...), http.StatusOK)

	// Requests that are not batches at all.
	e.do("POST", docsPath, `[]`, hdr...).errBody(t, http.StatusBadRequest)
	e.do("POST", docsPath, `{"not":"an array"}`, hdr...).errBody(t, http.StatusBadRequest)
	e.do("POST", docsPath, []any{map[string]any{"operationType": "Explode"}}, hdr...).errBody(t, http.StatusBadRequest)
	many := make([]any, 101)
	for i := range many {
		many[i] = map[string]any{"operationType": "Read", "id": "a"}
	}
	e.do("POST", docsPath, many, hdr...).errBody(t, http.StatusBadRequest)
	e.do("POST", docsPath, []any{map[string]any{"operationType": "Read", "id": "a"}}, "x-ms-cosmos-is-batch-request", "True").errBody(t, http.StatusBadRequest)
}
