package query

import (
	"errors"
	"strings"
	"testing"
)

func TestPathPolicy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  PathPolicy
		yes, no []string
	}{
		{"default", PathPolicy{},
			[]string{"/a", "/a/b", "/tags/[]", `/"a/b"`, "/_ts", "/id", "/_etag/x"},
			[]string{"/_etag"}},
		{"include one scalar", PathPolicy{Included: []string{"/a/?"}, Excluded: []string{"/*"}},
			[]string{"/a"},
			[]string{"/a/b", "/b", "/a/[]", "/ab"}},
		{"exclude a subtree", PathPolicy{Excluded: []string{"/a/*"}},
			[]string{"/b", "/ab", "/b/a"},
			[]string{"/a", "/a/b", "/a/[]/c"}},
		{"more specific include wins", PathPolicy{Included: []string{"/category/name/?"}, Excluded: []string{"/category/*"}},
			[]string{"/category/name"},
			[]string{"/category", "/category/id", "/category/name/x", "/other"}},
		{"more specific exclude wins", PathPolicy{Included: []string{"/*", "/a/*"}, Excluded: []string{"/a/b/?"}},
			[]string{"/a", "/a/c", "/a/b/c"},
			[]string{"/a/b"}},
		{"tie: excluded wins", PathPolicy{Included: []string{"/*", "/a/*"}, Excluded: []string{"/a/*"}},
			[]string{"/b"},
			[]string{"/a", "/a/x"}},
		{"? beats * at the same length", PathPolicy{Included: []string{"/a/?"}, Excluded: []string{"/a/*"}},
			[]string{"/a"},
			[]string{"/a/x"}},
		{"arrays", PathPolicy{Included: []string{"/tags/[]/?", "/items/[]/*"}, Excluded: []string{"/*"}},
			[]string{"/tags/[]", "/items/[]/sku", "/items/[]"},
			[]string{"/tags", "/tags/[]/x", "/items"}},
		{"quoted names", PathPolicy{Included: []string{`/"a b"/?`, `/"x/y"/*`, `/"[]"/?`, `/"q\""/?`, `/"id"/?`}, Excluded: []string{"/*"}},
			[]string{"/a b", `/"x/y"`, `/"x/y"/z`, `/"[]"`, `/"q\""`, "/id"},
			[]string{"/x", "/x/y", "/[]", `/"a b"`}},
		{"etag cannot be re-included", PathPolicy{Included: []string{"/_etag/?"}},
			nil, []string{"/_etag", "/a"}},
		{"root wildcard in excluded only", PathPolicy{Included: []string{"/a/*"}, Excluded: []string{"/*"}},
			[]string{"/a", "/a/b"}, []string{"/b"}},
	} {
		m, err := tc.policy.Compile()
		if err != nil {
			t.Errorf("%s: Compile: %v", tc.name, err)
			continue
		}
		for _, p := range tc.yes {
			if !m.Indexed(p) {
				t.Errorf("%s: %s not indexed", tc.name, p)
			}
		}
		for _, p := range tc.no {
			if m.Indexed(p) {
				t.Errorf("%s: %s indexed", tc.name, p)
			}
		}
	}
}

func TestPathPolicyAgreesWithTerms(t *testing.T) {
	// A name that needs quoting in a document reaches the policy rule that
	// quotes it.
	m, err := PathPolicy{Included: []string{`/"a/b"/?`, "/t/[]/?"}, Excluded: []string{"/*"}}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	terms := Terms(mustDecode(t, `{"a/b":1,"a":{"b":2},"t":[1,[2]]}`), m.Indexed, nil)
	if len(terms) != 2 || terms[0].Path != `/"a/b"` || terms[1].Path != "/t/[]" {
		t.Fatalf("terms = %q", terms)
	}
}

func TestPathPolicyErrors(t *testing.T) {
	for _, p := range []string{"", "a/?", "/a", "/a/", "/a/b", "/?", "//?", "/a*/?", "/a/*/b/?", "/a/?/b", `/"a/?`, `/"a"b/?`, "/a?/?"} {
		_, err := PathPolicy{Included: []string{p}}.Compile()
		if !errors.Is(err, ErrInvalidPath) || !strings.Contains(err.Error(), `"`) {
			t.Errorf("Compile(%q) = %v, want ErrInvalidPath quoting the path", p, err)
		}
		_, err = PathPolicy{Excluded: []string{p}}.Compile()
		if !errors.Is(err, ErrInvalidPath) {
			t.Errorf("Compile(excluded %q) = %v, want ErrInvalidPath", p, err)
		}
	}
}
