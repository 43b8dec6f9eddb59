package query

import (
	"strings"
	"testing"
)

// evalDocs is the fixed document set of the evaluation tests.
var evalDocs = []string{
	`{"id":"a","n":1,"s":"apple","b":true,"tags":["x","y"],"o":{"k":1},"arr":[1,2]}`,
	`{"id":"b","n":2.5,"s":"banana","b":false,"tags":["y"],"nested":{"a":{"b":"deep"}},"a b":"space"}`,
	`{"id":"c","n":-3,"s":"Apple","tags":[],"nul":null}`,
	`{"id":"d","n":"10","s":5,"arr":[1,2],"o":{"k":1}}`,
	`{"id":"e","n":null,"tags":["x",{"k":"v"}],"s":"ab"}`,
	`{"id":"f"}`,
	`{"id":"g","n":10,"s":"","b":true,"o":{"k":2,"j":1},"arr":[1]}`,
}

func decodeAll(t testing.TB, docs []string) []Value {
	t.Helper()
	out := make([]Value, len(docs))
	for i, d := range docs {
		v, err := Decode([]byte(d))
		if err != nil {
			t.Fatalf("Decode(%s): %v", d, err)
		}
		out[i] = v
	}
	return out
}

// runQuery parses, binds and runs sql over docs, returning the results as
// JSON joined by spaces.
func runQuery(t *testing.T, docs []Value, sql string, params map[string]Value) string {
	t.Helper()
	q, err := Parse(sql)
	if err != nil {
		t.Fatalf("Parse(%q): %v", sql, err)
	}
	b, err := q.Bind(params)
	if err != nil {
		t.Fatalf("Bind(%q): %v", sql, err)
	}
	var parts []string
	for _, v := range b.Run(docs) {
		parts = append(parts, v.String())
	}
	return strings.Join(parts, " ")
}

func TestEvalWhere(t *testing.T) {
	docs := decodeAll(t, evalDocs)
	for _, tc := range []struct{ where, ids string }{
		// Equality and comparison: undefined across kinds.
		{"c.n = 1", "a"},
		{"c.n != 1", "b c g"},
		{"c.n <> 1", "b c g"},
		{"c.n < 2.5", "a c"},
		{"c.n <= 2.5", "a b c"},
		{"c.n > 2.5", "g"},
		{"c.n >= -3", "a b c g"},
		{"1 = c.n", "a"},
		{"2.5 > c.n", "a c"},
		{"c.s > 'B'", "a b e"},
		{"c.s < 'apple'", "c e g"},
		{"c.n > '1'", "d"},
		{"c.n = null", "e"},
		{"c.nul = null", "c"},
		{"c.nul <= null", "c"},
		{"c.nul < null", ""},
		{"c.b = true", "a g"},
		{"c.b", "a g"},
		{"c.b > false", "a g"},
		{"c.b < true", "b"},
		{"c.n", ""},
		{"c.missing = c.missing", ""},
		{"c.n = c.n", "a b c d e g"},
		// Arrays and objects: deep = and !=, no ranges.
		{"c.arr = [1,2]", "a d"},
		{"c.arr != [1,2]", "g"},
		{"c.o = {\"k\":1}", "a d"},
		{"c.o = {\"j\":1,\"k\":2}", "g"},
		{"c.arr < [1,3]", ""},
		{"c.o >= c.o", ""},
		// Three-valued logic.
		{"NOT c.b", "b"},
		{"NOT (c.n = 1)", "b c g"},
		{"c.missing = 1 OR c.n = 1", "a"},
		{"NOT (c.missing = 1 OR c.n = 1)", ""},
		{"c.missing = 1 AND c.n = 1", ""},
		{"NOT (c.missing = 1 AND c.n = 2.5)", "a c g"},
		{"c.b AND c.n = 1", "a"},
		{"c.b OR c.n = -3", "a c g"},
		{"NOT NOT c.b", "a g"},
		{"c.s AND true", ""},
		// IN, NOT IN, BETWEEN.
		{"c.n IN (1, 10, 'x')", "a g"},
		{"c.n NOT IN (1, 10)", "b c d e"},
		{"c.n NOT IN (1, '10')", "b c e g"},
		{"c.missing NOT IN (1)", ""},
		{"c.id IN ('a')", "a"},
		{"c.arr IN ([1], [9])", "g"},
		{"c.n BETWEEN 1 AND 2.5", "a b"},
		{"c.n NOT BETWEEN 1 AND 2.5", "c g"},
		// Functions.
		{"IS_DEFINED(c.nul)", "c"},
		{"IS_DEFINED(c.b)", "a b g"},
		{"NOT IS_DEFINED(c.b)", "c d e f"},
		{"IS_NULL(c.n)", "e"},
		{"IS_STRING(c.n)", "d"},
		{"IS_NUMBER(c.s)", "d"},
		{"IS_ARRAY(c.tags) AND IS_OBJECT(c.o)", "a"},
		{"IS_BOOL(c.b) AND IS_PRIMITIVE(c.s)", "a b g"},
		{"STARTSWITH(c.s, 'a')", "a e"},
		{"STARTSWITH(c.s, 'A', true)", "a c e"},
		{"STARTSWITH(c.s, 'A', false)", "c"},
		{"STARTSWITH(c.s, '')", "a b c e g"},
		{"STARTSWITH(c.n, '1')", "d"},
		{"ENDSWITH(c.s, 'LE', true)", "a c"},
		{"CONTAINS(c.s, 'an')", "b"},
		{"CONTAINS(c.s, 'PP', true)", "a c"},
		{"ARRAY_CONTAINS(c.tags, 'x')", "a e"},
		{"ARRAY_CONTAINS(c.tags, {\"k\":\"v\"})", "e"},
		{"ARRAY_CONTAINS(c.tags, {}, true)", "e"},
		{"ARRAY_CONTAINS(c.tags, {})", ""},
		{"ARRAY_LENGTH(c.tags) = 0", "c"},
		{"LENGTH(c.s) = 5", "a c"},
		{"LOWER(c.s) = 'apple'", "a c"},
		{"UPPER(c.s) = 'AB'", "e"},
		// Paths.
		{"c.nested.a.b = 'deep'", "b"},
		{`c["a b"] = 'space'`, "b"},
		{`c["nested"]["a"].b = "deep"`, "b"},
		{"c.arr[1] = 2", "a d"},
		{"c.tags[0] = 'x'", "a e"},
		{"c.tags[5] = 'x'", ""},
		{"c.o.k = 2", "g"},
		{"c.s.x = 1", ""},
	} {
		got := runQuery(t, docs, "SELECT VALUE c.id FROM c WHERE "+tc.where, nil)
		want := quoteIDs(tc.ids)
		if got != want {
			t.Errorf("WHERE %s: got %s, want %s", tc.where, got, want)
		}
	}
}

// quoteIDs turns "a b" into `"a" "b"`.
func quoteIDs(ids string) string {
	var parts []string
	for _, id := range strings.Fields(ids) {
		parts = append(parts, `"`+id+`"`)
	}
	return strings.Join(parts, " ")
}

func TestEvalQueries(t *testing.T) {
	docs := decodeAll(t, evalDocs)
	num := NumberValue
	for _, tc := range []struct {
		sql    string
		params map[string]Value
		want   string
	}{
		// ORDER BY across kinds: undefined < null < numbers < strings, ties by id.
		{"SELECT VALUE c.id FROM c ORDER BY c.n", nil, quoteIDs("f e c a b g d")},
		{"SELECT VALUE c.id FROM c ORDER BY c.n DESC", nil, quoteIDs("d g b a c e f")},
		{"SELECT VALUE c.id FROM c ORDER BY c.b", nil, quoteIDs("c d e f b a g")},
		{"SELECT VALUE c.id FROM c ORDER BY c.b DESC", nil, quoteIDs("a g b c d e f")},
		{"SELECT VALUE c.id FROM c ORDER BY c.o", nil, quoteIDs("b c e f g a d")},
		{"SELECT VALUE c.id FROM c ORDER BY c.s ASC", nil, quoteIDs("f d g c e a b")},
		{"SELECT VALUE c.id FROM c ORDER BY c.arr", nil, quoteIDs("b c e f g a d")},
		{"SELECT VALUE c.id FROM c ORDER BY c.tags[0]", nil, quoteIDs("c d f g a e b")},
		// Projections.
		{"SELECT c.id, c.n AS x, c.nested.a.b FROM c WHERE c.id IN ('b','f')", nil, `{"id":"b","x":2.5,"b":"deep"} {"id":"f"}`},
		{"SELECT VALUE c.b FROM c", nil, "true false true"},
		{"SELECT * FROM c WHERE c.id = 'f'", nil, `{"id":"f"}`},
		{"SELECT c.arr[0], c.tags[1] FROM c WHERE c.id = 'a'", nil, `{"$1":1,"$2":"y"}`},
		{"SELECT c.missing FROM c WHERE c.id = 'a'", nil, `{}`},
		{`SELECT VALUE {"id": c.id, "t": c.tags, "m": c.missing} FROM c WHERE c.id = 'c'`, nil, `{"id":"c","t":[]}`},
		{"SELECT c FROM c WHERE c.id = 'f'", nil, `{"c":{"id":"f"}}`},
		{"SELECT VALUE [1, c.missing, 'x'] FROM c WHERE c.id = 'f'", nil, `[1,"x"]`},
		{"SELECT VALUE LENGTH(c.s) FROM c", nil, "5 6 5 2 0"},
		// TOP, OFFSET/LIMIT (after ORDER BY; they count emitted results).
		{"SELECT TOP 2 VALUE c.id FROM c ORDER BY c.id DESC", nil, quoteIDs("g f")},
		{"SELECT VALUE c.id FROM c ORDER BY c.id OFFSET 2 LIMIT 3", nil, quoteIDs("c d e")},
		{"SELECT VALUE c.id FROM c OFFSET 10 LIMIT 1", nil, ""},
		{"SELECT TOP 0 * FROM c", nil, ""},
		{"SELECT TOP 2 VALUE c.b FROM c", nil, "true false"},
		{"SELECT VALUE c.b FROM c OFFSET 1 LIMIT 5", nil, "false true"},
		{"SELECT TOP @n VALUE c.id FROM c", map[string]Value{"@n": num(1)}, quoteIDs("a")},
		{"SELECT VALUE c.id FROM c OFFSET @o LIMIT @l", map[string]Value{"@o": num(5), "@l": num(9)}, quoteIDs("f g")},
		// COUNT.
		{"SELECT VALUE COUNT(1) FROM c", nil, "7"},
		{"SELECT VALUE COUNT(c) FROM c WHERE c.missing = 1", nil, "0"},
		{"SELECT VALUE COUNT(c.b) FROM c", nil, "3"},
		{"SELECT COUNT(1) AS n FROM c WHERE c.n > 0", nil, `{"n":3}`},
		{"SELECT COUNT(c.tags) FROM c", nil, `{"$1":4}`},
		// Parameters.
		{"SELECT VALUE c.id FROM c WHERE c.n = @v", map[string]Value{"@v": num(2.5)}, quoteIDs("b")},
		{"SELECT VALUE c.id FROM c WHERE c.o = @o", map[string]Value{"@o": mustDecode(t, `{"k":1}`)}, quoteIDs("a d")},
		{"SELECT VALUE c.id FROM c WHERE c.n IN (@a, @b)", map[string]Value{"@a": num(-3), "@b": num(10)}, quoteIDs("c g")},
		{"SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(@list, c.id)", map[string]Value{"@list": mustDecode(t, `["e","a","zz"]`)}, quoteIDs("a e")},
		{"SELECT VALUE c.id FROM c WHERE c.n = @u", map[string]Value{"@u": {}}, ""},
		{"SELECT VALUE @p FROM c WHERE c.id = 'a'", map[string]Value{"@p": StringValue("k")}, `"k"`},
	} {
		if got := runQuery(t, docs, tc.sql, tc.params); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.sql, got, tc.want)
		}
	}
}

func mustDecode(t testing.TB, s string) Value {
	t.Helper()
	v, err := Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestBoundAccessors(t *testing.T) {
	docs := decodeAll(t, evalDocs)
	q, _ := Parse("SELECT VALUE COUNT(c.b) FROM c WHERE c.n > 0")
	b, _ := q.Bind(nil)
	if !b.IsCount() || !b.CountNeedsDocs() || b.SelectsAll() || !b.HasWhere() {
		t.Fatal("accessors of a COUNT(c.b) query")
	}
	if !b.CountItem(docs[0]) || b.CountItem(docs[2]) {
		t.Fatal("CountItem")
	}
	if _, _, ok := b.OrderBy(); ok {
		t.Fatal("OrderBy on a query without ORDER BY")
	}
	q, _ = Parse("SELECT VALUE COUNT(1) FROM c")
	b, _ = q.Bind(nil)
	if b.CountNeedsDocs() || b.HasWhere() || !b.Match(docs[5]) {
		t.Fatal("COUNT(1) accessors")
	}
	q, _ = Parse("SELECT * FROM c ORDER BY c.nested.a[2] DESC")
	b, _ = q.Bind(nil)
	path, desc, ok := b.OrderBy()
	if !ok || !desc || strings.Join(path, ",") != "nested,a,2" || b.IsCount() || !b.SelectsAll() {
		t.Fatalf("OrderBy = %v %v %v", path, desc, ok)
	}
	if v := b.OrderKey(docs[1]); v.IsDefined() {
		t.Fatalf("OrderKey = %v", v)
	}
	if skip, limit := b.Window(); skip != 0 || limit != -1 {
		t.Fatalf("Window = %d %d", skip, limit)
	}
}
