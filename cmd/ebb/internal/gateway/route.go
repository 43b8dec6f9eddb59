package gateway

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// errRoute is wrapped by every error of parseRoute: a path that names no
// resource this gateway serves.
var errRoute = errors.New("unknown resource path")

// route is what a request path names, in Cosmos DB's name-based addressing:
// "dbs", "dbs/{db}", "dbs/{db}/colls", "dbs/{db}/colls/{coll}",
// ".../docs", ".../docs/{id}", ".../pkranges", "offers", or "" (the
// account).
type route struct {
	// kind is the resource type the request addresses, as the signature
	// names it: "" (the account), "dbs", "colls", "docs", "pkranges",
	// "offers".
	kind string
	// feed is true when the path ends in a resource type (a collection of
	// resources: create, list, query) and false when it ends in an id.
	feed bool
	db   string
	coll string
	doc  string
	// addr is the resource address the signature covers: the path without
	// a trailing resource type, its segments unescaped, joined by "/".
	addr string
}

// maxPathSegments bounds the segments of a path: the deepest route is
// dbs/{db}/colls/{coll}/docs/{id}.
const maxPathSegments = 6

// parseRoute reads an escaped URL path ("/dbs/a/colls/b/docs/c%20d").
// Each segment is unescaped on its own, so an id may hold an escaped "/".
// Errors wrap errRoute and say what is wrong.
func parseRoute(escaped string) (route, error) {
	p := strings.Trim(escaped, "/")
	if p == "" {
		return route{kind: "", feed: false}, nil
	}
	raw := strings.Split(p, "/")
	if len(raw) > maxPathSegments {
		return route{}, fmt.Errorf("%w: %q has more than %d segments", errRoute, shorten(escaped), maxPathSegments)
	}
	segs := make([]string, len(raw))
	for i, s := range raw {
		u, err := url.PathUnescape(s)
		if err != nil {
			return route{}, fmt.Errorf("%w: segment %d of %q is not a valid escaped path segment", errRoute, i+1, shorten(escaped))
		}
		if u == "" {
			return route{}, fmt.Errorf("%w: %q has an empty segment", errRoute, shorten(escaped))
		}
		segs[i] = u
	}
	// Even positions are resource types, odd ones ids.
	types := []string{"dbs", "colls", "docs"}
	if segs[0] == "offers" {
		if len(segs) > 2 {
			return route{}, fmt.Errorf("%w: %q", errRoute, shorten(escaped))
		}
		r := route{kind: "offers", feed: len(segs) == 1}
		if len(segs) == 2 {
			r.addr = segs[1]
		}
		return r, nil
	}
	var r route
	for i, s := range segs {
		if i%2 == 0 {
			want := types[i/2]
			if i == 4 && s == "pkranges" {
				want = "pkranges"
			}
			if s != want {
				return route{}, fmt.Errorf("%w: %q: expected %q at segment %d, not %q", errRoute, shorten(escaped), want, i+1, shorten(s))
			}
			continue
		}
		switch i {
		case 1:
			r.db = s
		case 3:
			r.coll = s
		case 5:
			if segs[4] == "pkranges" {
				return route{}, fmt.Errorf("%w: %q: a single partition key range cannot be read", errRoute, shorten(escaped))
			}
			r.doc = s
		}
	}
	r.feed = len(segs)%2 == 1
	if r.feed {
		r.kind = segs[len(segs)-1]
		r.addr = strings.Join(segs[:len(segs)-1], "/")
	} else {
		r.kind = segs[len(segs)-2]
		r.addr = strings.Join(segs, "/")
	}
	return r, nil
}

// shorten cuts s for an error message.
func shorten(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
