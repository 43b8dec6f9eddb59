package query

import "fmt"

// Limits on query text. They keep what a query costs to parse, bind and
// plan in proportion to its size: a query over one is refused, before any
// work beyond reading that far, with an error matching ErrLimit (and so
// ErrInvalidQuery) that names the limit. Parse applies them; the engine
// checks MaxParams against the parameters given as well. Anything else that
// accepts query text (a server, a CLI) gets the same limits by calling
// Parse.
const (
	// MaxLength is the longest query text, in bytes (512 KiB, as Cosmos
	// DB allows).
	MaxLength = 512 << 10
	// MaxDepth is how deeply expressions may nest: each parenthesis,
	// array or object literal, function call argument and NOT counts one
	// level. A chain of ANDs or ORs does not nest.
	MaxDepth = 128
	// MaxTerms is the most operands (literals, parameters and paths) a
	// query may hold.
	MaxTerms = 100_000
	// MaxParams is the most distinct parameters a query may use, and the
	// most a caller may give.
	MaxParams = 1024
)

// limitErr is an ErrLimit with its detail.
func limitErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrLimit, fmt.Sprintf(format, args...))
}

// limitAt is an ErrLimit located in the query text.
func limitAt(src string, pos int, format string, args ...any) error {
	line, col := lineCol(src, pos)
	return fmt.Errorf("%w: line %d, column %d: %s", ErrLimit, line, col, fmt.Sprintf(format, args...))
}
