package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Now().Truncate(time.Second)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testEnv is a gateway behind an httptest server, with a client that signs
// its requests as the SDKs do.
type testEnv struct {
	t     *testing.T
	dir   string
	clock *fakeClock
	gw    *Server
	srv   *httptest.Server
	key   []byte
}

// testEngineOptions keep tests quick: no fsync, a small cache.
func testEngineOptions() *engine.Options {
	return &engine.Options{NoSync: true, BlockCacheSize: 8 << 20, NoWarmup: true}
}

func newEnv(t *testing.T) *testEnv {
	t.Helper()
	e := &testEnv{t: t, dir: t.TempDir(), clock: newFakeClock()}
	e.key, _ = base64.StdEncoding.DecodeString(EmulatorKey)
	e.start()
	return e
}

// start opens the gateway on e.dir.
func (e *testEnv) start() {
	e.t.Helper()
	gw, err := New(Config{Dir: e.dir, Clock: e.clock.Now, Engine: testEngineOptions()})
	if err != nil {
		e.t.Fatalf("New: %v", err)
	}
	e.gw = gw
	e.srv = httptest.NewServer(gw)
	e.t.Cleanup(e.stop)
}

// stop closes the server and the gateway.
func (e *testEnv) stop() {
	if e.srv != nil {
		e.srv.Close()
		e.srv = nil
	}
	if e.gw != nil {
		if err := e.gw.Close(); err != nil {
			e.t.Errorf("Close: %v", err)
		}
		e.gw = nil
	}
}

// restart closes the gateway and opens it again on the same directory.
func (e *testEnv) restart() {
	e.t.Helper()
	e.stop()
	e.start()
}

// resourceOf computes the signed resource type and address of a path, as
// the SDKs do: the address is the path of the resource (for a feed, of its
// parent), unescaped.
func resourceOf(path string) (typ, addr string) {
	p := strings.Trim(path, "/")
	if p == "" {
		return "", ""
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if u, err := url.PathUnescape(s); err == nil {
			segs[i] = u
		}
	}
	if len(segs)%2 == 1 {
		return segs[len(segs)-1], strings.Join(segs[:len(segs)-1], "/")
	}
	return segs[len(segs)-2], strings.Join(segs, "/")
}

// resp is a response read whole.
type resp struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into a map.
func (r resp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("response body %q is not a JSON object: %v", r.body, err)
	}
	return m
}

// errBody checks an error response's status and JSON shape, returning its
// message.
func (r resp) errBody(t *testing.T, status int) string {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	m := r.json(t)
	if m["code"] == nil || m["message"] == nil {
		t.Fatalf("error body %s lacks code or message", r.body)
	}
	return m["message"].(string)
}

// do sends a signed request; hdr are extra headers ("k", "v", ...).
func (e *testEnv) do(method, path string, body any, hdr ...string) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	date := e.clock.Now().UTC().Format(http.TimeFormat)
	typ, addr := resourceOf(path)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2020-07-15")
	req.Header.Set("Authorization", Sign(e.key, method, typ, addr, date))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	return e.send(req)
}

func (e *testEnv) send(req *http.Request) resp {
	e.t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

// must checks a status.
func (e *testEnv) must(r resp, status int) resp {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	return r
}

// mkdb creates a database; mkcoll a container with props merged in.
func (e *testEnv) mkdb(id string) {
	e.t.Helper()
	e.must(e.do("POST", "/dbs", map[string]any{"id": id}), http.StatusCreated)
}

func (e *testEnv) mkcoll(db string, props map[string]any) map[string]any {
	e.t.Helper()
	return e.must(e.do("POST", "/dbs/"+db+"/colls", props), http.StatusCreated).json(e.t)
}

// pk is the partition key header of a string value.
func pk(v string) []string {
	b, _ := json.Marshal([]string{v})
	return []string{"x-ms-documentdb-partitionkey", string(b)}
}

// query posts a query, with headers.
func (e *testEnv) query(path, sql string, params []map[string]any, hdr ...string) resp {
	e.t.Helper()
	body := map[string]any{"query": sql}
	if params != nil {
		body["parameters"] = params
	}
	h := append([]string{"Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True"}, hdr...)
	return e.do("POST", path, body, h...)
}

// docs is the Documents of a query page.
func docs(t *testing.T, r resp) []any {
	t.Helper()
	m := r.json(t)
	d, ok := m["Documents"].([]any)
	if !ok {
		t.Fatalf("no Documents in %s", r.body)
	}
	return d
}

// ids are the ids of documents.
func ids(t *testing.T, d []any) []string {
	t.Helper()
	var out []string
	for _, x := range d {
		m, ok := x.(map[string]any)
		if !ok {
			t.Fatalf("document %v is not an object", x)
		}
		out = append(out, m["id"].(string))
	}
	return out
}
