package gateway

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestPatch(t *testing.T) {
	e := newItemsEnv(t)
	e.must(e.do("POST", docsPath, `{"id":"a","tenant":"x","value":"2","count":3,"description":"4","tags":["a","c"],"nested":{"n":1.5}}`, pk("x")...), http.StatusCreated)
	ops := map[string]any{"operations": []any{
		map[string]any{"op": "replace", "path": "/value", "value": "5"},
		map[string]any{"op": "set", "path": "/hello", "value": "world"},
		map[string]any{"op": "add", "path": "/tags/1", "value": "b"},
		map[string]any{"op": "add", "path": "/tags/-", "value": "d"},
		map[string]any{"op": "remove", "path": "/description"},
		map[string]any{"op": "incr", "path": "/count", "value": 1},
		map[string]any{"op": "incr", "path": "/nested/n", "value": 1},
		map[string]any{"op": "incr", "path": "/fresh", "value": 7},
		map[string]any{"op": "move", "from": "/hello", "path": "/greeting"},
	}}
	r := e.must(e.do("PATCH", docsPath+"/a", ops, pk("x")...), http.StatusOK)
	got := r.json(t)
	if got["value"] != "5" || got["greeting"] != "world" || got["hello"] != nil || got["description"] != nil ||
		got["count"].(float64) != 4 || got["fresh"].(float64) != 7 || got["nested"].(map[string]any)["n"].(float64) != 2.5 {
		t.Errorf("patched: %s", r.body)
	}
	if !reflect.DeepEqual(got["tags"], []any{"a", "b", "c", "d"}) {
		t.Errorf("tags %v", got["tags"])
	}
	if !strings.Contains(string(r.body), `"count":4`) {
		t.Errorf("an integer incremented by an integer is still an integer: %s", r.body)
	}
	etag := got["_etag"].(string)

	// A condition: false is a 412, true applies.
	cond := map[string]any{"condition": "from c where c.count > 10", "operations": []any{map[string]any{"op": "set", "path": "/x", "value": 1}}}
	e.do("PATCH", docsPath+"/a", cond, pk("x")...).errBody(t, http.StatusPreconditionFailed)
	cond["condition"] = "FROM c WHERE c.count = 4"
	e.must(e.do("PATCH", docsPath+"/a", cond, append(pk("x"), "If-Match", etag, "Prefer", "return=minimal")...), http.StatusOK)
	// If-Match with a stale etag.
	e.do("PATCH", docsPath+"/a", cond, append(pk("x"), "If-Match", etag)...).errBody(t, http.StatusPreconditionFailed)

	for name, bad := range map[string]any{
		"replace of a missing path": map[string]any{"operations": []any{map[string]any{"op": "replace", "path": "/missing", "value": 1}}},
		"remove of a missing path":  map[string]any{"operations": []any{map[string]any{"op": "remove", "path": "/missing"}}},
		"parent missing":            map[string]any{"operations": []any{map[string]any{"op": "set", "path": "/no/such", "value": 1}}},
		"incr of a string":          map[string]any{"operations": []any{map[string]any{"op": "incr", "path": "/value", "value": 1}}},
		"unknown op":                map[string]any{"operations": []any{map[string]any{"op": "frobnicate", "path": "/value", "value": 1}}},
		"not a pointer":             map[string]any{"operations": []any{map[string]any{"op": "set", "path": "value", "value": 1}}},
		"no operations":             map[string]any{"operations": []any{}},
		"id changed":                map[string]any{"operations": []any{map[string]any{"op": "set", "path": "/id", "value": "b"}}},
		"key changed":               map[string]any{"operations": []any{map[string]any{"op": "set", "path": "/tenant", "value": "y"}}},
		"bad condition":             map[string]any{"condition": "from c where", "operations": []any{map[string]any{"op": "set", "path": "/v", "value": 1}}},
		"too many":                  map[string]any{"operations": make([]any, 11)},
	} {
		if r := e.do("PATCH", docsPath+"/a", bad, pk("x")...); r.status != http.StatusBadRequest {
			t.Errorf("%s: status %d, body %s", name, r.status, r.body)
		}
	}
	e.do("PATCH", docsPath+"/nope", ops, pk("x")...).errBody(t, http.StatusNotFound)
	// The JavaScript SDK sends the operations as a bare array.
	got = e.must(e.do("PATCH", docsPath+"/a", `[{"op":"incr","path":"/count","value":2}]`, pk("x")...), http.StatusOK).json(t)
	if got["count"].(float64) != 6 {
		t.Errorf("bare array patch: %v", got)
	}
	e.do("PATCH", docsPath+"/a", "not json", pk("x")...).errBody(t, http.StatusBadRequest)
	// Nothing of the refused patches was written.
	got = e.must(e.do("GET", docsPath+"/a", nil, pk("x")...), http.StatusOK).json(t)
	if got["x"].(float64) != 1 || got["value"] != "5" || got["tenant"] != "x" {
		t.Errorf("after refused patches: %v", got)
	}
}
