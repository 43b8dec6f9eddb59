package query

import (
	"errors"
	"strings"
	"testing"
)

func TestParseAccepts(t *testing.T) {
	for _, sql := range []string{
		"SELECT * FROM c",
		"select * from c",
		"SeLeCt * FrOm x WHERE x.a = 1",
		"SELECT VALUE c.a FROM c",
		"SELECT c.a, c.b AS x, c.a.b AS y FROM c",
		`SELECT c["a b"], c.a[0] FROM c`,
		"SELECT TOP 5 * FROM c ORDER BY c.n DESC",
		"SELECT * FROM c ORDER BY c.a.b ASC OFFSET 10 LIMIT 5",
		"SELECT * FROM c OFFSET @o LIMIT @l",
		"SELECT TOP @n * FROM c",
		"SELECT VALUE COUNT(1) FROM c WHERE c.a > 2",
		"SELECT VALUE COUNT(c) FROM c",
		"SELECT VALUE COUNT(c.x) FROM c",
		"SELECT COUNT(1) AS n FROM c",
		"SELECT COUNT(1) FROM c",
		"SELECT * FROM c WHERE c.a != 1 AND c.b <> 2 OR NOT c.c < 3",
		"SELECT * FROM c WHERE c.a IN (1, 'x', \"y\", null, true, false, @p)",
		"SELECT * FROM c WHERE c.a NOT IN (1, 2)",
		"SELECT * FROM c WHERE c.n BETWEEN 1 AND 5",
		"SELECT * FROM c WHERE IS_DEFINED(c.a) AND STARTSWITH(c.s, 'ab', true) AND ARRAY_CONTAINS(c.tags, 'x', false)",
		"SELECT * FROM c WHERE c.a = [1, 2] OR c.o = {\"a\": 1, b: [true]}",
		"SELECT * FROM c WHERE c.n >= -1.5e3 AND c.n <= .5",
		"SELECT * FROM c WHERE c.s = 'it\\'s \\u00e9 \\n'",
		"SELECT * FROM c -- a comment\nWHERE c.a = 1",
		"SELECT c.value, c.order, c.select FROM c",
		"SELECT * FROM c WHERE (c.a = 1 OR c.b = 2) AND c.c",
		"SELECT c FROM c",
		"SELECT VALUE {\"id\": c.id, \"n\": c.n} FROM c",
	} {
		if _, err := Parse(sql); err != nil {
			t.Errorf("Parse(%q): %v", sql, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		sql    string
		syntax bool   // a *SyntaxError (else only ErrInvalidQuery)
		pos    int    // SyntaxError.Pos
		token  string // SyntaxError.Token
		msg    string // substring of Error()
	}{
		{"SELECT * FORM c", true, 9, "FORM", `line 1, column 10 near "FORM": expected FROM`},
		{"SELECT *\nFROM c\nWHERE c.a = = 1", true, 28, "=", `line 3, column 13 near "=": expected an expression`},
		{"", true, 0, "", "at end of input: expected SELECT"},
		{"SELECT * FROM c WHERE", true, 21, "", "at end of input: expected an expression"},
		{"SELECT * FROM c WHERE c.a = 'abc", true, 28, "'abc", "unterminated string"},
		{"SELECT * FROM c WHERE c.a = 1 garbage", true, 30, "garbage", "expected the end of the query"},
		{"SELECT * FROM c WHERE c.a # 1", true, 26, "#", "unexpected character"},
		{"SELECT * FROM c WHERE c.a IN 1", true, 29, "1", `expected "("`},
		{"SELECT * FROM c WHERE c.a NOT 1", true, 30, "1", "expected IN or BETWEEN"},
		{"SELECT * FROM select", true, 14, "select", "expected the FROM alias"},
		{"SELECT * FROM c WHERE c. = 1", true, 25, "=", "expected a property name"},
		{"SELECT * FROM c WHERE c[true] = 1", true, 24, "true", "expected a property name string or an array index"},
		{"SELECT * FROM c WHERE c.s = 'a\\q'", true, 30, "\\q", "invalid escape"},
		{"SELECT * FROM c WHERE c.a = @", true, 28, "@", "parameter name"},
		{"SELECT * FROM c ORDER BY c.a, c.b", true, 28, ",", "more than one path"},
		{"SELECT DISTINCT * FROM c", true, 7, "DISTINCT", "not supported"},
		{"SELECT * FROM c JOIN t IN c.tags", true, 16, "JOIN", "not supported"},
		{"SELECT * FROM c WHERE c.a = -c.b", true, 29, "c", "arithmetic is not supported"},
		{"SELECT * FROM c WHERE x.a = 1", false, 0, "", `line 1, column 23: identifier "x" is not the FROM alias "c"`},
		{"SELECT * FROM c WHERE FOO(c.a)", false, 0, "", "unknown function FOO"},
		{"SELECT * FROM c WHERE IS_DEFINED(c.a, c.b)", false, 0, "", "IS_DEFINED takes 1 arguments, got 2"},
		{"SELECT * FROM c WHERE STARTSWITH(c.a)", false, 0, "", "STARTSWITH takes 2 or 3 arguments, got 1"},
		{"SELECT VALUE SUM(c.a) FROM c", false, 0, "", "aggregate SUM is not supported"},
		{"SELECT TOP 1.5 * FROM c", false, 0, "", "TOP needs an integer"},
		{"SELECT TOP -1 * FROM c", true, 11, "-", "expected a number or a parameter after TOP"},
		{"SELECT * FROM c OFFSET 1 LIMIT 1e300", false, 0, "", "LIMIT needs an integer"},
		{"SELECT TOP 1 * FROM c OFFSET 1 LIMIT 1", false, 0, "", "TOP and OFFSET"},
		{"SELECT VALUE COUNT(1) FROM c ORDER BY c.a", false, 0, "", "COUNT cannot be combined with ORDER BY"},
		{"SELECT VALUE COUNT(1) FROM c OFFSET 0 LIMIT 1", false, 0, "", "COUNT cannot be combined with OFFSET"},
		{"SELECT * FROM c WHERE COUNT(1) = 1", false, 0, "", "COUNT is only supported as the whole SELECT"},
		{"SELECT c.a, COUNT(1) FROM c", false, 0, "", "COUNT is only supported"},
		{"SELECT c.a, c.b.a FROM c", false, 0, "", `duplicate output property "a"`},
		{"SELECT * FROM c ORDER BY c", false, 0, "", "ORDER BY needs a property path"},
		{"SELECT * FROM c ORDER BY 1", false, 0, "", "ORDER BY needs a property path"},
		{"SELECT * FROM c WHERE c.a[1.5] = 1", false, 0, "", "array index 1.5"},
		{"SELECT * FROM c WHERE c.a = undefined", false, 0, "", `identifier "undefined" is not the FROM alias`},
	} {
		q, err := Parse(tc.sql)
		if err == nil {
			t.Errorf("Parse(%q) = %v, want an error", tc.sql, q)
			continue
		}
		if !errors.Is(err, ErrInvalidQuery) {
			t.Errorf("Parse(%q): %v does not match ErrInvalidQuery", tc.sql, err)
		}
		if !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Parse(%q): %q does not contain %q", tc.sql, err, tc.msg)
		}
		var se *SyntaxError
		isSyntax := errors.As(err, &se)
		if isSyntax != tc.syntax || errors.Is(err, ErrSyntax) != tc.syntax {
			t.Errorf("Parse(%q): %v: syntax error %v, want %v", tc.sql, err, isSyntax, tc.syntax)
			continue
		}
		if isSyntax && (se.Pos != tc.pos || se.Token != tc.token) {
			t.Errorf("Parse(%q): pos %d token %q, want %d %q", tc.sql, se.Pos, se.Token, tc.pos, tc.token)
		}
		if isSyntax && !strings.HasPrefix(err.Error(), "query: syntax error at line ") {
			t.Errorf("Parse(%q): message %q", tc.sql, err)
		}
	}
}

func TestSyntaxErrorLineCol(t *testing.T) {
	_, err := Parse("SELECT *\r\nFROM c\n  WHERE c.a ! 1")
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("got %v", err)
	}
	if se.Line != 3 || se.Col != 13 || se.Token != "!" {
		t.Fatalf("got line %d col %d token %q (%v)", se.Line, se.Col, se.Token, err)
	}
}

func TestBindParams(t *testing.T) {
	q, err := Parse("SELECT TOP @n * FROM c WHERE c.a = @a AND c.b IN (@a, @b)")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(q.Params(), ","); got != "@a,@b,@n" {
		t.Fatalf("Params = %s", got)
	}
	ok := map[string]Value{"@a": NumberValue(1), "@b": StringValue("x"), "@n": NumberValue(3)}
	b, err := q.Bind(ok)
	if err != nil {
		t.Fatal(err)
	}
	if skip, limit := b.Window(); skip != 0 || limit != 3 {
		t.Fatalf("Window = %d, %d", skip, limit)
	}
	for _, tc := range []struct {
		params map[string]Value
		msg    string
	}{
		{map[string]Value{"@a": NumberValue(1), "@n": NumberValue(3)}, "parameter @b has no value"},
		{map[string]Value{"@a": NumberValue(1), "@b": NumberValue(1), "@n": NumberValue(3), "@z": NullValue()}, `parameter "@z" is not used`},
		{map[string]Value{"@a": NumberValue(1), "@b": NumberValue(1), "@n": NumberValue(3), "z": NullValue()}, "parameter names start with @"},
		{map[string]Value{"@a": NumberValue(1), "@b": NumberValue(1), "@n": NumberValue(-1)}, "TOP parameter @n is -1"},
		{map[string]Value{"@a": NumberValue(1), "@b": NumberValue(1), "@n": StringValue("3")}, `TOP parameter @n is "3"`},
		{map[string]Value{"@a": NumberValue(1), "@b": NumberValue(1), "@n": NumberValue(2.5)}, "integer >= 0"},
	} {
		_, err := q.Bind(tc.params)
		if !errors.Is(err, ErrInvalidQuery) || !strings.Contains(fmtErr(err), tc.msg) {
			t.Errorf("Bind(%v) = %v, want ErrInvalidQuery with %q", tc.params, err, tc.msg)
		}
	}
	q2, _ := Parse("SELECT * FROM c OFFSET @o LIMIT @l")
	b2, err := q2.Bind(map[string]Value{"@o": NumberValue(2), "@l": NumberValue(0)})
	if err != nil {
		t.Fatal(err)
	}
	if skip, limit := b2.Window(); skip != 2 || limit != 0 {
		t.Fatalf("Window = %d, %d", skip, limit)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
