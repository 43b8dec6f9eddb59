package query

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends v as compact JSON to dst. Undefined appends nothing
// (callers drop undefined values, as Cosmos DB does); a non-finite number
// appends null. Numbers use encoding/json's format (shortest round-trip,
// exponent outside [1e-6, 1e21)); strings escape '"', '\\' and control
// characters only, and invalid UTF-8 becomes U+FFFD.
func (v Value) AppendJSON(dst []byte) []byte {
	switch v.kind {
	case Null:
		return append(dst, "null"...)
	case Bool:
		if v.num != 0 {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case Number:
		return appendNumber(dst, v.num)
	case String:
		return AppendString(dst, v.str)
	case Array:
		dst = append(dst, '[')
		n := 0
		for _, e := range v.arr {
			if e.kind == Undefined {
				continue
			}
			if n > 0 {
				dst = append(dst, ',')
			}
			dst = e.AppendJSON(dst)
			n++
		}
		return append(dst, ']')
	case Object:
		dst = append(dst, '{')
		n := 0
		for _, m := range v.obj.members {
			if m.Value.kind == Undefined {
				continue
			}
			if n > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, m.Key)
			dst = append(dst, ':')
			dst = m.Value.AppendJSON(dst)
			n++
		}
		return append(dst, '}')
	}
	return dst
}

func appendNumber(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// Turn e-07 into e-7, as encoding/json does.
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string: quotes, backslashes and control
// characters escaped, invalid UTF-8 replaced by U+FFFD.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// FromGo converts a Go value, typically a query parameter, into a Value:
// nil → null; bool; every int, uint and float type (NaN and ±Inf are
// refused); string; []any and map[string]any (recursively); a Value as is;
// json.RawMessage is parsed as JSON text. Anything else (structs, typed
// slices and maps, json.Marshaler) goes through json.Marshal, so []byte
// becomes a base64 string exactly as encoding/json writes it. Errors match
// ErrInvalidJSON.
func FromGo(v any) (Value, error) {
	switch x := v.(type) {
	case nil:
		return NullValue(), nil
	case Value:
		return x, nil
	case bool:
		return BoolValue(x), nil
	case string:
		return StringValue(x), nil
	case int:
		return NumberValue(float64(x)), nil
	case int8:
		return NumberValue(float64(x)), nil
	case int16:
		return NumberValue(float64(x)), nil
	case int32:
		return NumberValue(float64(x)), nil
	case int64:
		return NumberValue(float64(x)), nil
	case uint:
		return NumberValue(float64(x)), nil
	case uint8:
		return NumberValue(float64(x)), nil
	case uint16:
		return NumberValue(float64(x)), nil
	case uint32:
		return NumberValue(float64(x)), nil
	case uint64:
		return NumberValue(float64(x)), nil
	case float32:
		return finite(float64(x))
	case float64:
		return finite(x)
	case json.Number:
		return Decode([]byte(x))
	case json.RawMessage:
		return Decode(x)
	case []any:
		elems := make([]Value, len(x))
		for i, e := range x {
			ev, err := FromGo(e)
			if err != nil {
				return Value{}, fmt.Errorf("element %d: %w", i, err)
			}
			elems[i] = ev
		}
		return ArrayValue(elems), nil
	case map[string]any:
		members := make([]Member, 0, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) { // a stable member order
			ev, err := FromGo(x[k])
			if err != nil {
				return Value{}, fmt.Errorf("property %q: %w", k, err)
			}
			members = append(members, Member{Key: k, Value: ev})
		}
		return ObjectValue(members), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Value{}, fmt.Errorf("%w: %T: %v", ErrInvalidJSON, v, err)
	}
	return Decode(b)
}

func finite(f float64) (Value, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return Value{}, fmt.Errorf("%w: number %v has no JSON form", ErrInvalidJSON, f)
	}
	return NumberValue(f), nil
}
