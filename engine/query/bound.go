package query

import (
	"fmt"
	"strings"
)

// Bound is a Query with its parameters substituted: what the engine runs.
// It is immutable and safe for concurrent use.
type Bound struct {
	q     *Query
	where expr // nil: no WHERE
	sel   selectClause
	order *orderClause
	skip  int64
	limit int64 // -1: none
}

// Bind substitutes params (keys are names with the '@', e.g. "@id") into
// the query. Every parameter the query uses must be given and every one
// given must be used; TOP, OFFSET and LIMIT parameters must be integers
// >= 0. Errors match ErrInvalidQuery and name the parameter.
func (q *Query) Bind(params map[string]Value) (*Bound, error) {
	for _, name := range q.params {
		if _, ok := params[name]; !ok {
			return nil, fmt.Errorf("%w: parameter %s has no value", ErrInvalidQuery, name)
		}
	}
	if len(params) > len(q.params) {
		for name := range params {
			if !inSorted(q.params, name) {
				hint := ""
				if !strings.HasPrefix(name, "@") {
					hint = " (parameter names start with @)"
				}
				return nil, fmt.Errorf("%w: parameter %q is not used by the query%s", ErrInvalidQuery, name, hint)
			}
		}
	}
	b := &Bound{q: q, sel: q.sel, order: q.order, limit: -1}
	subst := func(e expr) (expr, error) {
		if e == nil {
			return nil, nil
		}
		return rewrite(e, func(x expr) (expr, error) {
			switch x := x.(type) {
			case *paramExpr:
				return &constExpr{v: params[x.name]}, nil
			case *arrayExpr:
				return foldConst(x), nil
			case *objectExpr:
				return foldConst(x), nil
			}
			return x, nil
		})
	}
	var err error
	if b.where, err = subst(q.where); err != nil {
		return nil, err
	}
	switch q.sel.kind {
	case selValue:
		b.sel.value, _ = subst(q.sel.value)
	case selCount:
		c, _ := subst(q.sel.count)
		b.sel.count = c.(*countExpr)
	case selItems:
		b.sel.items = make([]selectItem, len(q.sel.items))
		for i, it := range q.sel.items {
			e, _ := subst(it.e)
			b.sel.items[i] = selectItem{key: it.key, e: e}
		}
	}
	num := func(a *numArg) (int64, error) {
		if a.param == "" {
			return a.n, nil
		}
		n, ok := wholeNumber(params[a.param])
		if !ok {
			return 0, fmt.Errorf("%w: %s parameter %s is %s; it must be an integer >= 0", ErrInvalidQuery, a.what, a.param, params[a.param])
		}
		return n, nil
	}
	if q.top != nil {
		if b.limit, err = num(q.top); err != nil {
			return nil, err
		}
	}
	if q.offset != nil {
		if b.skip, err = num(q.offset); err != nil {
			return nil, err
		}
		if b.limit, err = num(q.limit); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func inSorted(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// foldConst turns an array or object literal whose members are all
// constants into one constant, so that the planner sees it as one.
func foldConst(e expr) expr {
	var all []expr
	switch x := e.(type) {
	case *arrayExpr:
		all = x.elems
	case *objectExpr:
		all = x.vals
	}
	for _, a := range all {
		if _, ok := a.(*constExpr); !ok {
			return e
		}
	}
	return &constExpr{v: e.eval(Value{})}
}

// Query returns the parsed query b was bound from.
func (b *Bound) Query() *Query { return b.q }

// Match reports whether doc satisfies the WHERE clause: the predicate is
// exactly true (false, undefined and non-booleans exclude it). True when
// there is no WHERE.
func (b *Bound) Match(doc Value) bool {
	if b.where == nil {
		return true
	}
	return b.where.eval(doc).AsBool()
}

// HasWhere reports whether the query has a WHERE clause.
func (b *Bound) HasWhere() bool { return b.where != nil }

// SelectsAll reports whether the query is SELECT * (Project returns the
// document itself), so that the engine may return the stored body as is.
func (b *Bound) SelectsAll() bool { return b.sel.kind == selStar }

// Project computes what the query emits for a matching doc. ok is false
// when it emits nothing: SELECT VALUE of an undefined value. SELECT a, b
// gives an object of the items that are defined (maybe {}). Not for COUNT
// queries (use CountItem and CountResult).
func (b *Bound) Project(doc Value) (Value, bool) {
	switch b.sel.kind {
	case selStar:
		return doc, true
	case selValue:
		v := b.sel.value.eval(doc)
		return v, v.kind != Undefined
	case selItems:
		members := make([]Member, 0, len(b.sel.items))
		for _, it := range b.sel.items {
			if v := it.e.eval(doc); v.kind != Undefined {
				members = append(members, Member{Key: it.key, Value: v})
			}
		}
		return ObjectValue(members), true
	}
	return Value{}, false
}

// IsCount reports whether the query is SELECT [VALUE] COUNT(...).
func (b *Bound) IsCount() bool { return b.sel.kind == selCount }

// CountItem reports whether a doc adds one to COUNT: its argument is
// defined for doc (COUNT(1) and COUNT(c) count every item). It does not
// evaluate WHERE: call it only for items that Match (or that an exact
// index plan returned).
func (b *Bound) CountItem(doc Value) bool {
	if b.sel.kind != selCount {
		return false
	}
	return b.sel.count.arg.eval(doc).kind != Undefined
}

// CountNeedsDocs reports whether CountItem depends on the document. When
// false (COUNT(1), COUNT(c), COUNT('x')), every matching item counts, so a
// count served by an exact index plan needs no document reads.
func (b *Bound) CountNeedsDocs() bool {
	if b.sel.kind != selCount {
		return false
	}
	switch a := b.sel.count.arg.(type) {
	case *constExpr:
		return a.v.kind == Undefined
	case *pathExpr:
		return len(a.segs) > 0
	}
	return true
}

// CountResult is the single result of a COUNT query that counted n items:
// n for SELECT VALUE COUNT, {"<key>": n} otherwise.
func (b *Bound) CountResult(n int64) Value {
	v := NumberValue(float64(n))
	if b.sel.key == "" {
		return v
	}
	return ObjectValue([]Member{{Key: b.sel.key, Value: v}})
}

// OrderBy returns the ORDER BY path as segments from the root (array
// indexes in decimal; OrderKey is authoritative), whether it is descending,
// and ok false when the query has no ORDER BY. Results are sorted by
// OrderKey with Compare, ties broken by id ascending (see CompareOrder).
func (b *Bound) OrderBy() (path []string, desc bool, ok bool) {
	if b.order == nil {
		return nil, false, false
	}
	return segNames(b.order.path.segs), b.order.desc, true
}

// OrderKey returns the value at the ORDER BY path of doc (maybe undefined).
func (b *Bound) OrderKey(doc Value) Value {
	if b.order == nil {
		return Value{}
	}
	return b.order.path.eval(doc)
}

// CompareOrder is the result order of an ORDER BY query: by key with
// Compare (reversed when desc), then by id ascending whatever desc is.
func CompareOrder(aKey Value, aID string, bKey Value, bID string, desc bool) int {
	c := Compare(aKey, bKey)
	if desc {
		c = -c
	}
	if c != 0 {
		return c
	}
	return strings.Compare(aID, bID)
}

// Window returns how many results to skip and how many to return at most
// (-1: no limit), from TOP n or OFFSET s LIMIT l. It applies after ORDER BY
// and counts emitted results only: an item for which Project returns false
// is neither skipped nor returned.
func (b *Bound) Window() (skip, limit int64) { return b.skip, b.limit }
