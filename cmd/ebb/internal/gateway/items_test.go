package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// newItemsEnv has database d with container c keyed on /tenant and
// container plain without a key.
func newItemsEnv(t *testing.T) *testEnv {
	e := newEnv(t)
	e.mkdb("d")
	e.mkcoll("d", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/tenant"}, "kind": "Hash", "version": 2}})
	e.mkcoll("d", map[string]any{"id": "plain"})
	return e
}

const docsPath = "/dbs/d/colls/c/docs"

func TestItemsCRUD(t *testing.T) {
	e := newItemsEnv(t)
	r := e.must(e.do("POST", docsPath, `{"id":"a","tenant":"x","n":1}`, pk("x")...), http.StatusCreated)
	it := r.json(t)
	for _, k := range []string{"_rid", "_self", "_etag", "_ts", "_attachments"} {
		if it[k] == nil {
			t.Errorf("created item lacks %s: %s", k, r.body)
		}
	}
	if r.header.Get("etag") != it["_etag"] || r.header.Get("x-ms-session-token") == "" {
		t.Errorf("etag header %q, body %v", r.header.Get("etag"), it["_etag"])
	}
	// The same id under another key is another item; under the same key a
	// conflict.
	e.must(e.do("POST", docsPath, `{"id":"a","tenant":"y","n":2}`, pk("y")...), http.StatusCreated)
	e.do("POST", docsPath, `{"id":"a","tenant":"x"}`, pk("x")...).errBody(t, http.StatusConflict)
	got := e.must(e.do("GET", docsPath+"/a", nil, pk("y")...), http.StatusOK).json(t)
	if got["n"].(float64) != 2 || got["_rid"] == it["_rid"] {
		t.Errorf("read y/a: %v", got)
	}
	got = e.must(e.do("GET", docsPath+"/a", nil, pk("x")...), http.StatusOK).json(t)
	if got["_rid"] != it["_rid"] || got["_etag"] != it["_etag"] {
		t.Errorf("read x/a: %v, created %v", got, it)
	}
	e.must(e.do("GET", docsPath+"/a", nil, append(pk("x"), "If-None-Match", it["_etag"].(string))...), http.StatusNotModified)
	e.do("GET", docsPath+"/a", nil, pk("z")...).errBody(t, http.StatusNotFound)
	e.do("GET", docsPath+"/a", nil).errBody(t, http.StatusBadRequest)
	e.do("GET", docsPath+"/a", nil, "x-ms-documentdb-partitionkey", "x").errBody(t, http.StatusBadRequest)

	// Wrong key in the header; a body that is not JSON; a body over 2 MiB.
	msg := e.do("POST", docsPath, `{"id":"b","tenant":"x"}`, pk("y")...).errBody(t, http.StatusBadRequest)
	if !strings.Contains(msg, "PartitionKey extracted from document doesn't match") {
		t.Errorf("wrong key: %q", msg)
	}
	e.do("POST", docsPath, `{"id":"b",`, pk("x")...).errBody(t, http.StatusBadRequest)
	e.do("POST", docsPath, `[1,2]`, pk("x")...).errBody(t, http.StatusBadRequest)
	e.do("POST", docsPath, `{"tenant":"x"}`, pk("x")...).errBody(t, http.StatusBadRequest)
	big := `{"id":"big","tenant":"x","s":"` + strings.Repeat("a", 2<<20) + `"}`
	e.do("POST", docsPath, big, pk("x")...).errBody(t, http.StatusRequestEntityTooLarge)
	huge := strings.Repeat(" ", 5<<20)
	e.do("POST", docsPath, huge, pk("x")...).errBody(t, http.StatusRequestEntityTooLarge)
	e.do("GET", docsPath+"/big", nil, pk("x")...).errBody(t, http.StatusNotFound)

	// Without the header a create takes the key from the document.
	e.must(e.do("POST", docsPath, `{"id":"c","tenant":"w"}`), http.StatusCreated)
	e.must(e.do("GET", docsPath+"/c", nil, pk("w")...), http.StatusOK)

	// Replace with If-Match: the current etag wins, an old one is a 412.
	etag := it["_etag"].(string)
	r = e.must(e.do("PUT", docsPath+"/a", `{"id":"a","tenant":"x","n":3}`, append(pk("x"), "If-Match", etag)...), http.StatusOK)
	if r.json(t)["_etag"] == etag {
		t.Errorf("replace kept the etag")
	}
	e.do("PUT", docsPath+"/a", `{"id":"a","tenant":"x","n":4}`, append(pk("x"), "If-Match", etag)...).errBody(t, http.StatusPreconditionFailed)
	e.do("PUT", docsPath+"/a", `{"id":"b","tenant":"x"}`, pk("x")...).errBody(t, http.StatusBadRequest)
	e.do("PUT", docsPath+"/nope", `{"id":"nope","tenant":"x"}`, pk("x")...).errBody(t, http.StatusNotFound)

	// Upsert: 201 when new, 200 when it replaced; Prefer minimal: no body.
	r = e.must(e.do("POST", docsPath, `{"id":"u","tenant":"x"}`, append(pk("x"), "x-ms-documentdb-is-upsert", "True", "Prefer", "return=minimal")...), http.StatusCreated)
	if len(r.body) != 0 || r.header.Get("etag") == "" {
		t.Errorf("minimal upsert: body %q, etag %q", r.body, r.header.Get("etag"))
	}
	e.must(e.do("POST", docsPath, `{"id":"u","tenant":"x","v":2}`, append(pk("x"), "x-ms-documentdb-is-upsert", "true")...), http.StatusOK)

	// Delete, with If-Match.
	e.do("DELETE", docsPath+"/u", nil, append(pk("x"), "If-Match", `"0000000000000000"`)...).errBody(t, http.StatusPreconditionFailed)
	e.must(e.do("DELETE", docsPath+"/u", nil, pk("x")...), http.StatusNoContent)
	e.do("DELETE", docsPath+"/u", nil, pk("x")...).errBody(t, http.StatusNotFound)

	// A container without a key takes no header, or [{}].
	e.must(e.do("POST", "/dbs/d/colls/plain/docs", `{"id":"p"}`), http.StatusCreated)
	e.must(e.do("GET", "/dbs/d/colls/plain/docs/p", nil), http.StatusOK)
	e.must(e.do("GET", "/dbs/d/colls/plain/docs/p", nil, "x-ms-documentdb-partitionkey", "[{}]"), http.StatusOK)
	e.do("GET", "/dbs/d/colls/plain/docs/p", nil, pk("p")...).errBody(t, http.StatusBadRequest)

	// Items survive a restart.
	e.restart()
	got = e.must(e.do("GET", docsPath+"/a", nil, pk("x")...), http.StatusOK).json(t)
	if got["n"].(float64) != 3 {
		t.Errorf("after restart: %v", got)
	}
}

func TestItemsIDEscaping(t *testing.T) {
	e := newItemsEnv(t)
	for _, id := range []string{"with space", "ünï", "a+b=c", "x%20y", "semi;colon"} {
		body := `{"id":"` + id + `","tenant":"k"}`
		e.must(e.do("POST", docsPath, body, pk("k")...), http.StatusCreated)
		got := e.must(e.do("GET", docsPath+"/"+pathEscape(id), nil, pk("k")...), http.StatusOK).json(t)
		if got["id"] != id {
			t.Errorf("id %q read back as %v", id, got["id"])
		}
	}
}

func pathEscape(s string) string {
	return strings.NewReplacer("%", "%25", " ", "%20", ";", "%3B").Replace(s)
}
