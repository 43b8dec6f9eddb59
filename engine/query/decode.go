package query

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is the deepest nesting Decode accepts: encoding/json's limit, so
// that both agree on which inputs are valid.
const maxDepth = 10000

// Decode parses one JSON value (with optional surrounding whitespace) into a
// Value. It copies doc once; strings without escapes share that copy.
// Objects keep their keys in first-seen order; when a key repeats, the last
// value wins. Inputs are accepted or refused exactly as json.Unmarshal into
// an `any` does: numbers beyond float64 range are refused, invalid UTF-8 and
// lone surrogates in strings become U+FFFD. Errors match ErrInvalidJSON.
func Decode(doc []byte) (Value, error) {
	d := decoder{s: string(doc)}
	d.skipSpace()
	v := d.value(0)
	if d.err == nil {
		d.skipSpace()
		if d.i < len(d.s) {
			d.fail("unexpected data after the value")
		}
	}
	if d.err != nil {
		return Value{}, d.err
	}
	return v, nil
}

// decoder is a recursive-descent JSON parser over one string.
type decoder struct {
	s   string
	i   int
	err error
}

func (d *decoder) fail(msg string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: offset %d: %s", ErrInvalidJSON, d.i, msg)
	}
}

func (d *decoder) skipSpace() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) value(depth int) Value {
	if d.i >= len(d.s) {
		d.fail("unexpected end of input")
		return Value{}
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		s, ok := d.string()
		if !ok {
			return Value{}
		}
		return Value{kind: String, str: s}
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case strings.HasPrefix(d.s[d.i:], "true"):
		d.i += 4
		return BoolValue(true)
	case strings.HasPrefix(d.s[d.i:], "false"):
		d.i += 5
		return BoolValue(false)
	case strings.HasPrefix(d.s[d.i:], "null"):
		d.i += 4
		return NullValue()
	}
	d.fail(fmt.Sprintf("invalid character %q looking for a value", d.s[d.i]))
	return Value{}
}

func (d *decoder) object(depth int) Value {
	if depth > maxDepth {
		d.fail("exceeded max depth")
		return Value{}
	}
	d.i++ // '{'
	var members []Member
	d.skipSpace()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return ObjectValue(nil)
	}
	for d.err == nil {
		d.skipSpace()
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			d.fail("expected a string key")
			return Value{}
		}
		k, ok := d.string()
		if !ok {
			return Value{}
		}
		d.skipSpace()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			d.fail("expected ':' after an object key")
			return Value{}
		}
		d.i++
		d.skipSpace()
		v := d.value(depth)
		members = append(members, Member{Key: k, Value: v})
		d.skipSpace()
		if d.i >= len(d.s) {
			d.fail("unexpected end of input in an object")
			return Value{}
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return ObjectValue(members)
		default:
			d.fail("expected ',' or '}' in an object")
		}
	}
	return Value{}
}

func (d *decoder) array(depth int) Value {
	if depth > maxDepth {
		d.fail("exceeded max depth")
		return Value{}
	}
	d.i++ // '['
	elems := []Value{}
	d.skipSpace()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return ArrayValue(elems)
	}
	for d.err == nil {
		d.skipSpace()
		elems = append(elems, d.value(depth))
		d.skipSpace()
		if d.i >= len(d.s) {
			d.fail("unexpected end of input in an array")
			return Value{}
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return ArrayValue(elems)
		default:
			d.fail("expected ',' or ']' in an array")
		}
	}
	return Value{}
}

// number scans a JSON number with the grammar's exact rules, then converts it.
func (d *decoder) number() Value {
	start := d.i
	s := d.s
	i := d.i
	if s[i] == '-' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > j
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case !digits():
		d.i = i
		d.fail("invalid number")
		return Value{}
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			d.i = i
			d.fail("invalid number: no digits after '.'")
			return Value{}
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			d.i = i
			d.fail("invalid number: no digits in the exponent")
			return Value{}
		}
	}
	d.i = i
	f, err := strconv.ParseFloat(s[start:i], 64)
	if err != nil {
		d.i = start
		d.fail(fmt.Sprintf("number %s is out of range", s[start:i]))
		return Value{}
	}
	return NumberValue(f)
}

// string scans a string starting at its opening quote. Strings of plain
// valid UTF-8 without escapes are substrings of the input.
func (d *decoder) string() (string, bool) {
	s := d.s
	i := d.i + 1
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			out := s[d.i+1 : i]
			d.i = i + 1
			return out, true
		case c == '\\' || c < 0x20:
			return d.slowString()
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return d.slowString()
			}
			i += size
		}
	}
	d.i = len(s)
	d.fail("unterminated string")
	return "", false
}

// slowString decodes a string with escapes or invalid UTF-8, as
// encoding/json does.
func (d *decoder) slowString() (string, bool) {
	s := d.s
	i := d.i + 1
	var b strings.Builder
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			d.i = i + 1
			return b.String(), true
		case c < 0x20:
			d.i = i
			d.fail("control character in a string")
			return "", false
		case c == '\\':
			if i+1 >= len(s) {
				d.i = i
				d.fail("unterminated escape")
				return "", false
			}
			r, next, ok := unescape(s, i+1)
			if !ok {
				if e := s[i+1]; e == 'u' {
					d.i = i + 2
					d.fail("invalid \\u escape")
				} else {
					d.i = i + 1
					d.fail(fmt.Sprintf("invalid escape \\%c", e))
				}
				return "", false
			}
			b.WriteRune(r)
			i = next
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b.WriteRune(utf8.RuneError)
			} else {
				b.WriteString(s[i : i+size])
			}
			i += size
		}
	}
	d.i = len(s)
	d.fail("unterminated string")
	return "", false
}

// unescape decodes the JSON escape whose letter is at s[i], just past the
// backslash: \" \\ \/ \b \f \n \r \t, or \uXXXX, joined with a following
// \uXXXX when the two make a surrogate pair (a lone surrogate is U+FFFD,
// as encoding/json has it). It returns the rune and the index past the
// escape; ok is false for an escape JSON does not have.
func unescape[T string | []byte](s T, i int) (r rune, next int, ok bool) {
	switch e := s[i]; e {
	case '"', '\\', '/':
		return rune(e), i + 1, true
	case 'b':
		return '\b', i + 1, true
	case 'f':
		return '\f', i + 1, true
	case 'n':
		return '\n', i + 1, true
	case 'r':
		return '\r', i + 1, true
	case 't':
		return '\t', i + 1, true
	case 'u':
		r, ok := Hex4(s, i+1)
		if !ok {
			return 0, i, false
		}
		i += 5
		if utf16.IsSurrogate(r) {
			r2, ok2 := rune(-1), false
			if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
				r2, ok2 = Hex4(s, i+2)
			}
			if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
				return dec, i + 6, true
			}
			return utf8.RuneError, i, true
		}
		return r, i, true
	}
	return 0, i, false
}

// Hex4 parses the four hex digits at s[i:] (of a \uXXXX escape); ok is
// false when they are not four hex digits. The write validator shares it.
func Hex4[T string | []byte](s T, i int) (rune, bool) {
	if i < 0 || i+4 > len(s) {
		return 0, false
	}
	var r rune
	for j := i; j < i+4; j++ {
		c := s[j]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
