package query

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// termsReference is what TermsJSON must equal: Terms over Decode.
func termsReference(doc []byte, indexed func(string) bool, dst []Term) ([]Term, error) {
	v, err := Decode(doc)
	if err != nil {
		return dst, err
	}
	return Terms(v, indexed, dst), nil
}

func mustCompile(t testing.TB, p PathPolicy) *PathMatcher {
	t.Helper()
	m, err := p.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkAgainstReference compares both TermsJSON entry points with the
// reference on doc, appending after a non-empty dst, and returns the terms.
func checkAgainstReference(t testing.TB, doc []byte, m *PathMatcher) []Term {
	t.Helper()
	prefix := []Term{{Path: "/keep", Key: "me"}}
	want, wantErr := termsReference(doc, m.Indexed, slices.Clone(prefix))
	got, err := TermsJSON(doc, m.Indexed, slices.Clone(prefix))
	gotM, errM := m.TermsJSON(doc, slices.Clone(prefix))
	for _, r := range []struct {
		name  string
		terms []Term
		err   error
	}{{"TermsJSON", got, err}, {"PathMatcher.TermsJSON", gotM, errM}} {
		if (r.err == nil) != (wantErr == nil) {
			t.Fatalf("%s(%q): error %v, Decode says %v", r.name, doc, r.err, wantErr)
		}
		if r.err != nil {
			if !errors.Is(r.err, ErrInvalidJSON) || r.err.Error() != wantErr.Error() {
				t.Fatalf("%s(%q): error %q, want Decode's %q", r.name, doc, r.err, wantErr)
			}
			if !slices.Equal(r.terms, prefix) {
				t.Fatalf("%s(%q) changed dst on error: %q", r.name, doc, r.terms)
			}
			continue
		}
		if !slices.Equal(r.terms, want) {
			t.Fatalf("%s(%q)\n got %q\nwant %q", r.name, doc, r.terms, want)
		}
	}
	checkEach(t, doc, m, want[len(prefix):], wantErr)
	if wantErr != nil {
		return nil
	}
	return want[len(prefix):]
}

// checkEach compares EachTermJSON with the reference's terms (want) or
// error: the same set of terms, each at least once.
func checkEach(t testing.TB, doc []byte, m *PathMatcher, want []Term, wantErr error) {
	t.Helper()
	var got []Term
	err := m.EachTermJSON(doc, func(path, key []byte) {
		got = append(got, Term{Path: string(path), Key: string(key)})
	})
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("EachTermJSON(%q): error %v, Decode says %v", doc, err, wantErr)
	}
	if err != nil {
		if len(got) > 0 {
			t.Fatalf("EachTermJSON(%q) called fn on invalid JSON: %q", doc, got)
		}
		return
	}
	slices.SortFunc(got, func(a, b Term) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	if got = slices.Compact(got); !slices.Equal(got, want) {
		t.Fatalf("EachTermJSON(%q)\n got %q\nwant %q", doc, got, want)
	}
}

func numKey(f float64) string {
	k, _ := Key(NumberValue(f))
	return k
}

func strKey(s string) string { return string(tagString) + s }

func TestTermsJSONCases(t *testing.T) {
	all := PathPolicy{}
	for _, tc := range []struct {
		name   string
		doc    string
		policy PathPolicy
		want   []Term // nil: compare with the reference only
	}{
		{"nested objects", `{"a":{"b":{"c":"x"}},"d":true}`, all,
			[]Term{{"/a/b/c", strKey("x")}, {"/d", string(tagTrue)}}},
		{"arrays of arrays", `{"m":[[1,2],[2,[null]]],"e":[]}`, all,
			[]Term{{"/m/[]/[]", numKey(1)}, {"/m/[]/[]", numKey(2)}, {"/m/[]/[]/[]", string(tagNull)}}},
		{"array of objects", `{"items":[{"sku":"A","qty":2},{"sku":"B","qty":2}]}`, all,
			[]Term{{"/items/[]/qty", numKey(2)}, {"/items/[]/sku", strKey("A")}, {"/items/[]/sku", strKey("B")}}},
		{"escaped names", `{"a/b":1,"q\"":2,"back\\":3,"":4,"[]":5,"*":6,"?":7}`, all,
			[]Term{{`/""`, numKey(4)}, {`/"*"`, numKey(6)}, {`/"?"`, numKey(7)}, {`/"[]"`, numKey(5)},
				{`/"a/b"`, numKey(1)}, {`/"back\\"`, numKey(3)}, {`/"q\""`, numKey(2)}}},
		{"unicode escapes", `{"\u00e9t\u00E9":"\ud83d\ude00 \u0041","\u002f":"\ud800x"}`, all,
			[]Term{{`/"/"`, strKey("\ufffdx")}, {"/été", strKey("😀 A")}}},
		{"invalid UTF-8", "{\"n\xff\":\"a\xc3\"}", all,
			[]Term{{"/n\ufffd", strKey("a\ufffd")}}},
		{"numbers", `{"a":1e300,"b":-0,"c":0,"d":1.0,"e":1,"f":-1.5e-3,"g":123456789012345678901}`, all,
			[]Term{{"/a", numKey(1e300)}, {"/b", numKey(0)}, {"/c", numKey(0)}, {"/d", numKey(1)}, {"/e", numKey(1)},
				{"/f", numKey(-1.5e-3)}, {"/g", numKey(123456789012345678901)}}},
		{"same key twice in an array", `{"t":["x","x",1,1.0]}`, all,
			[]Term{{"/t/[]", numKey(1)}, {"/t/[]", strKey("x")}}},
		{"duplicate keys: last wins", `{"a":{"x":1},"b":2,"a":3}`, all,
			[]Term{{"/a", numKey(3)}, {"/b", numKey(2)}}},
		{"duplicate keys spelled differently", `{"a":[1],"\u0061":{"y":null}}`, all,
			[]Term{{"/a/y", string(tagNull)}}},
		{"nested duplicate keys", `{"o":[{"k":1,"k":{"z":2}}]}`, all,
			[]Term{{"/o/[]/k/z", numKey(2)}}},
		{"excluded subtree", `{"a":{"b":1,"c":[2]},"d":3}`, PathPolicy{Excluded: []string{"/a/*"}},
			[]Term{{"/d", numKey(3)}}},
		{"included leaf under excluded subtree", `{"a":{"b":1,"c":[2]},"d":3}`,
			PathPolicy{Excluded: []string{"/a/*"}, Included: []string{"/*", "/a/c/[]/?"}},
			[]Term{{"/a/c/[]", numKey(2)}, {"/d", numKey(3)}}},
		{"duplicates in an excluded subtree", `{"a":{"b":1,"b":2},"d":3}`, PathPolicy{Excluded: []string{"/a/*"}},
			[]Term{{"/d", numKey(3)}}},
		{"only one path", `{"a":{"b":1,"c":2},"b":3}`, PathPolicy{Included: []string{"/a/b/?"}},
			[]Term{{"/a/b", numKey(1)}}},
		{"etag excluded", `{"_etag":"e","id":"i"}`, all, []Term{{"/id", strKey("i")}}},
		{"scalar document", `"just a string"`, all, []Term{}},
		{"array document", ` [1, {"a": "b"}] `, all, []Term{{"/[]", numKey(1)}, {"/[]/a", strKey("b")}}},
		{"whitespace", " \t\n{ \"a\" : [ 1 , 2 ] }\r\n", all, []Term{{"/a/[]", numKey(1)}, {"/a/[]", numKey(2)}}},
		{"many members with a late duplicate", manyMembers(40, true), all, nil},
		{"many members", manyMembers(40, false), all, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mustCompile(t, tc.policy)
			got := checkAgainstReference(t, []byte(tc.doc), m)
			if tc.want != nil && !slices.Equal(got, tc.want) {
				t.Fatalf("terms of %s\n got %q\nwant %q", tc.doc, got, tc.want)
			}
		})
	}
}

func manyMembers(n int, dup bool) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, `"k%d":{"v":%d},`, i, i)
	}
	if dup {
		b.WriteString(`"k7":"last",`)
	}
	b.WriteString(`"end":null}`)
	return b.String()
}

func TestTermsJSONInvalid(t *testing.T) {
	m := mustCompile(t, PathPolicy{Excluded: []string{"/x/*"}})
	for _, doc := range []string{
		``, ` `, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1 "b":2}`, `[1,]`, `[1 2]`, `{"a":[}`,
		`{"a":01}`, `{"a":-}`, `{"a":1.}`, `{"a":1e}`, `{"a":.5}`, `{"a":+1}`, `{"a":1e400}`, `{"x":-1e400}`,
		`{"x":` + strings.Repeat("9", 400) + `}`, `{"a":tru}`, `{"x":nul}`, `{"a":"\x01"}`, `{"x":"\x01"}`,
		`{"a":"\q"}`, `{"x":"\u12"}`, `{"a":"\u12g4"}`, `{"x":"\ud800\u12"}`, `{"a":"unterminated}`,
		`{"x":"unterminated\"}`, `{"a\x00":1}`, `{"a":1}{}`, `{"a":1} x`, `{1:2}`, `NaN`, `{"a":[1,2]]`,
		strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
		`{"x":` + strings.Repeat(`{"x":`, maxDepth) + `1` + strings.Repeat("}", maxDepth+1),
	} {
		checkAgainstReference(t, []byte(doc), m)
		if _, err := TermsJSON([]byte(doc), m.Indexed, nil); !errors.Is(err, ErrInvalidJSON) {
			t.Errorf("TermsJSON(%.40q): %v, want ErrInvalidJSON", doc, err)
		}
	}
	// The deepest accepted nesting is accepted.
	deep := strings.Repeat("[", maxDepth) + "1" + strings.Repeat("]", maxDepth)
	if got := checkAgainstReference(t, []byte(deep), m); len(got) != 1 {
		t.Fatalf("deepest document: %d terms, want 1", len(got))
	}
}

// TestTermsJSONScanner checks that the one-pass scanner itself takes every
// valid document without a repeated name (so that the Decode fallback is
// not what makes TermsJSON right) and no invalid one.
func TestTermsJSONScanner(t *testing.T) {
	for _, tc := range []struct {
		doc string
		ok  bool
	}{
		{`{"a":[1,{"b":"c"}],"d":null}`, true},
		{`{"a":1,"a":2}`, false},
		{`{"a":{"b":1,"c":2},"c":{"b":3}}`, true},
		{`{"a":1,}`, false},
		{manyMembers(30, false), true},
		{manyMembers(30, true), false},
	} {
		s := &termScanner{doc: []byte(tc.doc)}
		if got := s.scan(); got != tc.ok {
			t.Errorf("scan(%.50s) = %v, want %v", tc.doc, got, tc.ok)
		}
	}
}

func TestIndexedUnder(t *testing.T) {
	for _, tc := range []struct {
		policy PathPolicy
		prefix string
		want   bool
	}{
		{PathPolicy{}, "", true},
		{PathPolicy{}, "/a/b", true},
		{PathPolicy{}, `/"_etag"`, true}, // "?" rules exclude one path: no subtree is skipped for them
		{PathPolicy{Excluded: []string{"/a/*"}}, "/a", false},
		{PathPolicy{Excluded: []string{"/a/*"}}, "/a/b/[]", false},
		{PathPolicy{Excluded: []string{"/a/*"}}, "/ab", true},
		{PathPolicy{Excluded: []string{"/a/*"}}, "", true},
		{PathPolicy{Excluded: []string{"/a/*"}, Included: []string{"/*", "/a/b/?"}}, "/a", true},
		{PathPolicy{Excluded: []string{"/a/*"}, Included: []string{"/*", "/a/b/?"}}, "/a/b", true},
		{PathPolicy{Excluded: []string{"/a/*"}, Included: []string{"/*", "/a/b/?"}}, "/a/c", false},
		{PathPolicy{Excluded: []string{"/a/*"}, Included: []string{"/a/?"}}, "/a", true},  // "?" beats "*"
		{PathPolicy{Excluded: []string{"/a/*"}, Included: []string{"/a/*"}}, "/a", false}, // exclude wins a tie
		{PathPolicy{Included: []string{"/a/b/?"}}, "/a", true},
		{PathPolicy{Included: []string{"/a/b/?"}}, "/a/b", true},
		{PathPolicy{Included: []string{"/a/b/?"}}, "/a/c", false},
		{PathPolicy{Included: []string{"/a/b/?"}}, "/b", false},
		{PathPolicy{Included: []string{"/a/b/?"}}, "/a/b/c", false},
		{PathPolicy{Included: []string{`/"a/b"/*`}}, "/a", false},
		{PathPolicy{Included: []string{`/"a/b"/*`}}, `/"a/b"/c`, true},
		{PathPolicy{Included: []string{"/tags/[]/?"}}, "/tags/[]", true},
		{PathPolicy{Included: []string{"/tags/[]/?"}}, "/tags/[]/x", false},
	} {
		m := mustCompile(t, tc.policy)
		if got := m.IndexedUnder(tc.prefix); got != tc.want {
			t.Errorf("%+v: IndexedUnder(%q) = %v, want %v", tc.policy, tc.prefix, got, tc.want)
		}
		if got := indexedUnder(m, []byte(tc.prefix)); got != tc.want {
			t.Errorf("%+v: indexedUnder([]byte(%q)) = %v, want %v", tc.policy, tc.prefix, got, tc.want)
		}
		// The shortcut for policies that index under every prefix agrees
		// with the rules.
		if m.everywhere {
			slow := *m
			slow.everywhere = false
			if !slow.IndexedUnder(tc.prefix) {
				t.Errorf("%+v: everywhere, but the rules say nothing is indexed under %q", tc.policy, tc.prefix)
			}
		}
	}
	for _, p := range []PathPolicy{{}, {Excluded: []string{"/a/?"}}, {Included: []string{"/*", "/a/*"}}} {
		if !mustCompile(t, p).everywhere {
			t.Errorf("%+v: not everywhere", p)
		}
	}
	for _, p := range []PathPolicy{{Excluded: []string{"/a/*"}}, {Included: []string{"/a/*"}}} {
		if mustCompile(t, p).everywhere {
			t.Errorf("%+v: everywhere", p)
		}
	}
}

// docGen writes random JSON documents, valid or (rarely) not, that stress
// what TermsJSON must agree with Decode on.
type docGen struct {
	r *rand.Rand
	b []byte
}

var genNames = []string{"a", "b", "c", "tags", "", "[]", "*", "?", "a/b", `q"`, `back\`, "é", "_etag", "id", "😀"}

var genNumbers = []string{"0", "-0", "-0.0", "1", "1.0", "10E-1", "1e0", "2.5e3", "-7", "0.1", "1e300", "-1e-300",
	"1e-400", "123456789012345678", "999999999999999", "9007199254740993", "3.141592653589793238462643383279"}

func (g *docGen) doc() []byte {
	g.b = g.b[:0]
	g.value(0)
	if g.r.IntN(200) == 0 && len(g.b) > 0 {
		g.b = g.b[:g.r.IntN(len(g.b))] // truncated: invalid
	}
	if g.r.IntN(200) == 0 {
		g.b = append(g.b, `1e400`...)
	}
	return slices.Clone(g.b)
}

func (g *docGen) space() {
	if g.r.IntN(8) == 0 {
		g.b = append(g.b, " \t\n\r"[g.r.IntN(4)])
	}
}

func (g *docGen) value(depth int) {
	g.space()
	k := g.r.IntN(10)
	if depth == 0 {
		k = 9 - g.r.IntN(2) // mostly objects at the top
	}
	if depth > 4 && k >= 7 {
		k = 0
	}
	switch k {
	case 0, 1:
		g.str(g.word(), false)
	case 2, 3:
		g.b = append(g.b, genNumbers[g.r.IntN(len(genNumbers))]...)
	case 4:
		g.b = append(g.b, []string{"true", "false", "null"}[g.r.IntN(3)]...)
	case 5, 6:
		g.str(genNames[g.r.IntN(len(genNames))], false)
	case 7, 8:
		g.b = append(g.b, '[')
		for i := range g.r.IntN(4) {
			if i > 0 {
				g.b = append(g.b, ',')
			}
			g.value(depth + 1)
		}
		g.b = append(g.b, ']')
	default:
		g.b = append(g.b, '{')
		var used []string
		for i := range g.r.IntN(6) {
			if i > 0 {
				g.b = append(g.b, ',')
			}
			name := genNames[g.r.IntN(len(genNames))]
			if len(used) > 0 && g.r.IntN(8) == 0 {
				name = used[g.r.IntN(len(used))] // a repeated name
			}
			used = append(used, name)
			g.space()
			g.str(name, true)
			g.space()
			g.b = append(g.b, ':')
			g.value(depth + 1)
		}
		g.space()
		g.b = append(g.b, '}')
	}
	g.space()
}

func (g *docGen) word() string {
	words := []string{"x", "beta", "eu-west", "", "é", "😀", "\ud7ff", "a\"b", "c\\d", "tab\tnl\n", "\x01", "/"}
	return words[g.r.IntN(len(words))]
}

// str writes s as a JSON string, escaping characters at random; now and
// then with a lone surrogate or a byte of invalid UTF-8.
func (g *docGen) str(s string, name bool) {
	g.b = append(g.b, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			g.b = append(g.b, '\\', byte(c))
		case c < 0x20:
			g.b = fmt.Appendf(g.b, `\u%04x`, c)
		case g.r.IntN(4) == 0 && c > 0xffff:
			c -= 0x10000
			g.b = fmt.Appendf(g.b, `\u%04X\u%04x`, 0xd800+(c>>10), 0xdc00+(c&0x3ff))
		case g.r.IntN(4) == 0 && c <= 0xffff:
			g.b = fmt.Appendf(g.b, `\u%04x`, c)
		case c == '/' && g.r.IntN(2) == 0:
			g.b = append(g.b, `\/`...)
		default:
			g.b = utf8.AppendRune(g.b, c)
		}
	}
	switch g.r.IntN(40) {
	case 0:
		g.b = append(g.b, `\ud83d`...) // lone high surrogate
	case 1:
		g.b = append(g.b, 0xff)
	case 2:
		if !name {
			g.b = append(g.b, `\b\f\r\t`...)
		}
	}
	g.b = append(g.b, '"')
}

// randomPolicy returns a policy of random included and excluded paths over
// the names docGen uses.
func randomPolicy(r *rand.Rand) PathPolicy {
	path := func() string {
		var b strings.Builder
		n := r.IntN(4)
		for range n {
			b.WriteByte('/')
			if r.IntN(4) == 0 {
				b.WriteString("[]")
				continue
			}
			name := genNames[r.IntN(len(genNames))]
			if name == "" || name == "[]" || strings.ContainsAny(name, `/"\*?`) {
				b.WriteString(`"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(name) + `"`)
			} else {
				b.WriteString(name)
			}
		}
		if n > 0 && r.IntN(2) == 0 {
			b.WriteString("/?")
		} else {
			b.WriteString("/*")
		}
		return b.String()
	}
	var p PathPolicy
	for range r.IntN(4) {
		p.Included = append(p.Included, path())
	}
	for range r.IntN(4) {
		p.Excluded = append(p.Excluded, path())
	}
	return p
}

// scalarPaths calls f with the term path of every scalar of v and the
// term paths of the containers above it, root ("") first.
func scalarPaths(v Value, above []string, path []byte, f func(termPath string, above []string)) {
	switch v.Kind() {
	case Array:
		above = append(above, string(path))
		for _, e := range v.Elems() {
			scalarPaths(e, above, append(path, "/[]"...), f)
		}
	case Object:
		above = append(above, string(path))
		for _, m := range v.Members() {
			scalarPaths(m.Value, above, appendSegment(path, m.Key), f)
		}
	default:
		if len(path) > 0 {
			f(string(path), above)
		}
	}
}

func TestTermsJSONRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	g := &docGen{r: r}
	n := 4000
	if testing.Short() {
		n = 500
	}
	var valid, withTerms int
	for i := range n {
		p := PathPolicy{}
		if i%4 != 0 {
			p = randomPolicy(r)
		}
		m := mustCompile(t, p)
		doc := g.doc()
		terms := checkAgainstReference(t, doc, m)
		v, err := Decode(doc)
		if err != nil {
			continue
		}
		valid++
		if len(terms) > 0 {
			withTerms++
		}
		// IndexedUnder never hides an indexed path.
		scalarPaths(v, nil, nil, func(tp string, above []string) {
			if !m.Indexed(tp) {
				return
			}
			for _, a := range append(above, tp) {
				if !m.IndexedUnder(a) {
					t.Fatalf("policy %+v indexes %q but IndexedUnder(%q) is false", p, tp, a)
				}
			}
		})
	}
	// The generator must exercise what it is meant to.
	if valid < n*8/10 || withTerms < n/3 {
		t.Fatalf("generator: %d of %d documents valid, %d with terms", valid, n, withTerms)
	}
}

// fuzzPolicies are the policies FuzzTermsJSON picks from.
var fuzzPolicies = []PathPolicy{
	{},
	{Excluded: []string{"/a/*"}},
	{Included: []string{"/a/b/?", "/tags/[]/?"}},
	{Included: []string{"/*", "/a/[]/?"}, Excluded: []string{"/a/*", `/"a/b"/*`}},
}

// FuzzTermsJSON: TermsJSON never panics and agrees with Terms over Decode,
// terms and errors; the scanner takes every valid document unless it
// repeats a name. The seed corpus is in testdata/fuzz/FuzzTermsJSON.
func FuzzTermsJSON(f *testing.F) {
	for i, s := range []string{
		`{"a":{"b":1,"c":[2,"x"]},"tags":["t","\u00e9"],"a/b":null}`,
		`{"a":[1,{"b":2}],"a":{"b":3}}`,
		`{"\u0061":-0,"a":1.0}`,
		`[[1],[2,[3]]]`,
		`{"a":1e400}`,
	} {
		f.Add([]byte(s), uint8(i))
	}
	matchers := make([]*PathMatcher, len(fuzzPolicies))
	for i, p := range fuzzPolicies {
		matchers[i] = mustCompile(f, p)
	}
	f.Fuzz(func(t *testing.T, doc []byte, policy uint8) {
		m := matchers[int(policy)%len(matchers)]
		checkAgainstReference(t, doc, m)
		s := &termScanner{doc: doc}
		ok := s.scan()
		// A repeated name stops the scan before the end of the document.
		if _, err := Decode(doc); err == nil && !ok && !s.repeated || err != nil && ok {
			t.Fatalf("scan(%q) = %v (repeated name %v), Decode error %v", doc, ok, s.repeated, err)
		}
	})
}

// benchDocKiB is a ~1 KiB document with about ten scalar paths and a small
// array.
var benchDocKiB = []byte(`{"id":"order-000123","_ts":1700000000,"_etag":"\"0000d31c-0000-0700-0000-65f1c2a40000\"","ttl":3600,
"customer":{"name":"Ada Lovelace","email":"ada@example.com","tier":"gold"},"status":"shipped","total":1234.5,
"tags":["priority","gift","eu-west"],
"notes":"Leave the parcel with the concierge if nobody answers the door. The customer asked for recyclable packaging and no printed invoice; send the invoice by e-mail instead. Fragile: contains glassware, keep upright. Deliveries are accepted on weekdays between nine and five, and on Saturday mornings. Call ahead when the order is late by more than a day, and mention the order number, not the parcel number, which the customer does not know. Previous deliveries went to the wrong building twice: the entrance is on the side street. Gift wrapping was requested for two of the items; the card should read \"Happy birthday, with love from all of us\" and be signed by the team.",
"address":{"city":"London","zip":"NW1 6XE"}}`)

func BenchmarkTermsDecode(b *testing.B) {
	indexed := mustCompile(b, PathPolicy{}).Indexed
	b.SetBytes(int64(len(benchDocKiB)))
	var dst []Term
	for b.Loop() {
		v, err := Decode(benchDocKiB)
		if err != nil {
			b.Fatal(err)
		}
		dst = Terms(v, indexed, dst[:0])
	}
}

func BenchmarkTermsJSON(b *testing.B) {
	indexed := mustCompile(b, PathPolicy{}).Indexed
	b.SetBytes(int64(len(benchDocKiB)))
	var dst []Term
	var err error
	for b.Loop() {
		if dst, err = TermsJSON(benchDocKiB, indexed, dst[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTermsJSONMatcher(b *testing.B) {
	for _, bc := range []struct {
		name   string
		policy PathPolicy
	}{
		{"all", PathPolicy{}},
		{"narrow", PathPolicy{Included: []string{"/status/?", "/customer/tier/?"}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := mustCompile(b, bc.policy)
			b.SetBytes(int64(len(benchDocKiB)))
			var dst []Term
			var err error
			for b.Loop() {
				if dst, err = m.TermsJSON(benchDocKiB, dst[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEachTermJSON(b *testing.B) {
	m := mustCompile(b, PathPolicy{})
	b.SetBytes(int64(len(benchDocKiB)))
	n := 0
	for b.Loop() {
		if err := m.EachTermJSON(benchDocKiB, func(path, key []byte) { n++ }); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBenchDocKiB(t *testing.T) {
	// The benchmark document is what its comment says.
	if n := len(benchDocKiB); n < 900 || n > 1200 {
		t.Fatalf("benchDocKiB is %d bytes", n)
	}
	terms := checkAgainstReference(t, benchDocKiB, mustCompile(t, PathPolicy{}))
	paths := map[string]bool{}
	for _, tm := range terms {
		paths[tm.Path] = true
	}
	if len(paths) < 9 || len(paths) > 13 {
		t.Fatalf("benchDocKiB has %d scalar paths: %v", len(paths), paths)
	}
}

// TestTermsJSONNumbers: the scanner's fast path for short decimals gives
// exactly the float64 that Decode (strconv) gives.
func TestTermsJSONNumbers(t *testing.T) {
	m := mustCompile(t, PathPolicy{})
	r := rand.New(rand.NewPCG(7, 11))
	nums := []string{"0", "-0", "0.0", "-0.0", "0.1", "0.3", "1.5", "123456789012345", "1234567890123456",
		"0.000000000000001", "99999999999999.9", "9007199254740993", "1.00000000000001", "-3.14159265358979"}
	for range 20000 {
		digits := 1 + r.IntN(17)
		b := make([]byte, 0, 24)
		if r.IntN(2) == 0 {
			b = append(b, '-')
		}
		for d := range digits {
			c := byte('0' + r.IntN(10))
			if d == 0 && digits > 1 && c == '0' {
				c = '1'
			}
			b = append(b, c)
		}
		if dot := r.IntN(digits + 1); dot > 0 && dot < digits {
			k := len(b) - (digits - dot)
			b = append(b[:k], append([]byte{'.'}, b[k:]...)...)
		}
		nums = append(nums, string(b))
	}
	for _, n := range nums {
		checkAgainstReference(t, []byte(`{"a":`+n+`,"b":[`+n+`]}`), m)
	}
}
