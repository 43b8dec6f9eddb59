package query

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func planOf(t *testing.T, sql string, params map[string]Value, indexed func(string) bool) *Plan {
	t.Helper()
	q, err := Parse(sql)
	if err != nil {
		t.Fatalf("Parse(%q): %v", sql, err)
	}
	b, err := q.Bind(params)
	if err != nil {
		t.Fatalf("Bind(%q): %v", sql, err)
	}
	return b.Plan(indexed)
}

func TestPlanExplain(t *testing.T) {
	indexed := func(p string) bool { return p != "/secret" && !strings.HasPrefix(p, "/skip") }
	for _, tc := range []struct {
		where  string
		params map[string]Value
		want   string
	}{
		{"", nil, "scan"},
		{"c.a = 5", nil, "index eq /a = 5"},
		{"5 = c.a", nil, "index eq /a = 5"},
		{"c.a = @p", map[string]Value{"@p": StringValue("x")}, `index eq /a = "x"`},
		{"c.a.b = null", nil, "index eq /a/b = null"},
		{"c['x y'].z = true", nil, "index eq /x y/z = true"},
		{"c['a/b'] = 1", nil, `index eq /"a/b" = 1`},
		{"c.a IN (3, 'x', 1, 3)", nil, `index eq /a in (1, 3, "x")`},
		{"c.n > 5", nil, "index range /n (5, +inf)"},
		{"5 >= c.n", nil, "index range /n (-inf, 5]"},
		{"c.n BETWEEN 1 AND 2", nil, "index range /n [1, 2]"},
		{"c.n >= 1 AND c.n > 1 AND c.n <= 9 AND c.n < 9", nil, "index range /n (1, 9)"},
		{"c.n > 1 AND c.m < 9 AND c.n < 5", nil, "and\n  index range /n (1, 5)\n  index range /m (-inf, 9)"},
		{"c.n > 5 AND c.n < 3", nil, "index range /n (5, 3)"},
		{"c.n > 5 AND c.n < 'a'", nil, "and\n  index range /n (5, +inf)\n  index range /n (-inf, \"a\")"},
		{"c.s < 'b'", nil, `index range /s (-inf, "b")`},
		{"c.s > ''", nil, `index range /s ("", +inf)`},
		{"STARTSWITH(c.s, 'ab')", nil, `index prefix /s "ab"`},
		{"STARTSWITH(c.s, 'ab', false)", nil, `index prefix /s "ab"`},
		{"STARTSWITH(c.s, 'ab', true)", nil, "scan\nre-check WHERE"},
		{"ARRAY_CONTAINS(c.tags, 'x')", nil, `index eq /tags/[] = "x"`},
		{"ARRAY_CONTAINS(c.tags, {\"a\":1})", nil, "scan\nre-check WHERE"},
		{"c.flag", nil, "index eq /flag = true"},
		{"c.a = 1 AND c.b = 2 AND c.c = 3", nil, "and\n  index eq /a = 1\n  index eq /b = 2\n  index eq /c = 3"},
		{"c.a = 1 AND NOT c.b = 2", nil, "index eq /a = 1\nre-check WHERE"},
		{"c.a = 1 OR c.b > 2 OR c.c = 'x'", nil, "or\n  index eq /a = 1\n  index range /b (2, +inf)\n  index eq /c = \"x\""},
		{"c.a = 1 OR c.b != 2", nil, "scan\nre-check WHERE"},
		{"(c.a = 1 OR c.b = 2) AND IS_DEFINED(c.z)", nil, "or\n  index eq /a = 1\n  index eq /b = 2\nre-check WHERE"},
		{"c.secret = 1", nil, "scan\nre-check WHERE"},
		{"c.secret = 1 AND c.a = 2", nil, "index eq /a = 2\nre-check WHERE"},
		{"c.a[0] = 1", nil, "scan\nre-check WHERE"},
		{"c.a = c.b", nil, "scan\nre-check WHERE"},
		{"c.a = [1]", nil, "scan\nre-check WHERE"},
		{"c.a IN (1, [1])", nil, "scan\nre-check WHERE"},
		{"c.a > true", nil, "scan\nre-check WHERE"},
		{"c.a != 1", nil, "scan\nre-check WHERE"},
		{"NOT c.flag", nil, "scan\nre-check WHERE"},
		{"IS_DEFINED(c.a)", nil, "scan\nre-check WHERE"},
		{"LOWER(c.s) = 'a'", nil, "scan\nre-check WHERE"},
	} {
		sql := "SELECT * FROM c"
		if tc.where != "" {
			sql += " WHERE " + tc.where
		}
		if got := planOf(t, sql, tc.params, indexed).String(); got != tc.want {
			t.Errorf("WHERE %s:\n got %q\nwant %q", tc.where, got, tc.want)
		}
	}
	p := planOf(t, "SELECT * FROM c WHERE c.a = 1 ORDER BY c.n DESC", nil, indexed)
	if p.String() != "index eq /a = 1\norder by /n desc (index)" || !p.Exact {
		t.Errorf("plan with ORDER BY: %q", p)
	}
	p = planOf(t, "SELECT * FROM c ORDER BY c.skip", nil, indexed)
	if p.Order == nil || p.Order.Indexed || p.Order.Path != "/skip" || p.String() != "scan\norder by /skip asc (sort)" {
		t.Errorf("plan with unindexed ORDER BY: %+v %q", p.Order, p)
	}
	p = planOf(t, "SELECT * FROM c ORDER BY c.a[1]", nil, indexed)
	if p.Order == nil || p.Order.Indexed || p.Order.Path != "" {
		t.Errorf("ORDER BY with an array index: %+v", p.Order)
	}
	// Range keys stay inside the constant's kind.
	p = planOf(t, "SELECT * FROM c WHERE c.n > 5", nil, indexed)
	if a := p.Access; a.Kind != Range || a.Lo.Key != mustKey(NumberValue(5)) || a.Lo.Inclusive || a.Hi.Key != string(tagString) || a.Hi.Inclusive {
		t.Errorf("range access %+v", a)
	}
}

// accessMatches evaluates an Access over one document's terms, as the
// engine's index does.
func accessMatches(a *Access, terms []Term) bool {
	switch a.Kind {
	case And:
		for _, c := range a.Children {
			if !accessMatches(c, terms) {
				return false
			}
		}
		return true
	case Or:
		return slices.ContainsFunc(a.Children, func(c *Access) bool { return accessMatches(c, terms) })
	}
	for _, t := range terms {
		if t.Path != a.Path {
			continue
		}
		switch a.Kind {
		case Eq:
			if slices.Contains(a.Keys, t.Key) {
				return true
			}
		case Prefix:
			if strings.HasPrefix(t.Key, a.Keys[0]) {
				return true
			}
		case Range:
			lo := a.Lo.Unbounded || t.Key > a.Lo.Key || (a.Lo.Inclusive && t.Key == a.Lo.Key)
			hi := a.Hi.Unbounded || t.Key < a.Hi.Key || (a.Hi.Inclusive && t.Key == a.Hi.Key)
			if lo && hi {
				return true
			}
		}
	}
	return false
}

// genValue returns a JSON literal for random documents and constants.
func genValue(r *rand.Rand, depth int) string {
	scalars := []string{"null", "true", "false", "0", "-0", "1", "2.5", "-3", "10", `""`, `"a"`, `"ab"`, `"b"`, `"B"`, `"10"`}
	if depth > 0 && r.IntN(5) == 0 {
		n := r.IntN(3)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = genValue(r, depth-1)
		}
		if r.IntN(2) == 0 {
			return "[" + strings.Join(parts, ",") + "]"
		}
		for i := range parts {
			parts[i] = fmt.Sprintf(`"%c":%s`, 'a'+rune(i), parts[i])
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return scalars[r.IntN(len(scalars))]
}

func genDoc(r *rand.Rand, id int) Value {
	fields := []string{fmt.Sprintf(`"id":"%03d"`, id)}
	for _, f := range []string{"n", "s", "b", "tags", "o"} {
		if r.IntN(6) == 0 {
			continue
		}
		v := genValue(r, 2)
		if f == "tags" && r.IntN(2) == 0 {
			v = "[" + genValue(r, 1) + "," + genValue(r, 0) + "]"
		}
		fields = append(fields, fmt.Sprintf(`"%s":%s`, f, v))
	}
	v, err := Decode([]byte("{" + strings.Join(fields, ",") + "}"))
	if err != nil {
		panic(err)
	}
	return v
}

// genWhere returns a random predicate mixing indexable and other atoms.
func genWhere(r *rand.Rand, depth int) string {
	if depth > 0 && r.IntN(3) != 0 {
		op := []string{" AND ", " OR "}[r.IntN(2)]
		return "(" + genWhere(r, depth-1) + op + genWhere(r, depth-1) + ")"
	}
	paths := []string{"c.n", "c.s", "c.b", "c.o.a", "c.tags"}
	p := paths[r.IntN(len(paths))]
	k := genValue(r, 1)
	ops := []string{"=", "<", "<=", ">", ">=", "!="}
	switch r.IntN(11) {
	case 10:
		return "IS_DEFINED(" + p + ")"
	case 0:
		return fmt.Sprintf("%s IN (%s, %s)", p, genValue(r, 0), genValue(r, 0))
	case 1:
		return fmt.Sprintf("STARTSWITH(%s, %s)", p, []string{`"a"`, `""`, `"B"`, `"ab"`}[r.IntN(4)])
	case 2:
		return fmt.Sprintf("ARRAY_CONTAINS(%s, %s)", p, genValue(r, 0))
	case 3:
		return p
	case 4:
		return "NOT " + p
	case 5:
		return fmt.Sprintf("%s %s @p", p, ops[r.IntN(len(ops))])
	case 6:
		return fmt.Sprintf("%s %s %s", k, ops[r.IntN(len(ops))], p)
	default:
		return fmt.Sprintf("%s %s %s", p, ops[r.IntN(len(ops))], k)
	}
}

func TestPlanAgreesWithMatch(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	docs := make([]Value, 200)
	for i := range docs {
		docs[i] = genDoc(r, i)
	}
	policies := []func(string) bool{
		func(string) bool { return true },
		func(p string) bool { return p != "/s" },
		func(p string) bool { return !strings.HasPrefix(p, "/tags") },
	}
	var exact, indexedPlans int
	for i := 0; i < 3000; i++ {
		where := genWhere(r, 2)
		sql := "SELECT * FROM c WHERE " + where
		q, err := Parse(sql)
		if err != nil {
			t.Fatalf("Parse(%q): %v", sql, err)
		}
		params := map[string]Value{}
		if slices.Contains(q.Params(), "@p") {
			params["@p"] = mustDecode(t, genValue(r, 0))
		}
		b, err := q.Bind(params)
		if err != nil {
			t.Fatalf("Bind(%q): %v", sql, err)
		}
		indexed := policies[r.IntN(len(policies))]
		plan := b.Plan(indexed)
		if plan.Access == nil {
			if plan.Exact {
				t.Fatalf("%s: a scan of a WHERE cannot be exact", sql)
			}
			continue
		}
		indexedPlans++
		if plan.Exact {
			exact++
		}
		for _, d := range docs {
			match := b.Match(d)
			got := accessMatches(plan.Access, Terms(d, indexed, nil))
			if match && !got {
				t.Fatalf("%s\nplan %s\nmisses matching doc %v", sql, plan, d)
			}
			if plan.Exact && got && !match {
				t.Fatalf("%s\nexact plan %s\nselects non-matching doc %v", sql, plan, d)
			}
		}
	}
	t.Logf("%d indexed plans, %d exact", indexedPlans, exact)
	if indexedPlans < 1000 || exact < 500 {
		t.Fatalf("generator too weak: %d indexed plans, %d exact", indexedPlans, exact)
	}
}
