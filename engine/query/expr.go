package query

import "strconv"

// expr is a node of a parsed expression. eval never fails: what cannot be
// computed (a missing property, a comparison across types) is undefined.
type expr interface {
	eval(doc Value) Value
}

// constExpr is a literal, or a parameter once bound.
type constExpr struct{ v Value }

// paramExpr is @name before Bind replaces it with a constExpr.
type paramExpr struct {
	name string // with the '@'
	pos  int
}

// pathExpr reads a property path from the document (the FROM alias).
type pathExpr struct {
	root string // the identifier the path starts with; must be the FROM alias
	segs []pathSeg
	pos  int
}

// pathSeg is one step of a path: a property name or an array index.
type pathSeg struct {
	name    string
	index   int
	isIndex bool
}

// cmpOp is a comparison operator.
type cmpOp uint8

const (
	opEq cmpOp = iota
	opNe
	opLt
	opLe
	opGt
	opGe
)

var cmpOpNames = [...]string{"=", "!=", "<", "<=", ">", ">="}

// flip returns the operator with its operands swapped: 5 < x is x > 5.
func (op cmpOp) flip() cmpOp {
	switch op {
	case opLt:
		return opGt
	case opLe:
		return opGe
	case opGt:
		return opLt
	case opGe:
		return opLe
	}
	return op
}

type cmpExpr struct {
	op   cmpOp
	l, r expr
}

// andExpr and orExpr hold a whole chain (a AND b AND c) as one node, so a
// long chain costs neither recursion depth nor repeated copying.
type andExpr struct{ xs []expr }
type orExpr struct{ xs []expr }
type notExpr struct{ x expr }

// inExpr is x IN (list...): true if x equals a member (NOT IN is a notExpr
// around it).
type inExpr struct {
	x    expr
	list []expr
}

// callExpr calls a built-in scalar function.
type callExpr struct {
	fn   *function
	args []expr
}

// countExpr is COUNT(arg); it only appears as the whole SELECT.
type countExpr struct {
	arg expr
	pos int
}

type arrayExpr struct{ elems []expr }

type objectExpr struct {
	keys []string
	vals []expr
}

func (e *constExpr) eval(Value) Value { return e.v }
func (e *paramExpr) eval(Value) Value { return Value{} }
func (e *countExpr) eval(Value) Value { return Value{} }

func (e *pathExpr) eval(doc Value) Value { return walkPath(doc, e.segs) }

// walkPath follows segs from v; undefined as soon as a step is missing.
func walkPath(v Value, segs []pathSeg) Value {
	for _, s := range segs {
		if s.isIndex {
			v = v.Index(s.index)
		} else {
			v = v.Get(s.name)
		}
		if v.kind == Undefined {
			return v
		}
	}
	return v
}

func (e *cmpExpr) eval(doc Value) Value { return compareOp(e.op, e.l.eval(doc), e.r.eval(doc)) }

// compareOp applies a comparison with Cosmos DB's rules: undefined when
// either side is undefined or the kinds differ; = and != compare arrays and
// objects deeply; < <= > >= are undefined for arrays and objects and
// otherwise use Compare (null: only equal; false < true; numbers; strings by
// UTF-8 bytes).
func compareOp(op cmpOp, a, b Value) Value {
	if a.kind == Undefined || a.kind != b.kind {
		return Value{}
	}
	switch op {
	case opEq:
		return BoolValue(Equal(a, b))
	case opNe:
		return BoolValue(!Equal(a, b))
	}
	if a.kind == Array || a.kind == Object {
		return Value{}
	}
	c := Compare(a, b)
	switch op {
	case opLt:
		return BoolValue(c < 0)
	case opLe:
		return BoolValue(c <= 0)
	case opGt:
		return BoolValue(c > 0)
	default:
		return BoolValue(c >= 0)
	}
}

// Three-valued logic: false AND x = false, true OR x = true, anything else
// that is not a boolean makes the result undefined. Over a chain: AND is
// false if any operand is false, else true if all are true, else
// undefined; OR likewise with true. Operands are evaluated left to right
// and stop at the first deciding one.
func (e *andExpr) eval(doc Value) Value { return chainEval(e.xs, doc, 0) }

func (e *orExpr) eval(doc Value) Value { return chainEval(e.xs, doc, 1) }

// chainEval evaluates an AND (decider false, 0) or OR (decider true, 1)
// chain.
func chainEval(xs []expr, doc Value, decider float64) Value {
	allBool := true
	for _, x := range xs {
		v := x.eval(doc)
		if v.kind == Bool && v.num == decider {
			return v
		}
		if v.kind != Bool {
			allBool = false
		}
	}
	if allBool {
		return BoolValue(decider == 0)
	}
	return Value{}
}

func (e *notExpr) eval(doc Value) Value {
	x := e.x.eval(doc)
	if x.kind != Bool {
		return Value{}
	}
	return BoolValue(x.num == 0)
}

// IN is a membership test: undefined when x is undefined, else true if x
// equals (Equal: same kind, deep for arrays and objects) a member and false
// otherwise, members of other kinds included. So NOT IN keeps every item
// whose value is defined and not in the list.
func (e *inExpr) eval(doc Value) Value {
	x := e.x.eval(doc)
	if x.kind == Undefined {
		return Value{}
	}
	for _, m := range e.list {
		if Equal(x, m.eval(doc)) {
			return BoolValue(true)
		}
	}
	return BoolValue(false)
}

func (e *callExpr) eval(doc Value) Value {
	var buf [3]Value
	args := buf[:0]
	for _, a := range e.args {
		args = append(args, a.eval(doc))
	}
	return e.fn.call(args)
}

func (e *arrayExpr) eval(doc Value) Value {
	out := make([]Value, 0, len(e.elems))
	for _, x := range e.elems {
		if v := x.eval(doc); v.kind != Undefined { // Cosmos drops undefined elements
			out = append(out, v)
		}
	}
	return ArrayValue(out)
}

func (e *objectExpr) eval(doc Value) Value {
	out := make([]Member, 0, len(e.keys))
	for i, k := range e.keys {
		if v := e.vals[i].eval(doc); v.kind != Undefined {
			out = append(out, Member{Key: k, Value: v})
		}
	}
	return ObjectValue(out)
}

// rewrite rebuilds e bottom-up, replacing each node by f(node) after its
// children were rewritten. It is how Bind substitutes parameters.
func rewrite(e expr, f func(expr) (expr, error)) (expr, error) {
	var err error
	sub := func(x expr) expr {
		if err != nil || x == nil {
			return x
		}
		var y expr
		y, err = rewrite(x, f)
		return y
	}
	subs := func(xs []expr) []expr {
		out := make([]expr, len(xs))
		for i, x := range xs {
			out[i] = sub(x)
		}
		return out
	}
	switch x := e.(type) {
	case *cmpExpr:
		e = &cmpExpr{op: x.op, l: sub(x.l), r: sub(x.r)}
	case *andExpr:
		e = &andExpr{xs: subs(x.xs)}
	case *orExpr:
		e = &orExpr{xs: subs(x.xs)}
	case *notExpr:
		e = &notExpr{x: sub(x.x)}
	case *inExpr:
		e = &inExpr{x: sub(x.x), list: subs(x.list)}
	case *callExpr:
		e = &callExpr{fn: x.fn, args: subs(x.args)}
	case *countExpr:
		e = &countExpr{arg: sub(x.arg), pos: x.pos}
	case *arrayExpr:
		e = &arrayExpr{elems: subs(x.elems)}
	case *objectExpr:
		e = &objectExpr{keys: x.keys, vals: subs(x.vals)}
	}
	if err != nil {
		return nil, err
	}
	return f(e)
}

// visit calls f on e and every node under it, parents first.
func visit(e expr, f func(expr)) {
	if e == nil {
		return
	}
	f(e)
	switch x := e.(type) {
	case *cmpExpr:
		visit(x.l, f)
		visit(x.r, f)
	case *andExpr:
		for _, a := range x.xs {
			visit(a, f)
		}
	case *orExpr:
		for _, a := range x.xs {
			visit(a, f)
		}
	case *notExpr:
		visit(x.x, f)
	case *inExpr:
		visit(x.x, f)
		for _, m := range x.list {
			visit(m, f)
		}
	case *callExpr:
		for _, a := range x.args {
			visit(a, f)
		}
	case *countExpr:
		visit(x.arg, f)
	case *arrayExpr:
		for _, a := range x.elems {
			visit(a, f)
		}
	case *objectExpr:
		for _, a := range x.vals {
			visit(a, f)
		}
	}
}

// segNames renders a path's segments as strings (array indexes in decimal).
func segNames(segs []pathSeg) []string {
	out := make([]string, len(segs))
	for i, s := range segs {
		if s.isIndex {
			out[i] = strconv.Itoa(s.index)
		} else {
			out[i] = s.name
		}
	}
	return out
}
