package gateway

import (
	"net/http"
	"os"
	"strings"
	"testing"
)

func TestDatabases(t *testing.T) {
	e := newEnv(t)
	r := e.must(e.do("POST", "/dbs", map[string]any{"id": "shop"}), http.StatusCreated)
	db := r.json(t)
	for _, k := range []string{"id", "_rid", "_self", "_etag", "_ts", "_colls", "_users"} {
		if db[k] == nil {
			t.Errorf("database lacks %s: %s", k, r.body)
		}
	}
	if r.header.Get("x-ms-activity-id") == "" || r.header.Get("x-ms-session-token") == "" || r.header.Get("x-ms-request-charge") == "" {
		t.Errorf("missing response headers: %v", r.header)
	}
	e.do("POST", "/dbs", map[string]any{"id": "shop"}).errBody(t, http.StatusConflict)
	e.do("POST", "/dbs", map[string]any{"id": "a/b"}).errBody(t, http.StatusBadRequest)
	e.do("POST", "/dbs", map[string]any{"nope": 1}).errBody(t, http.StatusBadRequest)
	e.do("POST", "/dbs", "{not json").errBody(t, http.StatusBadRequest)
	e.mkdb("Ünïcode db")
	got := e.must(e.do("GET", "/dbs/shop", nil), http.StatusOK).json(t)
	if got["_rid"] != db["_rid"] || got["_etag"] != db["_etag"] {
		t.Errorf("read %v, created %v", got, db)
	}
	list := e.must(e.do("GET", "/dbs", nil), http.StatusOK).json(t)
	if list["_count"].(float64) != 2 {
		t.Errorf("list: %v", list)
	}
	q := e.must(e.query("/dbs", "SELECT * FROM root r WHERE r.id = @id", []map[string]any{{"name": "@id", "value": "shop"}}), http.StatusOK).json(t)
	if dbs := q["Databases"].([]any); len(dbs) != 1 || dbs[0].(map[string]any)["id"] != "shop" {
		t.Errorf("query: %v", q)
	}
	e.query("/dbs", "SELECT * FORM r", nil).errBody(t, http.StatusBadRequest)

	// Databases survive a restart with their rids; a deleted one is gone
	// with its folder.
	e.restart()
	got = e.must(e.do("GET", "/dbs/shop", nil), http.StatusOK).json(t)
	if got["_rid"] != db["_rid"] || got["_ts"] != db["_ts"] {
		t.Errorf("after restart %v, created %v", got, db)
	}
	e.must(e.do("DELETE", "/dbs/shop", nil), http.StatusNoContent)
	e.do("GET", "/dbs/shop", nil).errBody(t, http.StatusNotFound)
	e.do("DELETE", "/dbs/shop", nil).errBody(t, http.StatusNotFound)
	entries, _ := os.ReadDir(e.dir)
	if len(entries) != 1 {
		t.Errorf("folders left: %v", entries)
	}
	e.restart()
	e.do("GET", "/dbs/shop", nil).errBody(t, http.StatusNotFound)
	e.must(e.do("GET", "/dbs/Ünïcode db", nil), http.StatusOK)
}

func TestUnknownPathsAndMethods(t *testing.T) {
	e := newEnv(t)
	e.mkdb("d")
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/nothing", http.StatusNotFound},
		{"GET", "/dbs/d/users", http.StatusNotFound},
		{"GET", "/dbs/d/colls/c/docs/a/attachments", http.StatusNotFound},
		{"GET", "/dbs/d/colls/c/sprocs", http.StatusNotFound},
		{"GET", "/dbs//colls", http.StatusNotFound},
		{"PATCH", "/dbs/d", http.StatusMethodNotAllowed},
		{"PUT", "/dbs", http.StatusMethodNotAllowed},
		{"GET", "/dbs/d/colls/none", http.StatusNotFound},
		{"GET", "/dbs/none/colls/c", http.StatusNotFound},
	} {
		e.do(c.method, c.path, nil).errBody(t, c.status)
	}
}

func TestContainers(t *testing.T) {
	e := newEnv(t)
	e.mkdb("d")
	c := e.mkcoll("d", map[string]any{
		"id":              "orders",
		"partitionKey":    map[string]any{"paths": []string{"/tenant"}, "kind": "Hash"},
		"defaultTtl":      3600,
		"indexingPolicy":  map[string]any{"indexingMode": "consistent", "automatic": true, "includedPaths": []any{map[string]any{"path": "/*"}}, "excludedPaths": []any{map[string]any{"path": `/"_etag"/?`}, map[string]any{"path": "/big/*"}}},
		"uniqueKeyPolicy": map[string]any{"uniqueKeys": []any{}},
	})
	pkdef := c["partitionKey"].(map[string]any)
	if pkdef["paths"].([]any)[0] != "/tenant" || pkdef["kind"] != "Hash" || pkdef["version"].(float64) != 2 {
		t.Errorf("partitionKey %v", pkdef)
	}
	if c["defaultTtl"].(float64) != 3600 || c["uniqueKeyPolicy"] == nil || c["_rid"] == nil || c["_self"] == nil {
		t.Errorf("container %v", c)
	}
	ex := c["indexingPolicy"].(map[string]any)["excludedPaths"].([]any)
	if len(ex) != 2 {
		t.Errorf("indexingPolicy not as given: %v", c["indexingPolicy"])
	}
	e.do("POST", "/dbs/d/colls", map[string]any{"id": "orders"}).errBody(t, http.StatusConflict)
	msg := e.do("POST", "/dbs/d/colls", map[string]any{"id": "h", "partitionKey": map[string]any{"paths": []string{"/a", "/b"}, "kind": "MultiHash", "version": 2}}).errBody(t, http.StatusBadRequest)
	if !strings.Contains(msg, "hierarchical partition keys") {
		t.Errorf("hierarchical: %q", msg)
	}
	msg = e.do("POST", "/dbs/d/colls", map[string]any{"id": "t", "defaultTtl": 0}).errBody(t, http.StatusBadRequest)
	if !strings.Contains(msg, "The input default time to live '0' is invalid") {
		t.Errorf("defaultTtl 0: %q", msg)
	}
	e.do("POST", "/dbs/d/colls", map[string]any{"id": "m", "indexingPolicy": map[string]any{"indexingMode": "eventual"}}).errBody(t, http.StatusBadRequest)
	e.do("POST", "/dbs/d/colls", map[string]any{"id": "p", "indexingPolicy": map[string]any{"includedPaths": []any{map[string]any{"path": "nope"}}}}).errBody(t, http.StatusBadRequest)
	e.do("POST", "/dbs/nope/colls", map[string]any{"id": "x"}).errBody(t, http.StatusNotFound)
	// Throughput headers are accepted.
	e.must(e.do("POST", "/dbs/d/colls", map[string]any{"id": "plain"}, "x-ms-offer-throughput", "400"), http.StatusCreated)
	e.do("POST", "/dbs/d/colls", map[string]any{"id": "bad"}, "x-ms-offer-throughput", "lots").errBody(t, http.StatusBadRequest)

	got := e.must(e.do("GET", "/dbs/d/colls/orders", nil), http.StatusOK).json(t)
	if got["_rid"] != c["_rid"] || got["defaultTtl"].(float64) != 3600 {
		t.Errorf("read %v", got)
	}
	q := e.must(e.query("/dbs/d/colls", "SELECT * FROM root r WHERE r.id = 'orders'", nil), http.StatusOK).json(t)
	if n := len(q["DocumentCollections"].([]any)); n != 1 {
		t.Errorf("query containers: %v", q)
	}

	// Replace: defaultTtl off; the partition key cannot change.
	repl := e.must(e.do("PUT", "/dbs/d/colls/orders", map[string]any{"id": "orders", "partitionKey": map[string]any{"paths": []string{"/tenant"}, "kind": "Hash"}}), http.StatusOK).json(t)
	if repl["defaultTtl"] != nil || repl["_etag"] == c["_etag"] {
		t.Errorf("replace: %v", repl)
	}
	e.do("PUT", "/dbs/d/colls/orders", map[string]any{"id": "orders", "partitionKey": map[string]any{"paths": []string{"/other"}}}).errBody(t, http.StatusBadRequest)
	e.do("PUT", "/dbs/d/colls/orders", map[string]any{"id": "other", "partitionKey": map[string]any{"paths": []string{"/tenant"}}}).errBody(t, http.StatusBadRequest)

	e.restart()
	got = e.must(e.do("GET", "/dbs/d/colls/orders", nil), http.StatusOK).json(t)
	if got["_rid"] != c["_rid"] || got["uniqueKeyPolicy"] != nil || got["partitionKey"] == nil { // the replace dropped uniqueKeyPolicy
		t.Errorf("after restart %v", got)
	}
	e.must(e.do("DELETE", "/dbs/d/colls/orders", nil), http.StatusNoContent)
	e.do("GET", "/dbs/d/colls/orders", nil).errBody(t, http.StatusNotFound)
	e.do("DELETE", "/dbs/d/colls/orders", nil).errBody(t, http.StatusNotFound)

	pr := e.must(e.do("GET", "/dbs/d/colls/plain/pkranges", nil), http.StatusOK).json(t)
	if len(pr["PartitionKeyRanges"].([]any)) != 1 {
		t.Errorf("pkranges %v", pr)
	}
}
