package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// FuzzRequest sends arbitrary signed requests (method, path, partition key,
// continuation, page size, change feed and batch headers, body) to a
// gateway holding a database with a keyed and an unkeyed container. No
// request may panic or get a 500, and every error answer is a JSON body
// with a code and a message. The header parsers are also called directly.
func FuzzRequest(f *testing.F) {
	seeds := []struct {
		method uint8
		path   string
		pk     string
		cont   string
		max    string
		flags  uint8
		body   string
	}{
		{0, "/dbs/d/colls/c/docs/a", `["x"]`, "", "", 0, ""},
		{1, "/dbs/d/colls/c/docs", `["x"]`, "", "", 0, `{"id":"b","k":"x","ttl":5}`},
		{1, "/dbs/d/colls/c/docs", `["x"]`, "", "2", 1, `{"query":"SELECT * FROM c WHERE c.n > @n","parameters":[{"name":"@n","value":1}]}`},
		{1, "/dbs/d/colls/c/docs", "", `{"ebb":1,"skip":1,"fp":"0"}`, "-1", 1, `{"query":"SELECT * FROM c ORDER BY c.n"}`},
		{1, "/dbs/d/colls/c/docs", `["x"]`, "", "", 2, `[{"operationType":"Create","resourceBody":{"id":"z","k":"x"}},{"operationType":"Read","id":"a"}]`},
		{4, "/dbs/d/colls/c/docs/a", `["x"]`, "", "", 0, `{"operations":[{"op":"incr","path":"/n","value":1}],"condition":"from c where c.n > 0"}`},
		{0, "/dbs/d/colls/c/docs", `[{}]`, `"0"`, "1", 4, ""},
		{2, "/dbs/d/colls/plain", "", "", "", 0, `{"id":"plain","defaultTtl":-1,"indexingPolicy":{"indexingMode":"lazy"}}`},
		{1, "/dbs/d/colls", "", "", "", 0, `{"id":"n","partitionKey":{"paths":["/a","/b"],"kind":"MultiHash"}}`},
		{3, "/dbs/d/colls/c/docs/a%2Fb", `[5]`, "", "", 0, ""},
		{0, "/dbs/d/colls/c/pkranges", "", "", "", 0, ""},
		{1, "/offers", "", "", "", 1, `{"query":"SELECT * FROM c"}`},
		{0, "/", "", "", "", 0, ""},
		{1, "/dbs", "", "", "", 0, `{"id":"e"}`},
		{0, "/dbs/d/colls/c/docs/%zz", `[null]`, "", "", 0, ""},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.pk, s.cont, s.max, s.flags, []byte(s.body))
	}
	gw, err := New(Config{Dir: f.TempDir(), Engine: testEngineOptions()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { gw.Close() })
	key, _ := base64.StdEncoding.DecodeString(EmulatorKey)
	send := func(method, path string, body []byte, hdr http.Header) *httptest.ResponseRecorder {
		req, err := http.NewRequest(method, "http://gw"+path, bytes.NewReader(body))
		if err != nil {
			return nil
		}
		for k, v := range hdr {
			req.Header[k] = v
		}
		date := time.Now().UTC().Format(http.TimeFormat)
		typ, addr := resourceOf(req.URL.EscapedPath())
		req.Header.Set("x-ms-date", date)
		req.Header.Set("Authorization", Sign(key, method, typ, addr, date))
		w := httptest.NewRecorder()
		gw.ServeHTTP(w, req)
		return w
	}
	send("POST", "/dbs", []byte(`{"id":"d"}`), nil)
	send("POST", "/dbs/d/colls", []byte(`{"id":"c","partitionKey":{"paths":["/k"]},"defaultTtl":-1}`), nil)
	send("POST", "/dbs/d/colls", []byte(`{"id":"plain"}`), nil)
	send("POST", "/dbs/d/colls/c/docs", []byte(`{"id":"a","k":"x","n":1}`), http.Header{"X-Ms-Documentdb-Partitionkey": {`["x"]`}})
	methods := []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"}
	f.Fuzz(func(t *testing.T, method uint8, path, pkh, cont, max string, flags uint8, body []byte) {
		// The parsers on their own.
		parseRoute(path)
		parseAuth(pkh)
		maxItemCount(max)
		parseContinuation(cont, "0")
		decodeFeedETag(cont)
		splitPointer(path)

		hdr := http.Header{}
		if pkh != "" {
			hdr.Set("x-ms-documentdb-partitionkey", pkh)
		}
		if cont != "" {
			hdr.Set("x-ms-continuation", cont)
			hdr.Set("If-None-Match", cont)
			hdr.Set("If-Match", cont)
		}
		if max != "" {
			hdr.Set("x-ms-max-item-count", max)
		}
		if flags&1 != 0 {
			hdr.Set("Content-Type", "application/query+json")
			hdr.Set("x-ms-documentdb-query-enablecrosspartition", "true")
		}
		if flags&2 != 0 {
			hdr.Set("x-ms-cosmos-is-batch-request", "True")
		}
		if flags&4 != 0 {
			hdr.Set("A-IM", "Incremental feed")
		}
		if flags&8 != 0 {
			hdr.Set("x-ms-documentdb-is-upsert", "True")
		}
		if flags&16 != 0 {
			hdr.Set("Prefer", "return=minimal")
		}
		w := send(methods[int(method)%len(methods)], path, body, hdr)
		if w == nil {
			return
		}
		if w.Code >= 500 {
			t.Fatalf("%s %q: status %d: %s", methods[int(method)%len(methods)], path, w.Code, w.Body.Bytes())
		}
		if w.Code >= 400 {
			var e struct{ Code, Message string }
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Code == "" || e.Message == "" {
				t.Fatalf("%s %q: status %d with body %q", methods[int(method)%len(methods)], path, w.Code, w.Body.Bytes())
			}
		}
	})
}
