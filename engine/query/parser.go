package query

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// reserved are the keywords that cannot be an alias or a path's root.
var reserved = map[string]bool{
	"SELECT": true, "FROM": true, "WHERE": true, "AND": true, "OR": true, "NOT": true,
	"IN": true, "ORDER": true, "BY": true, "ASC": true, "DESC": true, "TOP": true,
	"VALUE": true, "OFFSET": true, "LIMIT": true, "AS": true, "TRUE": true, "FALSE": true,
	"NULL": true, "BETWEEN": true, "JOIN": true, "GROUP": true, "DISTINCT": true,
	"EXISTS": true, "LIKE": true, "HAVING": true, "ARRAY": true,
}

// Parse parses a query of the Cosmos DB NoSQL subset described in the
// package documentation. A grammar error is a *SyntaxError (ErrSyntax); a
// well-formed query that cannot be run is an error matching
// ErrInvalidQuery.
//
// Query text is held to the limits in limits.go (MaxLength, MaxDepth,
// MaxTerms, MaxParams); a query over one fails with an error matching
// ErrLimit (and so ErrInvalidQuery) that names the limit, and costs no more
// than reading that far.
func Parse(sql string) (*Query, error) { return ParseContext(context.Background(), sql) }

// ParseContext is Parse that stops soon after ctx ends (it checks ctx every
// ctxCheckTokens tokens), returning ctx's error.
func ParseContext(ctx context.Context, sql string) (*Query, error) {
	if len(sql) > MaxLength {
		return nil, limitErr("the query text is %d bytes; MaxLength allows %d", len(sql), MaxLength)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := &parser{src: sql, lx: lexer{src: sql}, ctx: ctx}
	p.advance()
	q := p.query()
	if p.err != nil {
		return nil, p.err
	}
	if err := q.check(); err != nil {
		return nil, err
	}
	return q, nil
}

// parser is a recursive-descent parser; the first error stops it.
type parser struct {
	src string
	lx  lexer
	tok token
	err error
	// unnamed counts select items without a natural name ($1, $2, ...).
	unnamed int
	// depth is how deeply expressions nest where the parser is; terms
	// counts the operands read so far (see MaxDepth, MaxTerms).
	depth int
	terms int
	// ctx ends the parse early; tokens counts the tokens read, to check
	// it every ctxCheckTokens.
	ctx    context.Context
	tokens int
}

// ctxCheckTokens is how many tokens the parser reads between two checks of
// its context: a few microseconds of work.
const ctxCheckTokens = 256

// enter notes one more level of nesting; it reports false (and records an
// ErrLimit) past MaxDepth. Each enter that returns true is paired with leave.
func (p *parser) enter() bool {
	if p.depth >= MaxDepth {
		if p.err == nil {
			p.err = limitAt(p.src, p.tok.pos, "expressions nest deeper than MaxDepth (%d)", MaxDepth)
		}
		return false
	}
	p.depth++
	return true
}

func (p *parser) leave() { p.depth-- }

// term counts one operand (a literal, parameter or path) against MaxTerms.
func (p *parser) term() {
	p.terms++
	if p.terms > MaxTerms && p.err == nil {
		p.err = limitAt(p.src, p.tok.pos, "the query has more than MaxTerms (%d) operands", MaxTerms)
	}
}

func (p *parser) advance() {
	if p.tokens++; p.tokens%ctxCheckTokens == 0 && p.err == nil {
		p.err = p.ctx.Err()
	}
	if p.err != nil {
		p.tok = token{kind: tEOF, pos: len(p.src)}
		return
	}
	p.tok = p.lx.next()
	if p.tok.kind == tError {
		p.failf("%s", p.tok.text)
	}
}

// failf records a syntax error at the current token.
func (p *parser) failf(format string, args ...any) {
	if p.err != nil {
		return
	}
	line, col := lineCol(p.src, p.tok.pos)
	p.err = &SyntaxError{Pos: p.tok.pos, Line: line, Col: col, Token: p.tok.raw, Msg: fmt.Sprintf(format, args...)}
}

// invalidf records an ErrInvalidQuery at pos.
func (p *parser) invalidf(pos int, format string, args ...any) {
	if p.err == nil {
		p.err = invalidAt(p.src, pos, format, args...)
	}
}

func (p *parser) isKeyword(kw string) bool {
	return p.tok.kind == tIdent && strings.EqualFold(p.tok.text, kw)
}

func (p *parser) isPunct(s string) bool { return p.tok.kind == tPunct && p.tok.text == s }

func (p *parser) expectKeyword(kw string) {
	if !p.isKeyword(kw) {
		p.failf("expected %s", kw)
		return
	}
	p.advance()
}

func (p *parser) expectPunct(s string) {
	if !p.isPunct(s) {
		p.failf("expected %q", s)
		return
	}
	p.advance()
}

func (p *parser) query() *Query {
	q := &Query{src: p.src}
	p.expectKeyword("SELECT")
	if p.isKeyword("DISTINCT") {
		p.failf("DISTINCT is not supported")
	}
	if p.isKeyword("TOP") {
		p.advance()
		q.top = p.numArg("TOP")
	}
	p.selectList(&q.sel)
	p.expectKeyword("FROM")
	q.alias = p.fromAlias()
	if p.isKeyword("JOIN") || p.isKeyword("IN") {
		p.failf("%s is not supported", strings.ToUpper(p.tok.text))
	}
	if p.isKeyword("WHERE") {
		p.advance()
		q.where = p.expr()
	}
	if p.isKeyword("GROUP") {
		p.failf("GROUP BY is not supported")
	}
	if p.isKeyword("ORDER") {
		p.advance()
		p.expectKeyword("BY")
		pos := p.tok.pos
		e := p.unary()
		path, ok := e.(*pathExpr)
		if p.err == nil && (!ok || len(path.segs) == 0) {
			p.invalidf(pos, "ORDER BY needs a property path such as %s.name", q.alias)
		}
		q.order = &orderClause{path: path}
		if path != nil {
			q.order.termPath, q.order.hasTerm = termPathOf(path)
		}
		switch {
		case p.isKeyword("ASC"):
			p.advance()
		case p.isKeyword("DESC"):
			q.order.desc = true
			p.advance()
		}
		if p.isPunct(",") {
			p.failf("ORDER BY on more than one path is not supported")
		}
	}
	if p.isKeyword("OFFSET") {
		p.advance()
		q.offset = p.numArg("OFFSET")
		p.expectKeyword("LIMIT")
		q.limit = p.numArg("LIMIT")
	}
	if p.err == nil && p.tok.kind != tEOF {
		p.failf("expected the end of the query")
	}
	return q
}

// fromAlias parses what follows FROM: a container name, optionally
// followed by [AS] alias, as Cosmos DB accepts (FROM c, FROM root r, FROM
// c AS x). The container name itself means nothing here (a container
// queries itself); the alias, or else the name, is what paths start with.
func (p *parser) fromAlias() string {
	ident := func(what string) string {
		if p.tok.kind != tIdent || reserved[strings.ToUpper(p.tok.text)] {
			p.failf("expected %s", what)
			return ""
		}
		t := p.tok.text
		p.advance()
		return t
	}
	alias := ident("the FROM alias (an identifier such as c, or a container name and an alias)")
	switch {
	case p.isKeyword("AS"):
		p.advance()
		alias = ident("the alias after AS (an identifier such as c)")
	case p.tok.kind == tIdent && !reserved[strings.ToUpper(p.tok.text)]:
		alias = ident("the alias")
	}
	return alias
}

// numArg parses the argument of TOP/OFFSET/LIMIT.
func (p *parser) numArg(what string) *numArg {
	a := &numArg{what: what, pos: p.tok.pos}
	switch p.tok.kind {
	case tParam:
		a.param = p.tok.text
	case tNumber:
		// An integer literal is read exactly (a float64 cannot hold
		// 9223372036854775807); anything else goes by its value.
		n, err := strconv.ParseInt(p.tok.raw, 10, 64)
		ok := err == nil
		if !ok && strings.Trim(p.tok.raw, "0123456789") != "" {
			n, ok = wholeNumber(NumberValue(p.tok.num))
		}
		if !ok {
			p.invalidf(p.tok.pos, "%s needs an integer from 0 to %d, not %s", what, int64(math.MaxInt64), p.tok.raw)
		}
		a.n = n
	default:
		p.failf("expected a number or a parameter after %s", what)
	}
	p.advance()
	return a
}

// wholeNumber converts a number that is an integer from 0 to
// math.MaxInt64. 2^63 is the float64 that math.MaxInt64 rounds to (a
// parameter given as int64(math.MaxInt64) arrives as it), so it stands for
// math.MaxInt64; larger numbers are refused.
func wholeNumber(v Value) (int64, bool) {
	if v.kind != Number || v.num < 0 || v.num != math.Trunc(v.num) || v.num > 1<<63 {
		return 0, false
	}
	if v.num == 1<<63 {
		return math.MaxInt64, true
	}
	return int64(v.num), true
}

func (p *parser) selectList(sel *selectClause) {
	switch {
	case p.isPunct("*"):
		sel.kind = selStar
		p.advance()
		return
	case p.isKeyword("VALUE"):
		p.advance()
		e := p.expr()
		if c, ok := e.(*countExpr); ok {
			sel.kind, sel.count = selCount, c
			return
		}
		sel.kind, sel.value = selValue, e
		return
	}
	sel.kind = selItems
	for p.err == nil {
		e := p.expr()
		key := ""
		if p.isKeyword("AS") {
			p.advance()
			if p.tok.kind != tIdent {
				p.failf("expected a name after AS")
			}
			key = p.tok.text
			p.advance()
		}
		if c, ok := e.(*countExpr); ok && len(sel.items) == 0 && !p.isPunct(",") {
			if key == "" {
				key = "$1"
			}
			sel.kind, sel.count, sel.key = selCount, c, key
			return
		}
		if key == "" {
			key = p.itemKey(e)
		}
		sel.items = append(sel.items, selectItem{key: key, e: e})
		if !p.isPunct(",") {
			return
		}
		p.advance()
	}
}

// itemKey names a select item without AS: a path's last property name, the
// alias itself, else $1, $2, ... as Cosmos DB does.
func (p *parser) itemKey(e expr) string {
	if path, ok := e.(*pathExpr); ok {
		if len(path.segs) == 0 {
			return path.root
		}
		if last := path.segs[len(path.segs)-1]; !last.isIndex {
			return last.name
		}
	}
	p.unnamed++
	return "$" + strconv.Itoa(p.unnamed)
}

// Expression grammar, loosest first:
//
//	expr    = and { OR and }
//	and     = not { AND not }
//	not     = NOT not | compare
//	compare = unary [ op unary | [NOT] IN ( expr, ... ) | [NOT] BETWEEN unary AND unary ]
//	unary   = - number | primary
//
// A chain of ANDs (or ORs) becomes one node with a list of operands. expr
// and NOT are where nesting deepens, so they count it against MaxDepth.
func (p *parser) expr() expr {
	if !p.enter() {
		return &constExpr{}
	}
	defer p.leave()
	l := p.and()
	if p.err != nil || !p.isKeyword("OR") {
		return l
	}
	xs := []expr{l}
	for p.err == nil && p.isKeyword("OR") {
		p.advance()
		xs = append(xs, p.and())
	}
	return &orExpr{xs: xs}
}

func (p *parser) and() expr {
	l := p.not()
	if p.err != nil || !p.isKeyword("AND") {
		return l
	}
	xs := []expr{l}
	for p.err == nil && p.isKeyword("AND") {
		p.advance()
		xs = append(xs, p.not())
	}
	return &andExpr{xs: xs}
}

func (p *parser) not() expr {
	if p.isKeyword("NOT") {
		if !p.enter() {
			return &constExpr{}
		}
		defer p.leave()
		p.advance()
		return &notExpr{x: p.not()}
	}
	return p.compare()
}

var cmpOps = map[string]cmpOp{"=": opEq, "!=": opNe, "<>": opNe, "<": opLt, "<=": opLe, ">": opGt, ">=": opGe}

func (p *parser) compare() expr {
	l := p.unary()
	if p.err != nil {
		return l
	}
	if p.tok.kind == tPunct {
		if op, ok := cmpOps[p.tok.text]; ok {
			p.advance()
			return &cmpExpr{op: op, l: l, r: p.unary()}
		}
	}
	negate := false
	if p.isKeyword("NOT") {
		negate = true
		p.advance()
		if !p.isKeyword("IN") && !p.isKeyword("BETWEEN") {
			p.failf("expected IN or BETWEEN after NOT")
			return l
		}
	}
	var e expr
	switch {
	case p.isKeyword("IN"):
		p.advance()
		p.expectPunct("(")
		in := &inExpr{x: l}
		for p.err == nil {
			in.list = append(in.list, p.unary())
			if !p.isPunct(",") {
				break
			}
			p.advance()
		}
		p.expectPunct(")")
		e = in
	case p.isKeyword("BETWEEN"):
		p.advance()
		lo := p.unary()
		p.expectKeyword("AND")
		hi := p.unary()
		e = &andExpr{xs: []expr{&cmpExpr{op: opGe, l: l, r: lo}, &cmpExpr{op: opLe, l: l, r: hi}}}
	default:
		return l
	}
	if negate {
		e = &notExpr{x: e}
	}
	return e
}

func (p *parser) unary() expr {
	if p.isPunct("-") {
		p.advance()
		if p.tok.kind != tNumber {
			p.failf("expected a number after '-' (arithmetic is not supported)")
			return &constExpr{}
		}
		v := NumberValue(-p.tok.num)
		p.term()
		p.advance()
		return &constExpr{v: v}
	}
	return p.primary()
}

func (p *parser) primary() expr {
	t := p.tok
	switch t.kind {
	case tNumber:
		p.term()
		p.advance()
		return &constExpr{v: NumberValue(t.num)}
	case tString:
		p.term()
		p.advance()
		return &constExpr{v: StringValue(t.text)}
	case tParam:
		p.term()
		p.advance()
		return &paramExpr{name: t.text, pos: t.pos}
	case tPunct:
		switch t.text {
		case "(":
			p.advance()
			e := p.expr()
			p.expectPunct(")")
			return e
		case "[":
			return p.arrayLit()
		case "{":
			return p.objectLit()
		}
	case tIdent:
		p.term()
		switch strings.ToUpper(t.text) {
		case "TRUE":
			p.advance()
			return &constExpr{v: BoolValue(true)}
		case "FALSE":
			p.advance()
			return &constExpr{v: BoolValue(false)}
		case "NULL":
			p.advance()
			return &constExpr{v: NullValue()}
		}
		p.advance()
		if p.isPunct("(") {
			return p.call(t)
		}
		if reserved[strings.ToUpper(t.text)] {
			p.tok = t
			p.failf("unexpected keyword %s", strings.ToUpper(t.text))
			return &constExpr{}
		}
		return p.path(t)
	}
	p.failf("expected an expression")
	return &constExpr{}
}

// path parses the steps after the root identifier: .name, ["name"], [0].
func (p *parser) path(root token) expr {
	e := &pathExpr{root: root.text, pos: root.pos}
	for p.err == nil {
		switch {
		case p.isPunct("."):
			p.advance()
			if p.tok.kind != tIdent {
				p.failf("expected a property name after '.'")
				return e
			}
			e.segs = append(e.segs, pathSeg{name: p.tok.text})
			p.advance()
		case p.isPunct("["):
			p.advance()
			switch p.tok.kind {
			case tString:
				e.segs = append(e.segs, pathSeg{name: p.tok.text})
			case tNumber:
				n, ok := wholeNumber(NumberValue(p.tok.num))
				if !ok || n > math.MaxInt32 {
					p.invalidf(p.tok.pos, "array index %s is not an integer from 0 to %d", p.tok.raw, math.MaxInt32)
				}
				e.segs = append(e.segs, pathSeg{index: int(n), isIndex: true})
			default:
				p.failf("expected a property name string or an array index")
				return e
			}
			p.advance()
			p.expectPunct("]")
		default:
			return e
		}
	}
	return e
}

// call parses name(args...); the current token is '('.
func (p *parser) call(name token) expr {
	upper := strings.ToUpper(name.text)
	p.advance() // '('
	var args []expr
	if !p.isPunct(")") {
		for p.err == nil {
			args = append(args, p.expr())
			if !p.isPunct(",") {
				break
			}
			p.advance()
		}
	}
	p.expectPunct(")")
	if p.err != nil {
		return &constExpr{}
	}
	if upper == "COUNT" {
		if len(args) != 1 {
			p.invalidf(name.pos, "COUNT takes 1 argument, got %d", len(args))
			return &constExpr{}
		}
		return &countExpr{arg: args[0], pos: name.pos}
	}
	if aggregates[upper] {
		p.invalidf(name.pos, "aggregate %s is not supported (only COUNT is)", upper)
		return &constExpr{}
	}
	fn := functions[upper]
	if fn == nil {
		p.invalidf(name.pos, "unknown function %s", name.text)
		return &constExpr{}
	}
	if len(args) < fn.minArgs || len(args) > fn.maxArgs {
		want := strconv.Itoa(fn.minArgs)
		if fn.maxArgs != fn.minArgs {
			want += " or " + strconv.Itoa(fn.maxArgs)
		}
		p.invalidf(name.pos, "%s takes %s arguments, got %d", fn.name, want, len(args))
		return &constExpr{}
	}
	return &callExpr{fn: fn, args: args}
}

func (p *parser) arrayLit() expr {
	p.advance() // '['
	a := &arrayExpr{}
	if !p.isPunct("]") {
		for p.err == nil {
			a.elems = append(a.elems, p.expr())
			if !p.isPunct(",") {
				break
			}
			p.advance()
		}
	}
	p.expectPunct("]")
	return a
}

func (p *parser) objectLit() expr {
	p.advance() // '{'
	o := &objectExpr{}
	if !p.isPunct("}") {
		for p.err == nil {
			if p.tok.kind != tString && p.tok.kind != tIdent {
				p.failf("expected a property name")
				break
			}
			o.keys = append(o.keys, p.tok.text)
			p.advance()
			p.expectPunct(":")
			o.vals = append(o.vals, p.expr())
			if !p.isPunct(",") {
				break
			}
			p.advance()
		}
	}
	p.expectPunct("}")
	return o
}
