package query

import "slices"

// Query is a parsed query: immutable and safe to Bind many times, from many
// goroutines.
type Query struct {
	src    string
	alias  string // the FROM alias
	sel    selectClause
	where  expr // nil: no WHERE
	order  *orderClause
	top    *numArg
	offset *numArg
	limit  *numArg
	params []string // every @name used, sorted, unique
}

// selectKind is the shape of the SELECT clause.
type selectKind uint8

const (
	selStar  selectKind = iota // SELECT *
	selValue                   // SELECT VALUE e
	selItems                   // SELECT e1 [AS k1], ...
	selCount                   // SELECT [VALUE] COUNT(arg) [AS k]
)

type selectClause struct {
	kind  selectKind
	value expr         // selValue
	items []selectItem // selItems
	count *countExpr   // selCount
	key   string       // selCount without VALUE: the result's property name
}

type selectItem struct {
	key string
	e   expr
}

type orderClause struct {
	path *pathExpr
	desc bool
	// termPath is path's term path, and hasTerm whether it has one (see
	// termPathOf): worked out once at parse time for every Plan.
	termPath string
	hasTerm  bool
}

// numArg is the argument of TOP, OFFSET or LIMIT: a literal or a parameter.
type numArg struct {
	n     int64
	param string // "@name" when a parameter
	what  string // "TOP", "OFFSET", "LIMIT"
	pos   int
}

// check validates what the grammar cannot: every path starts at the FROM
// alias, COUNT appears only as the whole SELECT, clause combinations, and
// collects the parameters.
func (q *Query) check() error {
	var err error
	params := map[string]bool{}
	fail := func(pos int, format string, args ...any) {
		if err == nil {
			err = invalidAt(q.src, pos, format, args...)
		}
	}
	checkExpr := func(e expr, countAllowed *countExpr) {
		visit(e, func(x expr) {
			switch x := x.(type) {
			case *pathExpr:
				if x.root != q.alias {
					fail(x.pos, "identifier %q is not the FROM alias %q", x.root, q.alias)
				}
			case *paramExpr:
				params[x.name] = true
			case *countExpr:
				if x != countAllowed {
					fail(x.pos, "COUNT is only supported as the whole SELECT (SELECT VALUE COUNT(1) FROM ...)")
				}
			}
		})
	}
	checkExpr(q.where, nil)
	switch q.sel.kind {
	case selValue:
		checkExpr(q.sel.value, nil)
	case selCount:
		checkExpr(q.sel.count, q.sel.count)
	case selItems:
		seen := map[string]bool{}
		for _, it := range q.sel.items {
			checkExpr(it.e, nil)
			if seen[it.key] {
				fail(0, "duplicate output property %q in SELECT; use AS to rename one", it.key)
			}
			seen[it.key] = true
		}
	}
	if q.order != nil {
		checkExpr(q.order.path, nil)
	}
	for _, a := range []*numArg{q.top, q.offset, q.limit} {
		if a != nil && a.param != "" {
			params[a.param] = true
		}
	}
	if q.top != nil && q.offset != nil {
		fail(q.offset.pos, "TOP and OFFSET ... LIMIT cannot be combined")
	}
	if q.sel.kind == selCount {
		switch {
		case q.order != nil:
			fail(q.sel.count.pos, "COUNT cannot be combined with ORDER BY")
		case q.offset != nil:
			fail(q.sel.count.pos, "COUNT cannot be combined with OFFSET ... LIMIT")
		case q.top != nil:
			fail(q.sel.count.pos, "COUNT cannot be combined with TOP")
		}
	}
	if len(params) > MaxParams && err == nil {
		err = limitErr("the query uses %d parameters; MaxParams allows %d", len(params), MaxParams)
	}
	q.params = slices.Sorted(func(yield func(string) bool) {
		for k := range params {
			if !yield(k) {
				return
			}
		}
	})
	return err
}

// Params returns the names (with '@') of the parameters the query uses.
func (q *Query) Params() []string { return slices.Clone(q.params) }

// String returns the query text.
func (q *Query) String() string { return q.src }
