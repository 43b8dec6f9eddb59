package policy

import (
	"errors"
	"strconv"
	"unicode/utf8"
)

// MaxTTL is the largest ttl or DefaultTTL, in seconds (2^31-1, about 68 years).
const MaxTTL = 2147483647

// Field names used in validation errors; they are the JSON names Cosmos DB
// uses.
const (
	FieldTTL        = "ttl"
	FieldDefaultTTL = "defaultTtl"
)

var (
	// ErrInvalidTTL is wrapped by every error about an item's ttl property.
	ErrInvalidTTL = errors.New("ebb: invalid ttl")
	// ErrInvalidDefaultTTL is wrapped by every error about a container's
	// DefaultTTL.
	ErrInvalidDefaultTTL = errors.New("ebb: invalid default ttl")
)

// InvalidTTLError reports a ttl or defaultTtl value outside its domain. It
// unwraps to ErrInvalidTTL (Field "ttl") or ErrInvalidDefaultTTL (Field
// "defaultTtl"). Its message reads, for example,
//
//	ttl 0 is invalid: ttl must be -1 (never expire) or an integer from 1 to 2147483647
type InvalidTTLError struct {
	Field string // FieldTTL or FieldDefaultTTL
	Value string // the offending value as written (JSON text, shortened when long)
}

func (e *InvalidTTLError) Error() string {
	return e.Field + " " + e.Value + " is invalid: " + e.Field +
		" must be -1 (never expire) or an integer from 1 to 2147483647"
}

// Unwrap returns ErrInvalidTTL or ErrInvalidDefaultTTL.
func (e *InvalidTTLError) Unwrap() error {
	if e.Field == FieldDefaultTTL {
		return ErrInvalidDefaultTTL
	}
	return ErrInvalidTTL
}

// ParseItemTTL parses the raw JSON text of the value of an item's top-level
// "ttl" property (surrounding JSON whitespace is ignored) and returns -1 or a
// value in 1..MaxTTL.
//
// The value must be a JSON number whose value is an integer: any JSON number
// form is accepted as long as the value is integral, so `60`, `6e1`, `60.0`,
// `600e-1` and `-1.0` are accepted (as 60, 60, 60, 60 and -1). `1.5`, `0`,
// `-0`, `-2`, values above MaxTTL, and anything that is not a JSON number
// (`null`, `"10"`, `true`, `{}`, `[]`, malformed numbers such as `01` or
// `+1`) are rejected with an *InvalidTTLError that wraps ErrInvalidTTL.
//
// The caller handles an absent property (it has no raw value to pass).
func ParseItemTTL(raw []byte) (int32, error) {
	// Fast path: a short run of plain digits, optionally negative, no
	// leading zero: the form nearly every document uses.
	if n := len(raw); n > 0 && n <= 10 {
		s := raw
		neg := s[0] == '-'
		if neg {
			s = s[1:]
		}
		if len(s) > 0 && s[0] != '0' {
			var v int64
			ok := true
			for _, c := range s {
				if c < '0' || c > '9' {
					ok = false
					break
				}
				v = v*10 + int64(c-'0')
			}
			if ok {
				if neg {
					v = -v
				}
				if v == -1 || (v >= 1 && v <= MaxTTL) {
					return int32(v), nil
				}
				return 0, invalidTTL(FieldTTL, raw)
			}
		}
	}
	v, ok := parseIntegral(trimJSONSpace(raw))
	if !ok || !(v == -1 || (v >= 1 && v <= MaxTTL)) {
		return 0, invalidTTL(FieldTTL, raw)
	}
	return int32(v), nil
}

// ValidateDefaultTTL checks a container's DefaultTTL: -1 or 1..MaxTTL. An
// absent DefaultTTL (TTL off) is always valid and is the caller's to handle.
// The error is an *InvalidTTLError that wraps ErrInvalidDefaultTTL and reads
// "defaultTtl 0 is invalid: ...".
func ValidateDefaultTTL(v int64) error {
	if v == -1 || (v >= 1 && v <= MaxTTL) {
		return nil
	}
	return &InvalidTTLError{Field: FieldDefaultTTL, Value: strconv.FormatInt(v, 10)}
}

// validDefault reports whether d is an allowed DefaultTTL (nil included).
func validDefault(d *int32) bool {
	return d == nil || *d == -1 || *d >= 1
}

const maxShownValue = 64

func invalidTTL(field string, raw []byte) error {
	return &InvalidTTLError{Field: field, Value: showValue(trimJSONSpace(raw))}
}

// showValue renders raw JSON text for an error message: as is when short and
// printable, shortened to about maxShownValue bytes, quoted when it holds
// control characters or invalid UTF-8.
func showValue(v []byte) string {
	if len(v) == 0 {
		return "(empty)"
	}
	cut := len(v) > maxShownValue
	if cut {
		n := maxShownValue
		for n > 0 && !utf8.RuneStart(v[n]) {
			n--
		}
		v = v[:n]
	}
	s := string(v)
	plain := utf8.ValidString(s)
	for i := 0; plain && i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			plain = false
		}
	}
	if !plain {
		s = strconv.Quote(s)
	}
	if cut {
		s += "..."
	}
	return s
}

func trimJSONSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// parseIntegral parses s as a JSON number (RFC 8259 grammar, exactly) and
// returns its value when that value is an integer of at most 12 decimal
// digits. ok is false for anything else: not a JSON number, a value with a
// fractional part, or one too large. The arithmetic is exact (decimal
// digits, no floating point), so 2147483647.0000000001 is rejected and
// 2.147483647e9 is accepted.
func parseIntegral(s []byte) (v int64, ok bool) {
	i := 0
	neg := false
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	}
	// Integer part: 0 or [1-9][0-9]*.
	ip := i
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return 0, false
	}
	intDigits := s[ip:i]
	// Fraction: . [0-9]+
	var fracDigits []byte
	if i < len(s) && s[i] == '.' {
		i++
		fp := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == fp {
			return 0, false
		}
		fracDigits = s[fp:i]
	}
	// Exponent: [eE] [+-]? [0-9]+, saturated at ±1e9.
	var exp int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		ep := i
		for i < len(s) && isDigit(s[i]) {
			if exp < 1e9 {
				exp = exp*10 + int64(s[i]-'0')
			}
			i++
		}
		if i == ep {
			return 0, false
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(s) {
		return 0, false
	}

	// The significand is intDigits followed by fracDigits; its value is
	// digits × 10^(exp - len(fracDigits)). Find the significant digits.
	n := len(intDigits) + len(fracDigits)
	digit := func(k int) byte {
		if k < len(intDigits) {
			return intDigits[k]
		}
		return fracDigits[k-len(intDigits)]
	}
	lo := 0
	for lo < n && digit(lo) == '0' {
		lo++
	}
	if lo == n {
		return 0, true // zero, whatever the exponent
	}
	hi := n
	for digit(hi-1) == '0' {
		hi--
	}
	// value = digits[lo:hi] × 10^e10
	e10 := exp - int64(len(fracDigits)) + int64(n-hi)
	if e10 < 0 {
		return 0, false // a fractional part remains
	}
	if int64(hi-lo)+e10 > 12 {
		return 0, false // at least 10^12: far out of any range we accept
	}
	for k := lo; k < hi; k++ {
		v = v*10 + int64(digit(k)-'0')
	}
	for ; e10 > 0; e10-- {
		v *= 10
	}
	if neg {
		v = -v
	}
	return v, true
}
