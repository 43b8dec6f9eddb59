package query

import (
	"fmt"
	"slices"
	"strings"
)

// PathPolicy is the included/excluded paths of a Cosmos DB indexing policy.
// A path starts with '/', has one segment per step and ends with "/?" (the
// scalar at exactly that path) or "/*" (that path and everything under it):
//
//	"/*"            everything
//	"/a/?"          the scalar at c.a
//	"/a/*"          c.a and everything under it
//	"/tags/[]/?"    the scalars in the array c.tags
//	"/\"a b\"/?"    a property name with characters that need quoting
//
// A segment is a property name, "[]" (any element of an array), or a name in
// double quotes (with \" and \\ escapes), needed for names with '/', '"',
// '\\', '*', '?', for "", and for a property literally named "[]".
//
// Precedence: for a term path, the matching rule with the most segments
// wins; between rules of equal length "?" wins over "*" (it is more
// precise), and then excluded wins over included. A term path no rule
// matches is not indexed.
//
// Defaults: an empty Included means "/*"; `/"_etag"/?` is always excluded,
// as Cosmos DB does.
type PathPolicy struct {
	Included []string
	Excluded []string
}

// PathMatcher answers whether a term path is indexed under a PathPolicy.
// It is immutable and safe for concurrent use.
type PathMatcher struct {
	rules []pathRule
	// everywhere: some path under every prefix is indexed (a "/*" include
	// and no wildcard exclude, as the default policy), so that
	// IndexedUnder is true without looking at the rules.
	everywhere bool
}

// pathRule is one compiled policy path.
type pathRule struct {
	prefix   string // canonical term path of the segments before ? or *
	nsegs    int
	wildcard bool // ends with "*"
	exclude  bool
}

// etagPath is excluded by every policy.
const etagPath = `/"_etag"/?`

// Compile checks the policy's paths and compiles them. Errors match
// ErrInvalidPath and quote the bad path.
func (p PathPolicy) Compile() (*PathMatcher, error) {
	inc := p.Included
	if len(inc) == 0 {
		inc = []string{"/*"}
	}
	m := &PathMatcher{}
	add := func(paths []string, exclude bool) error {
		for _, s := range paths {
			r, err := parsePolicyPath(s)
			if err != nil {
				return err
			}
			r.exclude = exclude
			m.rules = append(m.rules, r)
		}
		return nil
	}
	if err := add(inc, false); err != nil {
		return nil, err
	}
	if err := add(append(append([]string(nil), p.Excluded...), etagPath), true); err != nil {
		return nil, err
	}
	m.everywhere = slices.ContainsFunc(m.rules, func(r pathRule) bool { return !r.exclude && r.wildcard && r.prefix == "" }) &&
		!slices.ContainsFunc(m.rules, func(r pathRule) bool { return r.exclude && r.wildcard })
	return m, nil
}

// parsePolicyPath parses one policy path into a rule.
func parsePolicyPath(s string) (pathRule, error) {
	bad := func(msg string) (pathRule, error) {
		return pathRule{}, fmt.Errorf("%w: %q: %s", ErrInvalidPath, s, msg)
	}
	if !strings.HasPrefix(s, "/") {
		return bad("a path starts with '/'")
	}
	var r pathRule
	var prefix []byte
	i := 1
	for {
		if i >= len(s) {
			return bad(`a path ends with "/?" or "/*"`)
		}
		switch {
		case s[i] == '?' || s[i] == '*':
			if i+1 != len(s) {
				return bad(fmt.Sprintf("%q is only allowed as the last segment", s[i:i+1]))
			}
			if s[i] == '?' && r.nsegs == 0 {
				return bad(`"/?" names no property; use "/*"`)
			}
			r.wildcard = s[i] == '*'
			r.prefix = string(prefix)
			return r, nil
		case s[i] == '"':
			name, n, ok := unquoteSegment(s[i:])
			if !ok {
				return bad("unterminated quoted name")
			}
			prefix = appendSegment(prefix, name)
			i += n
		default:
			j := strings.IndexByte(s[i:], '/')
			if j < 0 {
				return bad(`a path ends with "/?" or "/*"`)
			}
			seg := s[i : i+j]
			switch {
			case seg == "":
				return bad("empty segment (use \"\" for an empty property name)")
			case seg == "[]":
				prefix = append(prefix, "/[]"...)
			case strings.ContainsAny(seg, `*?"`):
				return bad(fmt.Sprintf("segment %q needs double quotes", seg))
			default:
				prefix = appendSegment(prefix, seg)
			}
			i += j
		}
		r.nsegs++
		if i >= len(s) || s[i] != '/' {
			return bad("expected '/' after a segment")
		}
		i++
	}
}

// unquoteSegment reads a double-quoted name at the start of s, returning
// the name and the bytes consumed.
func unquoteSegment(s string) (string, int, bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), i + 1, true
		case '\\':
			if i+1 >= len(s) {
				return "", 0, false
			}
			i++
			b.WriteByte(s[i])
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}

// Indexed reports whether the policy indexes the scalars at termPath (as
// made by Terms).
func (m *PathMatcher) Indexed(termPath string) bool {
	best := -1
	for i := range m.rules {
		r := &m.rules[i]
		if !r.matches(termPath) {
			continue
		}
		if best < 0 || r.beats(&m.rules[best]) {
			best = i
		}
	}
	return best >= 0 && !m.rules[best].exclude
}

// IndexedUnder reports whether the policy may index some term path at or
// below prefix: prefix itself, or prefix followed by more segments ("" is
// the root, above every path). False is definite, so a walk over a document
// may skip the subtree at prefix; true may be conservative.
func (m *PathMatcher) IndexedUnder(prefix string) bool { return indexedUnder(m, prefix) }

// indexedUnder is IndexedUnder for a prefix held as a string or, by a
// document walk, in a reused byte buffer.
func indexedUnder[P string | []byte](m *PathMatcher, prefix P) bool {
	if m.everywhere {
		return true
	}
	// The strongest exclude rule that matches every path under prefix;
	// nothing under prefix is indexed if no include rule that can match
	// there beats it.
	var ex *pathRule
	for i := range m.rules {
		r := &m.rules[i]
		if r.exclude && r.wildcard && segmentPrefix(prefix, r.prefix) && (ex == nil || r.nsegs > ex.nsegs) {
			ex = r
		}
	}
	for i := range m.rules {
		r := &m.rules[i]
		if r.exclude || !(r.wildcard && segmentPrefix(prefix, r.prefix) || segmentPrefix(r.prefix, prefix)) {
			continue
		}
		if ex == nil || r.nsegs > ex.nsegs || r.nsegs == ex.nsegs && !r.wildcard {
			return true
		}
	}
	return false
}

// segmentPrefix reports whether path is at or below prefix, in whole
// segments, as pathRule.matches tests it.
func segmentPrefix[P, Q string | []byte](path P, prefix Q) bool {
	n := len(prefix)
	return n == 0 || len(path) >= n && string(path[:n]) == string(prefix) && (len(path) == n || path[n] == '/')
}

func (r *pathRule) matches(termPath string) bool {
	if !r.wildcard {
		return termPath == r.prefix
	}
	return r.prefix == "" || termPath == r.prefix ||
		(strings.HasPrefix(termPath, r.prefix) && termPath[len(r.prefix)] == '/')
}

// beats reports whether r takes precedence over o.
func (r *pathRule) beats(o *pathRule) bool {
	if r.nsegs != o.nsegs {
		return r.nsegs > o.nsegs
	}
	if r.wildcard != o.wildcard {
		return !r.wildcard
	}
	return r.exclude && !o.exclude
}
