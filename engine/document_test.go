package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ebbdb/ebb/engine/internal/docfmt"
	"github.com/ebbdb/ebb/policy"
)

type docCase struct {
	name string
	doc  string
	// For accepted documents:
	id   string
	ttl  int32
	body string // "" means: same as doc
	// For rejected documents:
	err  error  // the sentinel; nil means the document is accepted
	want string // a substring of the error message
}

func documentCases() []docCase {
	long := func(r string, n int) string { return strings.Repeat(r, n) }
	nested := func(n int) string { // n levels of arrays inside the document
		return `{"id":"a","x":` + long("[", n) + long("]", n) + `}`
	}
	many := func(n int, dupAt int) string {
		var b strings.Builder
		b.WriteString(`{"id":"a"`)
		for i := range n {
			k := i
			if i == dupAt {
				k = 3
			}
			fmt.Fprintf(&b, `,"k%d":%d`, k, i)
		}
		b.WriteString("}")
		return b.String()
	}
	exactMax := func() string {
		s := `{"id":"a","pad":"`
		return s + long("x", MaxDocumentSize-len(s)-2) + `"}`
	}
	const ttlMsg = " is invalid: ttl must be -1 (never expire) or an integer from 1 to 2147483647"

	return []docCase{
		// Accepted.
		{name: "minimal", doc: `{"id":"a"}`, id: "a"},
		{name: "whitespace dropped between top-level tokens, kept inside values",
			doc: " \t\r\n{ \"id\" : \"a\" ,\n \"x\" : [1, 2, {\"y\" : null}] , \"s\":\" spaced \" }\n ", id: "a",
			body: `{"id":"a","x":[1, 2, {"y" : null}],"s":" spaced "}`},
		{name: "all JSON types", doc: `{"s":"x","n":-1.5e+3,"t":true,"f":false,"z":null,"o":{},"a":[],"id":"a"}`, id: "a"},
		{name: "ttl 60", doc: `{"id":"a","ttl":60}`, id: "a", ttl: 60},
		{name: "ttl -1", doc: `{"ttl":-1,"id":"a"}`, id: "a", ttl: -1},
		{name: "ttl max", doc: `{"id":"a","ttl":2147483647}`, id: "a", ttl: policy.MaxTTL},
		{name: "ttl 1e3", doc: `{"id":"a","ttl":1e3}`, id: "a", ttl: 1000},
		{name: "ttl 10.0", doc: `{"id":"a","ttl":10.0}`, id: "a", ttl: 10},
		{name: "ttl only counts at the top level", doc: `{"id":"a","x":{"ttl":0,"id":5}}`, id: "a"},
		{name: "system properties stripped",
			doc:  `{"_ts":5,"id":"a","_etag":"\"x\"","_rid":"r","_self":"s","b":1,"_attachments":"at"}`,
			id:   "a",
			body: `{"id":"a","b":1}`},
		{name: "escaped system property name stripped", doc: `{"\u005fts":5,"id":"a"}`, id: "a", body: `{"id":"a"}`},
		{name: "system property last", doc: `{"id":"a","b":1,"_ts":5}`, id: "a", body: `{"id":"a","b":1}`},
		{name: "system property between members", doc: `{"id":"a","_rid":"r","b":[1, 2]}`, id: "a", body: `{"id":"a","b":[1, 2]}`},
		{name: "space after a later comma", doc: `{"id":"a","b":1, "c":{"d" : 2}}`, id: "a", body: `{"id":"a","b":1,"c":{"d" : 2}}`},
		{name: "space before a later colon", doc: `{"id":"a","b" :1,"c":2}`, id: "a", body: `{"id":"a","b":1,"c":2}`},
		{name: "space after a later colon", doc: `{"id":"a","b": 1,"c":2}`, id: "a", body: `{"id":"a","b":1,"c":2}`},
		{name: "space before a later comma", doc: `{"id":"a","b":1 ,"c":2}`, id: "a", body: `{"id":"a","b":1,"c":2}`},
		{name: "space before the closing brace", doc: `{"id":"a","b":1` + "\n}", id: "a", body: `{"id":"a","b":1}`},
		{name: "space around the object only", doc: " \t{\"id\":\"a\",\"b\":1}\r\n", id: "a", body: `{"id":"a","b":1}`},
		{name: "nested system properties kept", doc: `{"id":"a","x":{"_ts":1,"_etag":"e"}}`, id: "a"},
		{name: "other underscore names kept", doc: `{"id":"a","_lsn":1,"_ts2":2}`, id: "a"},
		{name: "unicode id", doc: `{"id":"日本語 ✓ 🎉"}`, id: "日本語 ✓ 🎉"},
		{name: "escaped id", doc: `{"id":"\u0061\u00e9\ud83c\udf89\u007f"}`, id: "aé🎉\x7f"},
		{name: "escaped id name", doc: `{"i\u0064":"a"}`, id: "a"},
		{name: "id of 255 ASCII characters", doc: `{"id":"` + long("a", 255) + `"}`, id: long("a", 255)},
		{name: "id of 255 two-byte characters", doc: `{"id":"` + long("é", 255) + `"}`, id: long("é", 255)},
		{name: "id of 255 escaped characters", doc: `{"id":"` + long(`\u00e9`, 255) + `"}`, id: long("é", 255)},
		{name: "id of 255 four-byte characters", doc: `{"id":"` + long("🎉", 255) + `"}`, id: long("🎉", 255)},
		{name: "id with spaces and punctuation", doc: `{"id":" a.b-c_d:e;f "}`, id: " a.b-c_d:e;f "},
		{name: "many members", doc: many(100, -1), id: "a"},
		{name: "nesting at the limit", doc: nested(maxNestingDepth - 1), id: "a"},
		{name: "exactly MaxDocumentSize", doc: exactMax(), id: "a"},
		{name: "escapes in values kept verbatim", doc: `{"id":"a","s":"\"\\\/\b\f\n\r\t\u0000\ud800\uDC00"}`, id: "a"},
		{name: "largest float64", doc: `{"id":"a","n":-1.7976931348623157e308,"m":1e-400,"z":0e99999}`, id: "a"},
		{name: "308 integer digits", doc: `{"id":"a","n":` + long("9", 308) + `}`, id: "a"},
		{name: "MaxDocumentSize not counting system properties and whitespace",
			doc: ` { "_ts" : 1 , "_etag":"\"e\"", ` + exactMax()[1:], id: "a", body: exactMax()},

		// Not a JSON object, or not JSON.
		{name: "empty", doc: ``, err: ErrInvalidDocument, want: "document: empty"},
		{name: "only whitespace", doc: " \n", err: ErrInvalidDocument, want: "document: empty"},
		{name: "array", doc: `[{"id":"a"}]`, err: ErrInvalidDocument, want: "must be a JSON object, not an array"},
		{name: "string", doc: `"a"`, err: ErrInvalidDocument, want: "not a string"},
		{name: "number", doc: `42`, err: ErrInvalidDocument, want: "not a number"},
		{name: "null", doc: `null`, err: ErrInvalidDocument, want: "not null"},
		{name: "boolean", doc: `true`, err: ErrInvalidDocument, want: "not a boolean"},
		{name: "garbage", doc: `hello`, err: ErrInvalidDocument, want: "invalid JSON at offset 0"},
		{name: "byte order mark", doc: "\ufeff{\"id\":\"a\"}", err: ErrInvalidDocument, want: "invalid JSON"},
		{name: "unterminated object", doc: `{"id":"a"`, err: ErrInvalidDocument, want: "invalid JSON"},
		{name: "unterminated string", doc: `{"id":"a`, err: ErrInvalidDocument, want: "unterminated string"},
		{name: "open brace", doc: `{`, err: ErrInvalidDocument, want: "invalid JSON at offset 1"},
		{name: "trailing garbage", doc: `{"id":"a"}x`, err: ErrInvalidDocument, want: "unexpected data after the top-level object"},
		{name: "two objects", doc: `{"id":"a"} {"id":"b"}`, err: ErrInvalidDocument, want: "after the top-level object"},
		{name: "trailing comma", doc: `{"id":"a",}`, err: ErrInvalidDocument, want: "expected a property name"},
		{name: "trailing comma in array", doc: `{"id":"a","x":[1,]}`, err: ErrInvalidDocument, want: "invalid JSON"},
		{name: "single quotes", doc: `{"id":'a'}`, err: ErrInvalidDocument, want: "invalid JSON"},
		{name: "bare name", doc: `{id:"a"}`, err: ErrInvalidDocument, want: "expected a property name"},
		{name: "missing colon", doc: `{"id" "a"}`, err: ErrInvalidDocument, want: "expected ':'"},
		{name: "missing comma", doc: `{"id":"a" "x":1}`, err: ErrInvalidDocument, want: "expected ',' or '}'"},
		{name: "mismatched brackets", doc: `{"id":"a","x":[1}`, err: ErrInvalidDocument, want: "invalid JSON"},
		{name: "leading zero", doc: `{"id":"a","x":01}`, err: ErrInvalidDocument, want: "invalid JSON"},
		{name: "bare minus", doc: `{"id":"a","x":-}`, err: ErrInvalidDocument, want: "invalid number"},
		{name: "dot without digits", doc: `{"id":"a","x":1.}`, err: ErrInvalidDocument, want: "invalid number"},
		{name: "exponent without digits", doc: `{"id":"a","x":1e}`, err: ErrInvalidDocument, want: "invalid number"},
		{name: "plus sign", doc: `{"id":"a","x":+1}`, err: ErrInvalidDocument, want: "invalid JSON"},
		{name: "NaN", doc: `{"id":"a","x":NaN}`, err: ErrInvalidDocument, want: "invalid JSON"},
		{name: "bad literal", doc: `{"id":"a","x":tru}`, err: ErrInvalidDocument, want: "invalid literal"},
		{name: "bad escape", doc: `{"id":"a","x":"\x"}`, err: ErrInvalidDocument, want: "invalid escape"},
		{name: "short unicode escape", doc: `{"id":"a","x":"\u12"}`, err: ErrInvalidDocument, want: `invalid \u escape`},
		{name: "control character in string", doc: "{\"id\":\"a\",\"x\":\"a\tb\"}", err: ErrInvalidDocument, want: "control character"},
		{name: "invalid UTF-8 in value", doc: "{\"id\":\"a\",\"x\":\"\xff\"}", err: ErrInvalidDocument, want: "invalid UTF-8"},
		{name: "invalid UTF-8 in name", doc: "{\"id\":\"a\",\"\xc3(\":1}", err: ErrInvalidDocument, want: "invalid UTF-8"},
		{name: "invalid UTF-8 in id", doc: "{\"id\":\"a\xed\xa0\x80\"}", err: ErrInvalidDocument, want: "invalid UTF-8"},
		{name: "nesting beyond the limit", doc: nested(maxNestingDepth), err: ErrInvalidDocument, want: "nest deeper than 128"},
		{name: "deep nesting, unbalanced", doc: `{"id":"a","x":` + long("[", 100000), err: ErrInvalidDocument, want: "nest deeper"},
		{name: "oversized", doc: exactMax()[:MaxDocumentSize-2] + `x"}`, err: ErrInvalidDocument, want: "2097153 bytes is larger than the maximum document size of 2097152 bytes"},
		{name: "oversized input", doc: long(" ", 2*MaxDocumentSize) + `{}`, err: ErrInvalidDocument, want: "4194306 bytes is larger than the maximum document size"},

		// Values JSON's grammar allows that no reader could decode, or
		// that decoders would merge.
		{name: "number beyond float64", doc: `{"id":"big","n":1e400}`, err: ErrInvalidDocument, want: "number 1e400 is out of range (beyond ±1.8e308, the float64 range) at /n (offset 16)"},
		{name: "negative number beyond float64, nested", doc: `{"id":"a","x":{"y/z":[1,{"w":-2E+308}]}}`, err: ErrInvalidDocument, want: "number -2E+308 is out of range (beyond ±1.8e308, the float64 range) at /x/y~1z/1/w"},
		{name: "309 integer digits beyond float64", doc: `{"id":"a","n":` + long("9", 309) + `}`, err: ErrInvalidDocument, want: "is out of range"},
		{name: "unpaired high surrogate in id", doc: `{"id":"a\ud800b"}`, err: ErrInvalidDocument, want: `unpaired surrogate \ud800 in a string at /id`},
		{name: "unpaired low surrogate", doc: `{"id":"a","s":["\uDC00"]}`, err: ErrInvalidDocument, want: `unpaired surrogate \uDC00 in a string at /s/0`},
		{name: "high surrogate then a non-surrogate", doc: `{"id":"a","s":"\ud800\u0041"}`, err: ErrInvalidDocument, want: `unpaired surrogate \ud800`},
		{name: "reversed surrogates", doc: `{"id":"a","s":"\udc00\ud800"}`, err: ErrInvalidDocument, want: `unpaired surrogate \udc00`},
		{name: "unpaired surrogate in a name", doc: `{"id":"a","x":{"\ud800":1}}`, err: ErrInvalidDocument, want: `unpaired surrogate \ud800 in a string at /x`},
		{name: "high surrogate then a bad escape", doc: `{"id":"a","s":"\ud800\u12"}`, err: ErrInvalidDocument, want: `invalid JSON at offset 21: invalid \u escape`},
		{name: "control character in id", doc: `{"id":"a\u0000b"}`, err: ErrInvalidDocument, want: `id "a\x00b" must not contain control character U+0000`},
		{name: "newline in id", doc: `{"id":"a\n"}`, err: ErrInvalidDocument, want: `id "a\n" must not contain control character U+000A`},

		// id.
		{name: "missing id", doc: `{"x":1}`, err: ErrInvalidDocument, want: `document: "id" must be a non-empty string (it is missing)`},
		{name: "empty object", doc: `{}`, err: ErrInvalidDocument, want: `"id" must be a non-empty string (it is missing)`},
		{name: "id number", doc: `{"id":1}`, err: ErrInvalidDocument, want: `"id" must be a non-empty string (it is a number)`},
		{name: "id null", doc: `{"id":null}`, err: ErrInvalidDocument, want: `(it is null)`},
		{name: "id object", doc: `{"id":{"a":1}}`, err: ErrInvalidDocument, want: `(it is an object)`},
		{name: "id array", doc: `{"id":["a"]}`, err: ErrInvalidDocument, want: `(it is an array)`},
		{name: "id boolean", doc: `{"id":true}`, err: ErrInvalidDocument, want: `(it is a boolean)`},
		{name: "empty id", doc: `{"id":""}`, err: ErrInvalidDocument, want: `document: "id" must be a non-empty string (it is empty)`},
		{name: "id with /", doc: `{"id":"a/b"}`, err: ErrInvalidDocument, want: `document: id "a/b" must not contain '/'`},
		{name: "id with \\", doc: `{"id":"a\\b"}`, err: ErrInvalidDocument, want: `id "a\\b" must not contain '\\'`},
		{name: "id with ?", doc: `{"id":"a?b"}`, err: ErrInvalidDocument, want: `id "a?b" must not contain '?'`},
		{name: "id with #", doc: `{"id":"#"}`, err: ErrInvalidDocument, want: `id "#" must not contain '#'`},
		{name: "id with escaped /", doc: `{"id":"a\u002fb"}`, err: ErrInvalidDocument, want: `must not contain '/'`},
		{name: "id with escaped solidus", doc: `{"id":"a\/b"}`, err: ErrInvalidDocument, want: `must not contain '/'`},
		{name: "id of 256 characters", doc: `{"id":"` + long("a", 256) + `"}`, err: ErrInvalidDocument, want: "is 256 characters long, longer than the maximum of 255"},
		{name: "id of 256 two-byte characters", doc: `{"id":"` + long("é", 256) + `"}`, err: ErrInvalidDocument, want: "is 256 characters long"},
		{name: "id of 256 escaped characters", doc: `{"id":"` + long(`\u0062`, 256) + `"}`, err: ErrInvalidDocument, want: "is 256 characters long"},

		// Duplicate names.
		{name: "duplicate id", doc: `{"id":"a","id":"b"}`, err: ErrInvalidDocument, want: `document: duplicate property "id"`},
		{name: "duplicate member", doc: `{"id":"a","x":1,"y":2,"x":3}`, err: ErrInvalidDocument, want: `duplicate property "x"`},
		{name: "duplicate through an escape", doc: `{"id":"a","x":1,"\u0078":2}`, err: ErrInvalidDocument, want: `duplicate property "x"`},
		{name: "duplicate system property", doc: `{"_ts":1,"id":"a","_ts":2}`, err: ErrInvalidDocument, want: `duplicate property "_ts"`},
		{name: "duplicate ttl", doc: `{"id":"a","ttl":5,"ttl":6}`, err: ErrInvalidDocument, want: `duplicate property "ttl"`},
		{name: "duplicate among many members", doc: many(100, 70), err: ErrInvalidDocument, want: `duplicate property "k3"`},
		{name: "duplicate past the linear search", doc: many(40, 39), err: ErrInvalidDocument, want: `duplicate property "k3"`},
		{name: "nested duplicates are not checked", doc: `{"id":"a","x":{"y":1,"y":2}}`, id: "a"},
		{name: "invalid JSON reported before duplicates", doc: `{"id":"a","id":"b",`, err: ErrInvalidDocument, want: "invalid JSON"},

		// ttl.
		{name: "ttl 0", doc: `{"id":"a","ttl":0}`, err: ErrInvalidTTL, want: `item "a": ttl 0` + ttlMsg},
		{name: "ttl null", doc: `{"id":"a","ttl":null}`, err: ErrInvalidTTL, want: `item "a": ttl null` + ttlMsg},
		{name: "ttl string", doc: `{"id":"a","ttl":"10"}`, err: ErrInvalidTTL, want: `item "a": ttl "10"` + ttlMsg},
		{name: "ttl fractional", doc: `{"id":"a","ttl":1.5}`, err: ErrInvalidTTL, want: `ttl 1.5 is invalid`},
		{name: "ttl -2", doc: `{"id":"a","ttl":-2}`, err: ErrInvalidTTL, want: `ttl -2 is invalid`},
		{name: "ttl too large", doc: `{"id":"a","ttl":2147483648}`, err: ErrInvalidTTL, want: `ttl 2147483648 is invalid`},
		{name: "ttl boolean", doc: `{"id":"a","ttl":true}`, err: ErrInvalidTTL, want: `ttl true is invalid`},
		{name: "ttl object", doc: `{"ttl":{"x":1},"id":"a"}`, err: ErrInvalidTTL, want: `item "a": ttl {"x":1} is invalid`},
		{name: "ttl array", doc: `{"id":"a","ttl":[]}`, err: ErrInvalidTTL, want: `ttl [] is invalid`},
		{name: "id errors come before ttl errors", doc: `{"ttl":0}`, err: ErrInvalidDocument, want: `"id" must be a non-empty string`},
	}
}

func TestParseDocument(t *testing.T) {
	for _, c := range documentCases() {
		t.Run(c.name, func(t *testing.T) {
			in := []byte(c.doc)
			orig := bytes.Clone(in)
			d, err := parseDocument(in)
			if !bytes.Equal(in, orig) {
				t.Fatal("parseDocument modified its input")
			}
			if c.err != nil {
				if err == nil {
					t.Fatalf("accepted (id %q, ttl %d), want an error wrapping %v", d.ID, d.TTL, c.err)
				}
				if !errors.Is(err, c.err) {
					t.Errorf("error %q does not wrap %v", err, c.err)
				}
				if c.err == ErrInvalidTTL && errors.Is(err, ErrInvalidDocument) {
					t.Errorf("ttl error %q also wraps ErrInvalidDocument", err)
				}
				if !strings.Contains(err.Error(), c.want) {
					t.Errorf("error\n  %s\ndoes not contain\n  %s", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if !json.Valid(in) {
				t.Fatal("test case is not valid JSON")
			}
			if d.ID != c.id || d.TTL != c.ttl {
				t.Errorf("got id %q ttl %d, want id %q ttl %d", d.ID, d.TTL, c.id, c.ttl)
			}
			want := c.body
			if want == "" {
				want = c.doc
			}
			if string(d.Body) != want {
				t.Errorf("body\n got %.200s\nwant %.200s", d.Body, want)
			}
			if len(in) > 0 && &d.Body[:1][0] == &in[0] {
				t.Error("body aliases the input")
			}
		})
	}
}

// TestParseDocumentAgreesWithEncodingJSON: whatever encoding/json finds
// invalid, parseDocument rejects too.
func TestParseDocumentAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range documentCases() {
		if !json.Valid([]byte(c.doc)) {
			if _, err := parseDocument([]byte(c.doc)); err == nil {
				t.Errorf("%s: accepted what encoding/json calls invalid", c.name)
			}
		}
	}
}

func TestValidateID(t *testing.T) {
	for _, id := range []string{"a", "A-b_c.d", " ", "日本", strings.Repeat("x", 255), strings.Repeat("🎉", 255), "a\x7fb", "\u2028"} {
		if err := validateID(id); err != nil {
			t.Errorf("validateID(%q) = %v", id, err)
		}
	}
	for _, c := range []struct{ id, want string }{
		{"", "id must be a non-empty string"},
		{"a/b", `id "a/b" must not contain '/'`},
		{`a\b`, `id "a\\b" must not contain '\\'`},
		{"a?", `id "a?" must not contain '?'`},
		{"#a", `id "#a" must not contain '#'`},
		{strings.Repeat("x", 256), "is 256 characters long, longer than the maximum of 255"},
		{strings.Repeat("é", 300), "is 300 characters long"},
		{"a\xffb", `id "a\xffb" is not valid UTF-8`},
		{"a\x00b", `id "a\x00b" must not contain control character U+0000`},
		{"\x1f", `id "\x1f" must not contain control character U+001F`},
		{"a\tb", `id "a\tb" must not contain control character U+0009`},
		{strings.Repeat("y", 500) + "/", `id "` + strings.Repeat("y", 40) + `"... must not contain '/'`},
	} {
		err := validateID(c.id)
		if err == nil || !errors.Is(err, ErrInvalidDocument) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("validateID(%.50q) = %v, want an ErrInvalidDocument containing %q", c.id, err, c.want)
		}
	}
}

func TestRenderBody(t *testing.T) {
	for _, c := range []struct {
		stored string
		ts     int64
		etag   string
		want   string
	}{
		{`{"id":"a"}`, 1700000000, "e1", `{"_ts":1700000000,"_etag":"e1","id":"a"}`},
		{`{}`, 0, "", `{"_ts":0,"_etag":""}`},
		{` { } `, 5, "x", `{"_ts":5,"_etag":"x"}`},
		{"{\n\"id\":\"a\"}", 5, "x", `{"_ts":5,"_etag":"x","id":"a"}`},
		{`{"id":"a","n":[1,2]}`, -1, `"0000-1"`, `{"_ts":-1,"_etag":"\"0000-1\"","id":"a","n":[1,2]}`},
		{`{"id":"a"}`, 1<<63 - 1, "a\\b\n\x01\t\r\u00e9\xff\"", `{"_ts":9223372036854775807,"_etag":"a\\b\n\u0001\t\r` + "\u00e9" + `\ufffd\"","id":"a"}`},
	} {
		got := docfmt.Render(nil, []byte(c.stored), c.ts, c.etag)
		if string(got) != c.want {
			t.Errorf("docfmt.Render(%q, %d, %q)\n got %s\nwant %s", c.stored, c.ts, c.etag, got, c.want)
		}
		if !json.Valid(got) {
			t.Errorf("docfmt.Render(%q): invalid JSON %s", c.stored, got)
		}
	}
	// dst is appended to.
	got := docfmt.Render([]byte("prefix:"), []byte(`{"id":"a"}`), 1, "e")
	if string(got) != `prefix:{"_ts":1,"_etag":"e","id":"a"}` {
		t.Errorf("append to dst: %s", got)
	}
}

// TestRenderRoundTrip parses every accepted case, renders it and decodes the
// result with encoding/json: the system properties are there, id and ttl are
// intact, every other member is the input's.
func TestRenderRoundTrip(t *testing.T) {
	etags := []string{"0", `"00000000-0000-0000-9f3a-5c7ed03e0000"`, "ctl\x00\x1f", "\u00e9\u2028"}
	for _, c := range documentCases() {
		if c.err != nil {
			continue
		}
		d, err := parseDocument([]byte(c.doc))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for i, etag := range etags {
			if i > 0 && len(c.doc) > 64<<10 {
				break // one pass is enough for the big ones
			}
			ts := int64(1_700_000_000 + i)
			out := docfmt.Render(nil, d.Body, ts, etag)
			if err := checkRendered(out, d, ts, etag); err != nil {
				t.Errorf("%s: %v\n%.300s", c.name, err, out)
			}
			// Members other than system properties are the input's.
			var in, got map[string]json.RawMessage
			if err := json.Unmarshal([]byte(c.doc), &in); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			for k, v := range in {
				if isSystemProperty([]byte(k)) {
					continue
				}
				if !jsonEqual(v, got[k]) {
					t.Errorf("%s: member %q: got %.100s, want %.100s", c.name, k, got[k], v)
				}
				delete(got, k)
			}
			delete(got, "_ts")
			delete(got, "_etag")
			if len(got) != 0 {
				t.Errorf("%s: extra members %v", c.name, got)
			}
		}
	}
}

// checkRendered verifies a rendered body: valid JSON, an object without
// duplicate names, _ts and _etag as given, id and ttl as parsed, and that it
// parses back to the same document.
func checkRendered(out []byte, d parsedDoc, ts int64, etag string) error {
	if !json.Valid(out) {
		return errors.New("rendered body is not valid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("rendered body is not an object: %v %v", tok, err)
	}
	m := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		k := tok.(string)
		if _, ok := m[k]; ok {
			return fmt.Errorf("duplicate member %q", k)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		m[k] = v
	}
	if string(m["_ts"]) != strconv.FormatInt(ts, 10) {
		return fmt.Errorf("_ts is %s, want %d", m["_ts"], ts)
	}
	var gotETag string
	if err := json.Unmarshal(m["_etag"], &gotETag); err != nil || gotETag != string([]rune(etag)) /* each invalid byte becomes U+FFFD */ {
		return fmt.Errorf("_etag is %s (%v), want %q", m["_etag"], err, etag)
	}
	var id string
	if err := json.Unmarshal(m["id"], &id); err != nil || id != d.ID {
		return fmt.Errorf("id is %s (%v), want %q", m["id"], err, d.ID)
	}
	if raw, ok := m["ttl"]; ok != (d.TTL != 0) {
		return fmt.Errorf("ttl member present=%v, parsed ttl %d", ok, d.TTL)
	} else if ok {
		if v, err := policy.ParseItemTTL(raw); err != nil || v != d.TTL {
			return fmt.Errorf("ttl is %s, want %d", raw, d.TTL)
		}
	}
	for _, k := range []string{"_rid", "_self", "_attachments"} {
		if _, ok := m[k]; ok {
			return fmt.Errorf("system property %s survived", k)
		}
	}
	// Writing a rendered body back gives the same stored document (unless
	// the system properties pushed it over the size limit).
	if len(out) > MaxDocumentSize {
		return nil
	}
	d2, err := parseDocument(out)
	if err != nil {
		return fmt.Errorf("rendered body does not parse back: %v", err)
	}
	if d2.ID != d.ID || d2.TTL != d.TTL || !bytes.Equal(d2.Body, d.Body) {
		return fmt.Errorf("parses back to id %q ttl %d body %.100s", d2.ID, d2.TTL, d2.Body)
	}
	return nil
}

func jsonEqual(a, b []byte) bool {
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return false
	}
	return bytes.Equal(x.Bytes(), y.Bytes())
}

// benchDoc is a document of about 1 KiB in the shape of a typical session or
// profile item.
var benchDoc = func() []byte {
	doc := `{"id":"user-7f3a9c2e-4b1d-4e8a-9f6b-2c5d8e1a3b7c","ttl":3600,"type":"session",` +
		`"user":{"name":"Ada Lovelace","email":"ada@example.com","age":36,"verified":true,` +
		`"address":{"street":"12 St James's Square","city":"London","zip":"SW1Y 4JH","geo":[51.5074,-0.1278]}},` +
		`"roles":["admin","editor","viewer"],"scores":[98.5,87.25,91,100,73.5,88],` +
		`"created":"2024-11-22T10:15:30Z","lastSeen":1732270530,"flags":{"beta":false,"darkMode":true,"locale":"en-GB"},` +
		`"cart":[{"sku":"A-1001","qty":2,"price":19.99},{"sku":"B-2002","qty":1,"price":5.49},{"sku":"C-3003","qty":4,"price":0.99}],` +
		`"note":"Caf\u00e9 visit \u2014 remember to follow up on the analytical engine proposal; résumé attached.",`
	pad := 1024 - len(doc) - len(`"pad":""}`)
	return []byte(doc + `"pad":"` + strings.Repeat("x", pad) + `"}`)
}()

func BenchmarkParseDocument(b *testing.B) {
	if len(benchDoc) != 1024 || !utf8.Valid(benchDoc) {
		b.Fatalf("bench doc is %d bytes", len(benchDoc))
	}
	b.Run("parseDocument", func(b *testing.B) {
		b.SetBytes(int64(len(benchDoc)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parseDocument(benchDoc); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Baselines for comparison: validation alone with encoding/json, and a
	// full decode into a map.
	b.Run("json.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(benchDoc)))
		b.ReportAllocs()
		for b.Loop() {
			if !json.Valid(benchDoc) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("json.Unmarshal-map", func(b *testing.B) {
		b.SetBytes(int64(len(benchDoc)))
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(benchDoc, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkRenderBody(b *testing.B) {
	d, err := parseDocument(benchDoc)
	if err != nil {
		b.Fatal(err)
	}
	const etag = `"00000000-0000-0000-9f3a-5c7ed03e0000"`
	b.Run("new", func(b *testing.B) {
		b.SetBytes(int64(len(d.Body)))
		b.ReportAllocs()
		for b.Loop() {
			_ = docfmt.Render(nil, d.Body, 1732270530, etag)
		}
	})
	b.Run("reuse", func(b *testing.B) {
		b.SetBytes(int64(len(d.Body)))
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = docfmt.Render(buf[:0], d.Body, 1732270530, etag)
		}
	})
}
