package gateway

import (
	"net/http"
	"reflect"
	"testing"
)

func TestChangeFeed(t *testing.T) {
	e := newItemsEnv(t)
	feed := []string{"A-IM", "Incremental feed"}
	// Nothing yet: 304 with an etag to start from.
	r := e.must(e.do("GET", docsPath, nil, feed...), http.StatusNotModified)
	etag := r.header.Get("etag")
	if etag == "" {
		t.Fatal("no etag")
	}
	e.must(e.do("POST", docsPath, `{"id":"a","tenant":"x"}`, pk("x")...), http.StatusCreated)
	e.must(e.do("POST", docsPath, `{"id":"b","tenant":"y"}`, pk("y")...), http.StatusCreated)
	r = e.must(e.do("GET", docsPath, nil, append(feed, "If-None-Match", etag)...), http.StatusOK)
	if got := ids(t, docs(t, r)); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("feed %v", got)
	}
	etag = r.header.Get("etag")
	e.must(e.do("GET", docsPath, nil, append(feed, "If-None-Match", etag)...), http.StatusNotModified)
	e.must(e.do("PUT", docsPath+"/a", `{"id":"a","tenant":"x","v":2}`, pk("x")...), http.StatusOK)
	r = e.must(e.do("GET", docsPath, nil, append(feed, "If-None-Match", etag)...), http.StatusOK)
	if got := ids(t, docs(t, r)); !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("feed after a replace %v", got)
	}
	// One partition's changes; from now; pages.
	r = e.must(e.do("GET", docsPath, nil, append(feed, pk("y")...)...), http.StatusOK)
	if got := ids(t, docs(t, r)); !reflect.DeepEqual(got, []string{"b"}) {
		t.Errorf("feed of y %v", got)
	}
	e.must(e.do("GET", docsPath, nil, append(feed, "If-None-Match", "*")...), http.StatusNotModified)
	r = e.must(e.do("GET", docsPath, nil, append(feed, "x-ms-max-item-count", "1")...), http.StatusOK)
	if n := len(docs(t, r)); n != 1 {
		t.Errorf("page of %d", n)
	}
	e.do("GET", docsPath, nil, append(feed, "If-None-Match", `"!!"`)...).errBody(t, http.StatusBadRequest)
	e.do("GET", docsPath, nil, "A-IM", "everything").errBody(t, http.StatusBadRequest)
}
