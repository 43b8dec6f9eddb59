package engine

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ebbdb/ebb/engine/internal/docfmt"
)

// valueError is a value that JSON's grammar allows but ebb refuses: a
// number beyond float64's range, or an unpaired surrogate escape. off is
// the offset where it starts. parseDocument turns it into a message that
// names the property path (locate).
type valueError struct {
	off  int
	what string
}

func (e *valueError) Error() string {
	return fmt.Sprintf("document: %s at offset %d", e.what, e.off)
}

func (e *valueError) Unwrap() error { return ErrInvalidDocument }

// locate rewrites a valueError found in the value at b[vs:] of the
// top-level member whose name is the string token b[ks:ke] so that it
// names the property path, like `/a/b/0`, and the offset. Other errors are
// returned as they are.
func locate(err error, b []byte, ks, ke, vs int) error {
	var ve *valueError
	if !errors.As(err, &ve) {
		return err
	}
	p, _, _ := findPath(b, vs, ve.off)
	path := "/" + pointerSegment(keyName(b, ks, ke)) + p
	return &docError{msg: fmt.Sprintf("document: %s at %s (offset %d)", ve.what, path, ve.off)}
}

// findPath walks the JSON value starting at b[i], valid at least up to
// offset target, and returns the path from it to the innermost value or
// property name that holds target, the index just past the value, and
// whether target is inside it. It recurses once per nesting level, which
// scanValue bounded before it got here; it runs only on the error path.
func findPath(b []byte, i, target int) (path string, end int, found bool) {
	if i >= len(b) {
		return "", len(b), false
	}
	switch c := b[i]; {
	case c == '{' || c == '[':
		obj := c == '{'
		i = docfmt.SkipWS(b, i+1)
		for n := 0; i < len(b) && b[i] != '}' && b[i] != ']'; n++ {
			seg := strconv.Itoa(n)
			if obj {
				ke := stringEnd(b, i)
				if target >= i && target < ke {
					return "", ke, true // in a property name: the object is the place
				}
				seg = keyName(b, i, ke)
				i = docfmt.SkipWS(b, ke)
				if i < len(b) && b[i] == ':' {
					i = docfmt.SkipWS(b, i+1)
				}
			}
			p, e, ok := findPath(b, i, target)
			if ok {
				return "/" + pointerSegment(seg) + p, e, true
			}
			if e <= i {
				return "", len(b), false
			}
			i = docfmt.SkipWS(b, e)
			if i < len(b) && b[i] == ',' {
				i = docfmt.SkipWS(b, i+1)
			}
		}
		return "", i + 1, false
	case c == '"':
		end = stringEnd(b, i)
	case c == 't' || c == 'n':
		end = i + 4
	case c == 'f':
		end = i + 5
	default:
		end = i
		for end < len(b) && strings.IndexByte("+-0123456789.eE", b[end]) >= 0 {
			end++
		}
	}
	return "", end, target >= i && target < end
}

// stringEnd returns the index just past the string token starting at b[i],
// or len(b) if it is not closed.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// keyName is the property name of the string token b[ks:ke], unescaped
// when it holds escapes (best effort: it serves error messages).
func keyName(b []byte, ks, ke int) string {
	raw := b[ks+1 : max(ks+1, ke-1)]
	if slices.Contains(raw, '\\') {
		if u, err := unescapeString(b, ks, ke); err == nil {
			return string(u)
		}
	}
	return string(raw)
}

// pointerSegment escapes a property name as a JSON Pointer segment (RFC
// 6901): '~' becomes "~0" and '/' becomes "~1".
func pointerSegment(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
