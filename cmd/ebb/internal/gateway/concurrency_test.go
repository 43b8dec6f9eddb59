package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestConcurrentPatchesAndBatches: patches and batches that read, change
// and write an item lose no update when they race: each retries on the
// etag it lost to.
func TestConcurrentPatchesAndBatches(t *testing.T) {
	e := newItemsEnv(t)
	e.must(e.do("POST", docsPath, `{"id":"n","tenant":"x","count":0}`, pk("x")...), http.StatusCreated)
	const workers, each = 4, 5
	incr := map[string]any{"operations": []any{map[string]any{"op": "incr", "path": "/count", "value": 1}}}
	batch := []any{map[string]any{"operationType": "Patch", "id": "n", "resourceBody": incr}}
	var wg sync.WaitGroup
	errs := make(chan string, 2*workers*each)
	for w := 0; w < workers; w++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if r := e.do("PATCH", docsPath+"/n", incr, pk("x")...); r.status != http.StatusOK {
					errs <- fmt.Sprintf("patch: %d %s", r.status, r.body)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if r := e.do("POST", docsPath, batch, append(pk("x"), "x-ms-cosmos-is-batch-request", "True")...); r.status != http.StatusOK {
					errs <- fmt.Sprintf("batch: %d %s", r.status, r.body)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
	got := e.must(e.do("GET", docsPath+"/n", nil, pk("x")...), http.StatusOK).json(t)
	if got["count"].(float64) != 2*workers*each {
		t.Errorf("count %v after %d increments", got["count"], 2*workers*each)
	}
}

// TestSidecarRecovery: a database folder without its sidecar (a create
// cut short) is removed at start; a container the sidecar lacks (created
// just before a crash) gets metadata; sidecar entries without a container
// are dropped.
func TestSidecarRecovery(t *testing.T) {
	e := newEnv(t)
	e.mkdb("d")
	e.mkcoll("d", map[string]any{"id": "c", "partitionKey": map[string]any{"paths": []string{"/k"}}})
	e.must(e.do("POST", "/dbs/d/colls/c/docs", `{"id":"a","k":"v"}`, pk("v")...), http.StatusCreated)
	e.stop()
	dir := filepath.Join(e.dir, dirName("d"))
	m, err := readMeta(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Containers["ghost"] = &collMeta{RID: 99}
	delete(m.Containers, "c")
	if err := writeMeta(dir, m); err != nil {
		t.Fatal(err)
	}
	half := filepath.Join(e.dir, dirName("half"))
	if err := os.MkdirAll(filepath.Join(half, dataDir), 0o755); err != nil {
		t.Fatal(err)
	}
	e.start()
	if _, err := os.Stat(half); !os.IsNotExist(err) {
		t.Errorf("half-created database folder left: %v", err)
	}
	e.do("GET", "/dbs/d/colls/ghost", nil).errBody(t, http.StatusNotFound)
	c := e.must(e.do("GET", "/dbs/d/colls/c", nil), http.StatusOK).json(t)
	if c["_rid"] == nil {
		t.Errorf("container %v", c)
	}
	it := e.must(e.do("GET", "/dbs/d/colls/c/docs/a", nil, pk("v")...), http.StatusOK).json(t)
	if it["k"] != "v" {
		t.Errorf("item %v", it)
	}
	// A sidecar that is not JSON is an error at start, not a silent loss.
	e.stop()
	if err := os.WriteFile(filepath.Join(dir, metaFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Dir: e.dir, Engine: testEngineOptions()}); err == nil {
		t.Fatal("New with a damaged sidecar succeeded")
	}
	b, _ := json.Marshal(m)
	os.WriteFile(filepath.Join(dir, metaFile), b, 0o644)
	e.start()
	e.must(e.do("GET", "/dbs/d/colls/c/docs/a", nil, pk("v")...), http.StatusOK)
}
