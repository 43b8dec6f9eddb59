package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
)

// nestKinds are the ways query text can nest: each wraps an expression in
// one more level.
var nestKinds = []struct {
	name        string
	open, close string
}{
	{"paren", "(", ")"},
	{"array", "[", "]"},
	{"object", "{a: ", "}"},
	{"not", "NOT ", ""},
	{"call", "LOWER(", ")"},
	{"in", "c.a IN ([", "])"},
}

// nested is a WHERE of depth levels of one kind around c.n = 1.
func nested(open, close string, depth int) string {
	return "SELECT * FROM c WHERE " + strings.Repeat(open, depth) + "c.n = 1" + strings.Repeat(close, depth)
}

// chain is a WHERE of n conditions joined by op.
func chain(n int, op string) string {
	var b strings.Builder
	b.WriteString("SELECT * FROM c WHERE ")
	for i := range n {
		if i > 0 {
			b.WriteString(" " + op + " ")
		}
		fmt.Fprintf(&b, "c.a=%d", i%10)
	}
	return b.String()
}

// wantLimit fails unless err is an ErrLimit (and so ErrInvalidQuery) whose
// text names the limit.
func wantLimit(t *testing.T, what string, err error, limit string) {
	t.Helper()
	if !errors.Is(err, ErrLimit) || !errors.Is(err, ErrInvalidQuery) {
		t.Fatalf("%s: err = %v, want ErrLimit", what, err)
	}
	if !strings.Contains(err.Error(), limit) {
		t.Fatalf("%s: %q does not name %s", what, err, limit)
	}
}

// TestLimitsNesting: every way to nest is held to MaxDepth, however deep
// the text goes (a million levels included), and nesting within the limit
// parses.
func TestLimitsNesting(t *testing.T) {
	for _, k := range nestKinds {
		for _, depth := range []int{MaxDepth + 1, 10 * MaxDepth, 1_000_000} {
			sql := nested(k.open, k.close, depth)
			if len(sql) > MaxLength {
				sql = sql[:MaxLength] // still too deep long before the end
			}
			_, err := Parse(sql)
			wantLimit(t, fmt.Sprintf("%s depth %d", k.name, depth), err, "MaxDepth")
		}
		sql := nested(k.open, k.close, MaxDepth/2-2)
		if _, err := Parse(sql); errors.Is(err, ErrLimit) {
			t.Fatalf("%s depth %d: %v", k.name, MaxDepth/2-2, err)
		}
	}
}

// TestLimitsSize: text over MaxLength, more than MaxTerms operands and
// more than MaxParams parameters are refused naming the limit; chains of
// any length within them parse, without nesting.
func TestLimitsSize(t *testing.T) {
	_, err := Parse("SELECT * FROM c WHERE c.s = '" + strings.Repeat("x", MaxLength) + "'")
	wantLimit(t, "long text", err, "MaxLength")

	_, err = Parse("SELECT * FROM c WHERE c.a IN (" + strings.Repeat("1,", MaxTerms) + "1)")
	wantLimit(t, "many operands", err, "MaxTerms")

	var ps []string
	for i := range MaxParams + 1 {
		ps = append(ps, fmt.Sprintf("@p%d", i))
	}
	_, err = Parse("SELECT * FROM c WHERE c.a IN (" + strings.Join(ps, ",") + ")")
	wantLimit(t, "many parameters", err, "MaxParams")
	if _, err := Parse("SELECT * FROM c WHERE c.a IN (" + strings.Join(ps[:MaxParams], ",") + ")"); err != nil {
		t.Fatalf("MaxParams parameters: %v", err)
	}

	for _, op := range []string{"AND", "OR"} {
		n := MaxTerms/2 - 1
		q, err := Parse(chain(n, op))
		if err != nil {
			t.Fatalf("%s chain of %d: %v", op, n, err)
		}
		if x, ok := q.where.(*andExpr); op == "AND" && (!ok || len(x.xs) != n) {
			t.Fatalf("AND chain is not one node of %d operands: %T", n, q.where)
		}
	}
}

// TestParsePlanCostLinear: parsing, binding and planning a chain of n
// conditions allocates in proportion to n (the bytes for 8n conditions
// are under 12 times those for n; a quadratic cost would be 64 times).
// Allocation is counted, not timed.
func TestParsePlanCostLinear(t *testing.T) {
	cost := func(n int, op string) uint64 {
		sql := chain(n, op)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		q, err := Parse(sql)
		if err != nil {
			t.Fatal(err)
		}
		b, err := q.Bind(nil)
		if err != nil {
			t.Fatal(err)
		}
		p := b.Plan(func(string) bool { return true })
		_ = p.String()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	for _, op := range []string{"AND", "OR"} {
		small, large := cost(4000, op), cost(32000, op)
		if large > 12*small {
			t.Fatalf("%s: %d conditions allocate %d B, 8 times as many %d B (%.1fx)", op, 4000, small, large, float64(large)/float64(small))
		}
	}
}

// TestWindowBounds: TOP, OFFSET and LIMIT accept every integer from 0 to
// math.MaxInt64, as literals and as parameters, and the error for one out
// of range states that range.
func TestWindowBounds(t *testing.T) {
	for _, n := range []string{"0", "1", "9223372036854775806", "9223372036854775807"} {
		for _, sql := range []string{"SELECT TOP %s * FROM c", "SELECT * FROM c OFFSET %s LIMIT %s"} {
			s := strings.ReplaceAll(sql, "%s", n)
			q, err := Parse(s)
			if err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			b, err := q.Bind(nil)
			if err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			skip, limit := b.Window()
			if fmt.Sprint(limit) != n || (strings.Contains(s, "OFFSET") && fmt.Sprint(skip) != n) {
				t.Fatalf("%s: window %d, %d", s, skip, limit)
			}
		}
	}
	q, err := Parse("SELECT TOP @n * FROM c")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []float64{0, 7, math.MaxInt64} {
		if b, err := q.Bind(map[string]Value{"@n": NumberValue(n)}); err != nil {
			t.Fatalf("TOP @n = %v: %v", n, err)
		} else if _, limit := b.Window(); float64(limit) != n {
			t.Fatalf("TOP @n = %v: limit %d", n, limit)
		}
	}
	for _, n := range []string{"9223372036854775808", "1e30", "1.5"} {
		s := "SELECT TOP " + n + " * FROM c"
		_, err := Parse(s)
		if !errors.Is(err, ErrInvalidQuery) || !strings.Contains(err.Error(), "from 0 to 9223372036854775807") {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// FuzzParseShapes builds queries of deep and long structure from a few
// fuzzed choices (how to nest, how deep, how long an AND/OR chain, how many
// parameters) and checks that Parse, Bind and Plan return, and that an
// error is always ErrInvalidQuery (ErrLimit past a limit). A stack
// overflow would end the fuzzer. Shapes stay near the limits; bit 0x80 of
// kind makes the nesting a thousand times deeper and bit 0x40 the chain a
// hundred times longer, past MaxLength and MaxTerms.
func FuzzParseShapes(f *testing.F) {
	f.Add(uint8(0x80), uint16(1000), uint16(0), uint16(0), false)
	f.Add(uint8(3), uint16(MaxDepth+1), uint16(10), uint16(3), true)
	f.Add(uint8(0x41), uint16(MaxDepth-2), uint16(600), uint16(20), false)
	f.Add(uint8(2), uint16(20), uint16(1000), uint16(MaxParams+1), true)
	f.Fuzz(func(t *testing.T, kind uint8, depth, chainLen, params uint16, or bool) {
		k := nestKinds[int(kind&0x3f)%len(nestKinds)]
		d, n := int(depth)%(3*MaxDepth), int(chainLen)%2000
		if kind&0x80 != 0 {
			d *= 1000
		}
		if kind&0x40 != 0 {
			n *= 100
		}
		op := " AND "
		if or {
			op = " OR "
		}
		var b strings.Builder
		b.WriteString("SELECT * FROM c WHERE ")
		b.WriteString(strings.Repeat(k.open, d))
		b.WriteString("c.n = 1")
		b.WriteString(strings.Repeat(op+"c.a = 'x'", n))
		for i := range int(params) % (2 * MaxParams) {
			fmt.Fprintf(&b, "%sc.p = @p%d", op, i)
		}
		b.WriteString(strings.Repeat(k.close, d))
		sql := b.String()
		q, err := Parse(sql)
		if err != nil {
			if !errors.Is(err, ErrInvalidQuery) {
				t.Fatalf("Parse: %v does not match ErrInvalidQuery", err)
			}
			if len(sql) > MaxLength && !errors.Is(err, ErrLimit) {
				t.Fatalf("Parse of %d bytes: %v, want ErrLimit", len(sql), err)
			}
			return
		}
		vals := map[string]Value{}
		for _, p := range q.Params() {
			vals[p] = NumberValue(1)
		}
		bq, err := q.Bind(vals)
		if err != nil {
			t.Fatalf("Bind: %v", err)
		}
		_ = bq.Plan(func(string) bool { return true }).String()
		bq.Match(ObjectValue([]Member{{Key: "n", Value: NumberValue(1)}}))
	})
}

// endingCtx is a context whose Err starts to report context.Canceled at
// its n-th call, and counts its calls.
type endingCtx struct {
	context.Context
	n, calls int
}

func (c *endingCtx) Err() error {
	c.calls++
	if c.calls >= c.n {
		return context.Canceled
	}
	return nil
}

// TestParseStopsWhenContextEnds: ParseContext checks its context as it
// reads, and stops at the first check after the context ends, with the
// context's error, however much text is left: so a parse of the longest
// query allowed ends within ctxCheckTokens tokens of its deadline. Counted,
// not timed.
func TestParseStopsWhenContextEnds(t *testing.T) {
	var b strings.Builder
	b.WriteString("SELECT * FROM c WHERE c.a = 1")
	for b.Len() < MaxLength-40 {
		b.WriteString(" AND c.a = 1")
	}
	sql := b.String()
	if _, err := ParseContext(context.Background(), sql); err != nil {
		t.Fatalf("the long query does not parse: %v", err)
	}
	for _, n := range []int{1, 2, 5, 40} {
		ctx := &endingCtx{Context: context.Background(), n: n}
		_, err := ParseContext(ctx, sql)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("context ending at check %d: %v, want context.Canceled", n, err)
		}
		if ctx.calls != n {
			t.Fatalf("context ending at check %d: checked %d times; the parse went on after it ended", n, ctx.calls)
		}
	}
}
