package query

import (
	"slices"
	"strings"
)

// Plan says how the engine can serve a bound query from its secondary
// indexes (a set of items per term: see Terms).
type Plan struct {
	// Access selects candidate items from the index; nil means scan every
	// live item.
	Access *Access
	// Exact: the items Access selects (or, with Access nil, all items) are
	// exactly those for which WHERE is true, so they need no re-check. True
	// when there is no WHERE.
	Exact bool
	// Order describes the ORDER BY path; nil without ORDER BY.
	Order *Order
}

// AccessKind is the kind of an Access node.
type AccessKind uint8

// The kinds of Access.
const (
	Eq     AccessKind = iota // items with a term (Path, k) for some k in Keys (a union)
	Range                    // items with a term at Path whose key is between Lo and Hi
	Prefix                   // items with a term at Path whose key starts with Keys[0]
	And                      // the intersection of Children
	Or                       // the union of Children
)

// KeyBound is one end of a Range.
type KeyBound struct {
	Key       string
	Inclusive bool // the bound itself is in the range
	Unbounded bool // no bound on this side at all (Key ignored); the planner never sets it
}

// Access is a node of an index access path.
type Access struct {
	Kind     AccessKind
	Path     string   // term path (Eq, Range, Prefix)
	Keys     []string // Eq: sorted, distinct; Prefix: one
	Lo, Hi   KeyBound // Range; the planner keeps both inside one kind's keys
	Children []*Access
}

// Order describes ORDER BY for the engine.
type Order struct {
	// Path is the term path of the ORDER BY property ("" when the path has
	// an array index and so no term path).
	Path string
	Desc bool
	// Indexed: Path is indexed, so the index lists, in key order, every
	// item whose ORDER BY value is a scalar. Items whose value is undefined
	// (sorted first), an array or an object (sorted after strings) are not
	// in it and must be added by the engine.
	Indexed bool
}

// Plan chooses index access for the WHERE clause, given which term paths
// the container indexes. Rules: path = scalar → Eq; path IN (scalars) → Eq
// with many keys; < <= > >= against a number or string → Range within that
// kind's keys; STARTSWITH(path, string) (case-sensitive) → Prefix;
// ARRAY_CONTAINS(path, scalar) → Eq on path/[]; a bare path (WHERE c.flag)
// → Eq true; AND → And of its indexable sides (the rest is re-checked); OR
// → Or only if both sides are indexable. Parameters count as constants.
// Paths with array indexes, NOT, !=, IS_DEFINED, other functions and
// comparisons between paths are not indexable.
func (b *Bound) Plan(indexed func(termPath string) bool) *Plan {
	// One allocation holds the plan and its Order: a query without a WHERE
	// (a TOP n) allocates nothing else here.
	po := &struct {
		p Plan
		o Order
	}{p: Plan{Exact: true}}
	p := &po.p
	if b.where != nil {
		pl := planner{indexed: indexed}
		p.Access, p.Exact = pl.plan(b.where)
		if p.Access == nil {
			p.Exact = false
		}
	}
	if b.order != nil {
		o := &po.o
		o.Desc = b.order.desc
		if b.order.hasTerm {
			o.Path = b.order.termPath
			o.Indexed = indexed(o.Path)
		}
		p.Order = o
	}
	return p
}

// planner plans one WHERE tree.
type planner struct {
	indexed func(string) bool
}

// plan returns the access for e (nil: not indexable) and whether it is
// exact: selects exactly the items for which e is true.
func (pl planner) plan(e expr) (*Access, bool) {
	switch x := e.(type) {
	case *andExpr:
		// The indexable operands are intersected; the rest is re-checked.
		var kids []*Access
		exact := true
		for _, x := range x.xs {
			a, e := pl.plan(x)
			if a == nil {
				exact = false
				continue
			}
			kids = append(kids, a)
			exact = exact && e
		}
		return combine(And, mergeRanges(kids)), exact
	case *orExpr:
		// Every operand must be indexable, or the OR needs a scan.
		kids := make([]*Access, 0, len(x.xs))
		exact := true
		for _, x := range x.xs {
			a, e := pl.plan(x)
			if a == nil {
				return nil, false
			}
			kids = append(kids, a)
			exact = exact && e
		}
		return combine(Or, kids), exact
	case *cmpExpr:
		return pl.compare(x)
	case *inExpr:
		path, ok := pl.path(x.x)
		if !ok {
			return nil, false
		}
		var keys []string
		for _, m := range x.list {
			c, isConst := m.(*constExpr)
			if !isConst {
				return nil, false
			}
			if c.v.kind == Undefined {
				continue // never equal to anything
			}
			k, ok := Key(c.v)
			if !ok {
				return nil, false
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return &Access{Kind: Eq, Path: path, Keys: slices.Compact(keys)}, true
	case *callExpr:
		return pl.call(x)
	case *pathExpr:
		path, ok := pl.path(x)
		if !ok {
			return nil, false
		}
		return &Access{Kind: Eq, Path: path, Keys: []string{string(tagTrue)}}, true
	}
	return nil, false
}

// mergeRanges folds the Range kids of an And that share a path into one
// range, their intersection: c.n >= 10 AND c.n < 20 reads the keys between
// the two bounds, not every key above 10 and every key below 20. Ranges of
// different kinds (a number and a string bound) stay apart: their
// intersection is empty, and the And of the two says so plainly.
func mergeRanges(kids []*Access) []*Access {
	out := kids[:0]
	type pathKind struct {
		path string
		tag  byte // the planner starts every range at its kind's tag
	}
	first := map[pathKind]int{} // index in out of the merged range
	for _, a := range kids {
		if a.Kind != Range {
			out = append(out, a)
			continue
		}
		at := pathKind{a.Path, a.Lo.Key[0]}
		i, ok := first[at]
		if !ok {
			first[at] = len(out)
			out = append(out, a)
			continue
		}
		m := *out[i]
		if lo := a.Lo; lo.Key > m.Lo.Key || (lo.Key == m.Lo.Key && !lo.Inclusive) {
			m.Lo = lo
		}
		if hi := a.Hi; hi.Key < m.Hi.Key || (hi.Key == m.Hi.Key && !hi.Inclusive) {
			m.Hi = hi
		}
		out[i] = &m
	}
	return out
}

// combine builds an And/Or node of kids, flattening children of the same
// kind, in time linear in the children; nil for none, the child for one.
func combine(kind AccessKind, kids []*Access) *Access {
	switch len(kids) {
	case 0:
		return nil
	case 1:
		return kids[0]
	}
	a := &Access{Kind: kind}
	for _, c := range kids {
		if c.Kind == kind {
			a.Children = append(a.Children, c.Children...)
		} else {
			a.Children = append(a.Children, c)
		}
	}
	return a
}

// path returns the term path of e if e is an indexed property path.
func (pl planner) path(e expr) (string, bool) {
	p, ok := e.(*pathExpr)
	if !ok {
		return "", false
	}
	tp, ok := termPathOf(p)
	if !ok || !pl.indexed(tp) {
		return "", false
	}
	return tp, true
}

// termPathOf returns the term path of a property path without array indexes.
func termPathOf(p *pathExpr) (string, bool) {
	if len(p.segs) == 0 {
		return "", false
	}
	var b []byte
	for _, s := range p.segs {
		if s.isIndex {
			return "", false
		}
		b = appendSegment(b, s.name)
	}
	return string(b), true
}

func (pl planner) compare(x *cmpExpr) (*Access, bool) {
	op, l, r := x.op, x.l, x.r
	if _, ok := l.(*constExpr); ok {
		op, l, r = op.flip(), r, l
	}
	c, ok := r.(*constExpr)
	if !ok {
		return nil, false
	}
	path, ok := pl.path(l)
	if !ok {
		return nil, false
	}
	k, ok := Key(c.v)
	if !ok {
		return nil, false
	}
	if op == opEq {
		return &Access{Kind: Eq, Path: path, Keys: []string{k}}, true
	}
	if op == opNe || (c.v.kind != Number && c.v.kind != String) {
		return nil, false
	}
	tag := k[0]
	a := &Access{Kind: Range, Path: path,
		Lo: KeyBound{Key: string(tag), Inclusive: true},
		Hi: KeyBound{Key: string(tag + 1)},
	}
	switch op {
	case opLt:
		a.Hi = KeyBound{Key: k}
	case opLe:
		a.Hi = KeyBound{Key: k, Inclusive: true}
	case opGt:
		a.Lo = KeyBound{Key: k}
	case opGe:
		a.Lo = KeyBound{Key: k, Inclusive: true}
	}
	return a, true
}

func (pl planner) call(x *callExpr) (*Access, bool) {
	consts := make([]Value, len(x.args))
	for i, a := range x.args[1:] {
		c, ok := a.(*constExpr)
		if !ok {
			return nil, false
		}
		consts[i+1] = c.v
	}
	switch x.fn.name {
	case "STARTSWITH":
		if consts[1].kind != String || (len(consts) == 3 && (consts[2].kind != Bool || consts[2].AsBool())) {
			return nil, false
		}
		path, ok := pl.path(x.args[0])
		if !ok {
			return nil, false
		}
		k, _ := Key(consts[1])
		return &Access{Kind: Prefix, Path: path, Keys: []string{k}}, true
	case "ARRAY_CONTAINS":
		if len(consts) == 3 && consts[2].kind != Bool {
			return nil, false
		}
		k, ok := Key(consts[1])
		if !ok {
			return nil, false
		}
		p, isPath := x.args[0].(*pathExpr)
		if !isPath {
			return nil, false
		}
		tp, ok := termPathOf(p)
		if !ok || !pl.indexed(tp+"/[]") {
			return nil, false
		}
		return &Access{Kind: Eq, Path: tp + "/[]", Keys: []string{k}}, true
	}
	return nil, false
}

// String explains the plan, one line per node, e.g.
//
//	index range /n (5, +inf)
//	re-check WHERE
//	order by /n desc (index)
func (p *Plan) String() string {
	var b strings.Builder
	if p.Access == nil {
		b.WriteString("scan\n")
	} else {
		p.Access.explain(&b, 0)
	}
	if !p.Exact {
		b.WriteString("re-check WHERE\n")
	}
	if o := p.Order; o != nil {
		b.WriteString("order by ")
		b.WriteString(o.Path)
		if o.Desc {
			b.WriteString(" desc")
		} else {
			b.WriteString(" asc")
		}
		if o.Indexed {
			b.WriteString(" (index)\n")
		} else {
			b.WriteString(" (sort)\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func (a *Access) explain(b *strings.Builder, depth int) {
	b.WriteString(strings.Repeat("  ", depth))
	switch a.Kind {
	case And, Or:
		if a.Kind == And {
			b.WriteString("and\n")
		} else {
			b.WriteString("or\n")
		}
		for _, c := range a.Children {
			c.explain(b, depth+1)
		}
		return
	case Eq:
		b.WriteString("index eq " + a.Path)
		if len(a.Keys) == 1 {
			b.WriteString(" = " + keyText(a.Keys[0]))
		} else {
			b.WriteString(" in (")
			for i, k := range a.Keys {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(keyText(k))
			}
			b.WriteString(")")
		}
	case Range:
		// The planner keeps a range inside one kind's keys; a bound that is
		// that kind's bare tag (or the next kind's) is shown as infinity.
		tag := byte(0)
		for _, k := range []string{a.Lo.Key, a.Hi.Key} {
			if len(k) > 1 || (tag == 0 && len(k) == 1) {
				tag = k[0]
			}
		}
		loInf := a.Lo.Unbounded || (len(a.Lo.Key) == 1 && a.Lo.Key[0] == tag && a.Lo.Inclusive)
		hiInf := a.Hi.Unbounded || (len(a.Hi.Key) == 1 && a.Hi.Key[0] == tag+1 && !a.Hi.Inclusive)
		b.WriteString("index range " + a.Path + " ")
		switch {
		case loInf:
			b.WriteString("(-inf")
		case a.Lo.Inclusive:
			b.WriteString("[" + keyText(a.Lo.Key))
		default:
			b.WriteString("(" + keyText(a.Lo.Key))
		}
		b.WriteString(", ")
		switch {
		case hiInf:
			b.WriteString("+inf)")
		case a.Hi.Inclusive:
			b.WriteString(keyText(a.Hi.Key) + "]")
		default:
			b.WriteString(keyText(a.Hi.Key) + ")")
		}
	case Prefix:
		b.WriteString("index prefix " + a.Path + " " + keyText(a.Keys[0]))
	}
	b.WriteString("\n")
}

// keyText renders a key as the JSON value it encodes.
func keyText(k string) string {
	if v, ok := keyValue(k); ok {
		return v.String()
	}
	return strings.TrimPrefix(strings.TrimSuffix(StringValue(k).String(), `"`), `"`)
}
