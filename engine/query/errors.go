package query

import (
	"errors"
	"fmt"
	"strings"
)

// Errors returned by this package. They are sentinels: match them with
// errors.Is; every returned error wraps one of them with the detail (position,
// parameter, function, path) a user needs to fix the input.
var (
	// ErrInvalidQuery: the query text cannot be run: a syntax error, an
	// identifier that is not the FROM alias, an unknown function or one called
	// with the wrong number of arguments, a bad TOP/OFFSET/LIMIT, an
	// unsupported clause combination, a missing or unused parameter.
	ErrInvalidQuery = errors.New("query: invalid query")
	// ErrSyntax: the query text does not follow the grammar. It is a kind of
	// ErrInvalidQuery: errors.Is(ErrSyntax, ErrInvalidQuery) is true, so one
	// check against ErrInvalidQuery catches every error about a query's text.
	// The concrete error is a *SyntaxError.
	ErrSyntax = fmt.Errorf("%w: syntax error", ErrInvalidQuery)
	// ErrLimit: the query text is over one of the limits in MaxLength,
	// MaxDepth, MaxTerms or MaxParams; the error names which. It is a kind
	// of ErrInvalidQuery.
	ErrLimit = fmt.Errorf("%w: over a limit", ErrInvalidQuery)
	// ErrInvalidPath: an indexing-policy path that is malformed (see
	// PathPolicy.Compile).
	ErrInvalidPath = errors.New("query: invalid index path")
	// ErrInvalidJSON: Decode was given bytes that are not one JSON value, or
	// FromGo a Go value with no JSON form (NaN, a channel).
	ErrInvalidJSON = errors.New("query: invalid JSON")
)

// SyntaxError is a parse error with its place in the query text.
// errors.Is(err, ErrSyntax) and errors.Is(err, ErrInvalidQuery) hold for it.
type SyntaxError struct {
	Pos   int    // byte offset of the offending token in the query
	Line  int    // 1-based line of Pos
	Col   int    // 1-based column of Pos, in bytes
	Token string // the offending token's text; "" at the end of the input
	Msg   string // what was expected or what is wrong
}

// Error reads like `query: syntax error at line 1, column 10 near "FORM": expected FROM`.
func (e *SyntaxError) Error() string {
	near := fmt.Sprintf("near %q", e.Token)
	if e.Token == "" {
		near = "at end of input"
	}
	return fmt.Sprintf("query: syntax error at line %d, column %d %s: %s", e.Line, e.Col, near, e.Msg)
}

// Unwrap makes errors.Is(err, ErrSyntax) (and so ErrInvalidQuery) hold.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// lineCol converts a byte offset of src into a 1-based line and column.
func lineCol(src string, pos int) (line, col int) {
	pos = min(max(pos, 0), len(src))
	before := src[:pos]
	line = 1 + strings.Count(before, "\n")
	col = pos + 1
	if i := strings.LastIndexByte(before, '\n'); i >= 0 {
		col = pos - i
	}
	return line, col
}

// invalidAt is an ErrInvalidQuery located in the query text: a well-formed
// query that cannot be run (unknown identifier, function, bad TOP).
func invalidAt(src string, pos int, format string, args ...any) error {
	line, col := lineCol(src, pos)
	return fmt.Errorf("%w: line %d, column %d: %s", ErrInvalidQuery, line, col, fmt.Sprintf(format, args...))
}
