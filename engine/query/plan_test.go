package query

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
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

// planIndexed is the index policy of the plan tests: every path but
// /secret and those under /skip.
func planIndexed(p string) bool { return p != "/secret" && !strings.HasPrefix(p, "/skip") }

// TestPlanExplain runs the cases of testdata/plan: a query (with string
// parameters given as arguments, "plan @p=x") and the plan it gets, as
// Explain prints it. -rewrite regenerates the expected plans.
func TestPlanExplain(t *testing.T) {
	datadriven.RunTest(t, "testdata/plan", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "plan" {
			d.Fatalf(t, "unknown command %q", d.Cmd)
		}
		params := map[string]Value{}
		for _, a := range d.CmdArgs {
			if !strings.HasPrefix(a.Key, "@") || len(a.Vals) != 1 {
				d.Fatalf(t, "argument %s: want @name=string", a)
			}
			params[a.Key] = StringValue(a.Vals[0])
		}
		return planOf(t, strings.TrimSpace(d.Input), params, planIndexed).String() + "\n"
	})
}

// TestPlanShape checks what the plan text does not show: exactness, the
// ORDER BY's fields and range keys.
func TestPlanShape(t *testing.T) {
	indexed := planIndexed
	p := planOf(t, "SELECT * FROM c WHERE c.a = 1 ORDER BY c.n DESC", nil, indexed)
	if !p.Exact {
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
