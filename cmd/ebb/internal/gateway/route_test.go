package gateway

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func TestParseRoute(t *testing.T) {
	for _, c := range []struct {
		path string
		want route
	}{
		{"/", route{}},
		{"", route{}},
		{"/dbs", route{kind: "dbs", feed: true}},
		{"/dbs/", route{kind: "dbs", feed: true}},
		{"/dbs/a", route{kind: "dbs", db: "a", addr: "dbs/a"}},
		{"/dbs/a/colls", route{kind: "colls", feed: true, db: "a", addr: "dbs/a"}},
		{"/dbs/a/colls/b", route{kind: "colls", db: "a", coll: "b", addr: "dbs/a/colls/b"}},
		{"/dbs/a/colls/b/docs", route{kind: "docs", feed: true, db: "a", coll: "b", addr: "dbs/a/colls/b"}},
		{"/dbs/a/colls/b/docs/c%20d", route{kind: "docs", db: "a", coll: "b", doc: "c d", addr: "dbs/a/colls/b/docs/c d"}},
		{"/dbs/a/colls/b/docs/x%2Fy", route{kind: "docs", db: "a", coll: "b", doc: "x/y", addr: "dbs/a/colls/b/docs/x/y"}},
		{"/dbs/a/colls/b/pkranges", route{kind: "pkranges", feed: true, db: "a", coll: "b", addr: "dbs/a/colls/b"}},
		{"/offers", route{kind: "offers", feed: true}},
		{"/offers/c0001", route{kind: "offers", addr: "c0001"}},
	} {
		got, err := parseRoute(c.path)
		if err != nil || got != c.want {
			t.Errorf("parseRoute(%q) = %+v, %v; want %+v", c.path, got, err, c.want)
		}
	}
	for _, bad := range []string{"/users", "/dbs/a/users", "/dbs/a/colls/b/sprocs", "/dbs//colls", "/dbs/a/colls/b/docs/c/attachments",
		"/dbs/a/colls/b/pkranges/0", "/dbs/%zz", "/offers/a/b", "/dbs/a/colls/b/docs/c/d/e/f"} {
		if _, err := parseRoute(bad); !errors.Is(err, errRoute) {
			t.Errorf("parseRoute(%q): %v", bad, err)
		}
	}
}

// TestSignDocumentedExample checks Sign against the example of Cosmos DB's
// REST documentation ("Access control on Cosmos DB resources").
func TestSignDocumentedExample(t *testing.T) {
	key, _ := base64.StdEncoding.DecodeString("dsZQi3KtZmCv1ljt3VNWNm7sQUF1y5rJfC6kv5JiwvW0EndXdDku/dkKBp8/ufDToSxLzR4y+O/0H/t4bQtVNw==")
	got := Sign(key, "GET", "dbs", "dbs/ToDoList", "Thu, 27 Apr 2017 00:51:12 GMT")
	want := "type%3dmaster%26ver%3d1.0%26sig%3dc09PEVJrgp2uQRkr934kFbTqhByc7TVr3OHyqlu%2bc%2bc%3d"
	if !strings.EqualFold(got, want) {
		t.Errorf("Sign = %s, want %s", got, want)
	}
}
