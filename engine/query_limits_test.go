package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ebbdb/ebb/engine/query"
)

// queryErr runs sql and returns the error it ends with (nil if none) and
// how many results came before it.
func queryErr(c *Container, ctx context.Context, sql string, params ...Param) (int, error) {
	n := 0
	for _, err := range c.Query(ctx, sql, params...) {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func limitsContainer(t *testing.T, items int) *Container {
	t.Helper()
	db := openTest(t, t.TempDir(), newFakeClock(t0))
	t.Cleanup(func() { db.Close() })
	c := mustCreateContainer(t, db, ContainerProperties{ID: "l", Indexing: IndexingConsistent})
	for i := range items {
		doc := fmt.Sprintf(`{"id":"i%03d","n":%d,"g":"%c","s":"x%d","k10":%d,"u":%d}`, i, i%10, 'a'+i%3, i, i%10, i)
		if _, err := c.Upsert(context.Background(), []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// TestQueryHostileText: no query text crashes the process or runs
// unbounded: a million nested brackets, parentheses, NOTs, or text past
// query.MaxLength are refused by Query and Explain alike with an error
// matching query.ErrLimit and query.ErrInvalidQuery that names the limit.
func TestQueryHostileText(t *testing.T) {
	c := limitsContainer(t, 3)
	const deep = 1_000_000
	cases := []struct{ sql, limit string }{
		{"SELECT * FROM c WHERE c.n = " + strings.Repeat("[", deep) + strings.Repeat("]", deep), "MaxLength"},
		{"SELECT * FROM c WHERE c.n = " + strings.Repeat("[", deep/10) + strings.Repeat("]", deep/10), "MaxDepth"},
		{"SELECT * FROM c WHERE " + strings.Repeat("(", deep/10) + "c.n = 1" + strings.Repeat(")", deep/10), "MaxDepth"},
		{"SELECT * FROM c WHERE " + strings.Repeat("NOT ", deep/10) + "c.n = 1", "MaxDepth"},
		{"SELECT * FROM c WHERE c.n = {a:" + strings.Repeat("{a:", deep/10), "MaxDepth"},
		{"SELECT * FROM c WHERE c.n IN (" + strings.Repeat("1,", query.MaxTerms) + "1)", "MaxTerms"},
	}
	for _, tc := range cases {
		_, err := queryErr(c, context.Background(), tc.sql)
		_, xerr := c.Explain(tc.sql)
		for _, e := range []error{err, xerr} {
			if !errors.Is(e, query.ErrLimit) || !errors.Is(e, query.ErrInvalidQuery) || !strings.Contains(e.Error(), tc.limit) {
				t.Fatalf("%.40s... (%d bytes): %v, want ErrLimit naming %s", tc.sql, len(tc.sql), e, tc.limit)
			}
		}
	}
	params := make([]Param, query.MaxParams+1)
	for i := range params {
		params[i] = Param{Name: fmt.Sprintf("@p%d", i), Value: i}
	}
	if _, err := queryErr(c, context.Background(), "SELECT * FROM c", params...); !errors.Is(err, query.ErrLimit) || !strings.Contains(err.Error(), "MaxParams") {
		t.Fatalf("%d parameters: %v", len(params), err)
	}
}

// cancelQueries are queries of every execution path: scan, index equality
// and range, exact and re-checked COUNT, ORDER BY by index walk, by sort
// and by id, TOP, and a long AND chain.
var cancelQueries = []string{
	`SELECT * FROM c`,
	`SELECT * FROM c WHERE c.n = 3`,
	`SELECT * FROM c WHERE c.n >= 2 AND c.s != 'x'`,
	`SELECT VALUE COUNT(1) FROM c WHERE c.n = 3`,
	`SELECT VALUE COUNT(1) FROM c WHERE c.s != 'x'`,
	`SELECT * FROM c ORDER BY c.n DESC`,
	`SELECT * FROM c ORDER BY c.n[0]`,
	`SELECT * FROM c ORDER BY c.id`,
	`SELECT TOP 5 * FROM c ORDER BY c.s`,
	longAndQuery(20_000),
}

// TestQueryContextEnds: a query whose context has ended, before it starts
// or after its first result, ends with the context's error (and yields
// nothing more), whatever path it runs on.
func TestQueryContextEnds(t *testing.T) {
	c := limitsContainer(t, 50)
	for _, sql := range cancelQueries {
		name := sql[:min(len(sql), 50)]
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if n, err := queryErr(c, ctx, sql); n != 0 || !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: cancelled before: %d results, %v", name, n, err)
		}
		ctx, cancel = context.WithCancel(context.Background())
		n, ended := 0, error(nil)
		for _, err := range c.Query(ctx, sql) {
			if err != nil {
				ended = err
				break
			}
			n++
			cancel()
		}
		cancel()
		if strings.Contains(sql, "COUNT") {
			continue // one result: nothing after it to stop
		}
		if n != 1 || !errors.Is(ended, context.Canceled) {
			t.Fatalf("%s: cancelled after the first result: %d results, then %v", name, n, ended)
		}
	}
}

// TestQueryParamErrors: a parameter given twice is refused naming it; one
// whose value has no JSON form names the parameter, matches both
// ErrInvalidQuery and ErrInvalidJSON and says "query:" once.
func TestQueryParamErrors(t *testing.T) {
	c := limitsContainer(t, 3)
	_, err := queryErr(c, context.Background(), "SELECT * FROM c WHERE c.n = @n", Param{"@n", 1}, Param{"@n", 2})
	if !errors.Is(err, query.ErrInvalidQuery) || !strings.Contains(err.Error(), "@n") || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("duplicate parameter: %v", err)
	}
	for _, v := range []any{math.NaN(), math.Inf(1), make(chan int)} {
		_, err := queryErr(c, context.Background(), "SELECT * FROM c WHERE c.n = @n", Param{"@n", v})
		if !errors.Is(err, query.ErrInvalidQuery) || !errors.Is(err, query.ErrInvalidJSON) ||
			!strings.Contains(err.Error(), "@n") || strings.Count(err.Error(), "query: invalid") != 1 {
			t.Fatalf("parameter %v: %v", v, err)
		}
	}
}

// TestQueryFromForms: FROM <container> [AS] <alias> is accepted in every
// form Cosmos DB takes, the alias is what paths start with, and results do
// not depend on the form.
func TestQueryFromForms(t *testing.T) {
	c := limitsContainer(t, 30)
	bodies := func(sql string) string {
		var out []string
		for it, err := range c.Query(context.Background(), sql) {
			if err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
			out = append(out, string(it.Body))
		}
		return strings.Join(out, "\n")
	}
	for _, tail := range []string{"", " WHERE X.n = 1", " WHERE X.n > 3 ORDER BY X.s DESC", " WHERE X.g = 'b' OFFSET 1 LIMIT 3"} {
		want := bodies("SELECT * FROM c" + strings.ReplaceAll(tail, "X.", "c."))
		for _, from := range []string{"root r", "root AS r", "c AS r", "c r", "Items r", "r"} {
			sql := "SELECT * FROM " + from + strings.ReplaceAll(tail, "X.", "r.")
			if got := bodies(sql); got != want {
				t.Fatalf("%s: results differ from FROM c", sql)
			}
		}
	}
	for _, sql := range []string{"SELECT * FROM root r WHERE root.n = 1", "SELECT * FROM c AS x WHERE c.n = 1", "SELECT * FROM c AS", "SELECT * FROM c AS WHERE"} {
		if _, err := queryErr(c, context.Background(), sql); !errors.Is(err, query.ErrInvalidQuery) {
			t.Fatalf("%s: %v, want ErrInvalidQuery", sql, err)
		}
	}
}

// TestQueryWindowMax: TOP and OFFSET/LIMIT of math.MaxInt64 are accepted
// and mean "everything", on every execution path.
func TestQueryWindowMax(t *testing.T) {
	c := limitsContainer(t, 20)
	for _, sql := range []string{
		"SELECT TOP 9223372036854775807 * FROM c ORDER BY c.n",
		"SELECT TOP 9223372036854775807 * FROM c",
		"SELECT * FROM c ORDER BY c.n DESC OFFSET 0 LIMIT 9223372036854775807",
		"SELECT * FROM c WHERE c.n >= 0 ORDER BY c.s OFFSET 0 LIMIT 9223372036854775807",
	} {
		if n, err := queryErr(c, context.Background(), sql); err != nil || n != 20 {
			t.Fatalf("%s: %d results, %v", sql, n, err)
		}
	}
	if n, err := queryErr(c, context.Background(), "SELECT TOP @n * FROM c ORDER BY c.n", Param{"@n", int64(math.MaxInt64)}); err != nil || n != 20 {
		t.Fatalf("TOP @n = MaxInt64: %d results, %v", n, err)
	}
}

// countdownCtx is a context that ends after its Err has been asked n
// times: it stops a query at each of the places it checks, in turn.
type countdownCtx struct {
	context.Context
	left atomic.Int64
}

func (c *countdownCtx) Err() error {
	if c.left.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestQueryStopsAtEveryCheck: wherever a query is when its context ends
// (parsing, collecting candidates from the index, reading, sorting,
// yielding), it ends with the context's error, and what it yielded before
// is a prefix of its full result. (The long AND chain is left out: it
// has a check per index access, too many to try each.)
func TestQueryStopsAtEveryCheck(t *testing.T) {
	c := limitsContainer(t, 50)
	for _, sql := range cancelQueries[:len(cancelQueries)-1] {
		name := sql[:min(len(sql), 50)]
		var full []string
		for it, err := range c.Query(context.Background(), sql) {
			if err != nil {
				t.Fatal(err)
			}
			full = append(full, string(it.Body))
		}
		for n := int64(0); ; n++ {
			ctx := &countdownCtx{Context: context.Background()}
			ctx.left.Store(n)
			var got []string
			var ended error
			for it, err := range c.Query(ctx, sql) {
				if err != nil {
					ended = err
					break
				}
				got = append(got, string(it.Body))
			}
			if len(got) > len(full) || !slices.Equal(got, full[:len(got)]) {
				t.Fatalf("%s, stopped after %d checks: results are not a prefix of the full result", name, n)
			}
			if ended == nil {
				if len(got) != len(full) {
					t.Fatalf("%s, stopped after %d checks: %d of %d results and no error", name, n, len(got), len(full))
				}
				break // n is past every check
			}
			if !errors.Is(ended, context.Canceled) {
				t.Fatalf("%s, stopped after %d checks: %v", name, n, ended)
			}
		}
	}
}
