// Package pkey is how ebb names an item of a container with a partition
// key, for the engine and its offline tools (package engine/tool) alike: a
// partition key value (Key), its header form (`["a"]`), and the item key
// that stands for the pair (key value, id) wherever the engine keys items
// by a string (the index, segment records, the journal, the change feed's
// order and continuation tokens).
//
// The item key of a container without a partition key is the id itself. In
// a container with one it is a composite:
//
//	0x01  tag  payload  id
//
// 0x01 cannot start an id (ids hold no control characters), so a composite
// is never confused with a plain id. The tag orders the kinds of value as
// Cosmos DB orders them: '0' None (no value at the key path), '1' null, '2'
// false, '3' true, '4' a number, '5' a string. A number's payload is the 16
// lowercase hex digits of its float64 bits made order-preserving; a
// string's is its bytes with 0x00 written as 0x01 0x01 and 0x01 as 0x01
// 0x02, then a 0x00 terminator. Composites therefore sort by key value
// (kind, then number or string order) and then by id, they are valid UTF-8
// whenever the key string is, and a prefix (Prefix) selects one partition.
package pkey

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ebbdb/ebb/engine/internal/docfmt"
)

// Kind is the JSON kind of a partition key value.
type Kind uint8

// The kinds, in the order their values sort.
const (
	None Kind = iota // no value at the key path (Cosmos's PartitionKey.None)
	Null
	False
	True
	Number
	String
)

// MaxStringLength is the longest string key value accepted, in bytes of
// UTF-8: Cosmos DB's limit on a partition key value.
const MaxStringLength = 2048

// Key is one partition key value. The zero Key is None. Keys compare with
// ==: numbers as float64 (-0 is stored as 0), strings by their bytes.
type Key struct {
	Kind Kind
	S    string  // the value of a String
	N    float64 // the value of a Number
}

// StringKey, NumberKey and BoolKey build keys.
func StringKey(s string) Key { return Key{Kind: String, S: s} }

// NumberKey is the key of number f; -0 is 0.
func NumberKey(f float64) Key {
	if f == 0 {
		f = 0 // -0 hashes as 0 in Cosmos DB
	}
	return Key{Kind: Number, N: f}
}

// BoolKey is the key true or false.
func BoolKey(b bool) Key {
	if b {
		return Key{Kind: True}
	}
	return Key{Kind: False}
}

// Check reports why k cannot key an item: a number that is not finite, a
// string that is not UTF-8 or is longer than MaxStringLength, an unknown
// kind.
func (k Key) Check() error {
	switch k.Kind {
	case None, Null, False, True:
		return nil
	case Number:
		if math.IsNaN(k.N) || math.IsInf(k.N, 0) {
			return fmt.Errorf("number %v is not finite", k.N)
		}
		return nil
	case String:
		if !utf8.ValidString(k.S) {
			return errors.New("string is not valid UTF-8")
		}
		if len(k.S) > MaxStringLength {
			return fmt.Errorf("string of %d bytes is longer than the maximum of %d", len(k.S), MaxStringLength)
		}
		return nil
	}
	return fmt.Errorf("unknown kind %d", k.Kind)
}

// Value is the key as a Go value: string, float64, bool, or nil for null
// and None.
func (k Key) Value() any {
	switch k.Kind {
	case String:
		return k.S
	case Number:
		return k.N
	case True:
		return true
	case False:
		return false
	}
	return nil
}

// String is the key's header form (x-ms-documentdb-partitionkey): a JSON
// array of the value, `["a"]`, `[5]`, `[true]`, `[null]`, or `[{}]` for None.
func (k Key) String() string {
	switch k.Kind {
	case None:
		return "[{}]"
	case Null:
		return "[null]"
	case False:
		return "[false]"
	case True:
		return "[true]"
	case Number:
		return "[" + formatNumber(k.N) + "]"
	case String:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.Encode(k.S) // a string always encodes
		return "[" + strings.TrimSuffix(b.String(), "\n") + "]"
	}
	return fmt.Sprintf("[kind %d]", k.Kind)
}

// formatNumber writes f as JSON does (encoding/json's float format).
func formatNumber(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64) // not JSON: Check refuses it
	}
	b, _ := json.Marshal(f)
	return string(b)
}

// ParseHeader reads the header form: a JSON array of one string, number,
// boolean, null or {} (None); [] is None too. Its errors say what is wrong.
func ParseHeader(b []byte) (Key, error) {
	if !utf8.Valid(b) {
		return Key{}, errors.New("partition key header is not valid UTF-8")
	}
	var vals []json.RawMessage
	if err := json.Unmarshal(b, &vals); err != nil {
		return Key{}, fmt.Errorf("partition key %s is not a JSON array of one value: %v", docfmt.QuoteShort(string(b)), err)
	}
	switch len(vals) {
	case 0:
		return Key{}, nil
	case 1:
	default:
		return Key{}, fmt.Errorf("partition key %s has %d values; hierarchical partition keys are not supported, give one", docfmt.QuoteShort(string(b)), len(vals))
	}
	v := bytes.TrimSpace(vals[0])
	if len(v) > 0 && v[0] == '{' {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(v, &m); err != nil || len(m) != 0 {
			return Key{}, fmt.Errorf("partition key %s: an object stands for None only when empty ({})", docfmt.QuoteShort(string(b)))
		}
		return Key{}, nil
	}
	k, err := FromJSON(v)
	if err != nil {
		return Key{}, fmt.Errorf("partition key %s: %v", docfmt.QuoteShort(string(b)), err)
	}
	return k, nil
}

// FromJSON is the key of the JSON value v (valid JSON, no surrounding
// whitespace): a string, number, boolean or null. An object or array is
// refused, as is a value that breaks Check.
func FromJSON(v []byte) (Key, error) {
	if len(v) == 0 {
		return Key{}, errors.New("empty value")
	}
	var k Key
	switch c := v[0]; {
	case c == '"':
		if len(v) >= 2 && v[len(v)-1] == '"' && !bytes.ContainsAny(v[1:len(v)-1], "\\\"") && utf8.Valid(v) && !hasControl(v) {
			k = StringKey(string(v[1 : len(v)-1])) // no escapes: the bytes are the string
			break
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return Key{}, fmt.Errorf("invalid string: %v", err)
		}
		k = StringKey(s)
	case c == 't' && string(v) == "true":
		k = BoolKey(true)
	case c == 'f' && string(v) == "false":
		k = BoolKey(false)
	case c == 'n' && string(v) == "null":
		k = Key{Kind: Null}
	case c == '-' || (c >= '0' && c <= '9'):
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return Key{}, fmt.Errorf("number %s is not a float64", docfmt.QuoteShort(string(v)))
		}
		k = NumberKey(f)
	case c == '{':
		return Key{}, errors.New("the value is an object; a partition key is a string, number, boolean or null")
	case c == '[':
		return Key{}, errors.New("the value is an array; a partition key is a string, number, boolean or null")
	default:
		return Key{}, fmt.Errorf("%s is not a JSON value", docfmt.QuoteShort(string(v)))
	}
	if err := k.Check(); err != nil {
		return Key{}, err
	}
	return k, nil
}

// Marker is the first byte of every composite item key.
const Marker = 0x01

// IsComposite reports whether item key s is a composite (it starts with
// Marker) rather than a plain id.
func IsComposite(s string) bool { return len(s) > 0 && s[0] == Marker }

// AppendPrefix appends the composite prefix of k (every composite of k
// starts with it) to dst.
func AppendPrefix(dst []byte, k Key) []byte {
	dst = append(dst, Marker)
	switch k.Kind {
	case None:
		return append(dst, '0')
	case Null:
		return append(dst, '1')
	case False:
		return append(dst, '2')
	case True:
		return append(dst, '3')
	case Number:
		b := math.Float64bits(NumberKey(k.N).N)
		if b>>63 == 1 {
			b = ^b
		} else {
			b |= 1 << 63
		}
		dst = append(dst, '4')
		const hex = "0123456789abcdef"
		for shift := 60; shift >= 0; shift -= 4 {
			dst = append(dst, hex[b>>uint(shift)&0xf])
		}
		return dst
	}
	dst = append(dst, '5')
	for i := 0; i < len(k.S); i++ {
		switch c := k.S[i]; c {
		case 0x00:
			dst = append(dst, 0x01, 0x01)
		case 0x01:
			dst = append(dst, 0x01, 0x02)
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, 0x00)
}

// Prefix is AppendPrefix as a string.
func Prefix(k Key) string { return string(AppendPrefix(nil, k)) }

// Compose is the item key of id under partition key k.
func Compose(k Key, id string) string {
	return string(append(AppendPrefix(make([]byte, 0, 20+len(id)), k), id...))
}

// ErrBadItemKey is wrapped by every error of Split.
var ErrBadItemKey = errors.New("malformed partition item key")

// Split decodes composite item key s into its partition key and id. A key
// that is not a composite, or is damaged, is an error wrapping
// ErrBadItemKey that says what is wrong.
func Split(s string) (Key, string, error) {
	bad := func(format string, args ...any) (Key, string, error) {
		return Key{}, "", fmt.Errorf("%w: %s: %s", ErrBadItemKey, docfmt.QuoteShort(s), fmt.Sprintf(format, args...))
	}
	if !IsComposite(s) {
		return bad("it does not start with byte 0x01")
	}
	if len(s) < 2 {
		return bad("no kind tag")
	}
	var k Key
	rest := s[2:]
	switch s[1] {
	case '0':
	case '1':
		k.Kind = Null
	case '2':
		k.Kind = False
	case '3':
		k.Kind = True
	case '4':
		if len(rest) < 16 {
			return bad("a number needs 16 hex digits")
		}
		var b uint64
		for i := range 16 {
			c := rest[i]
			var d byte
			switch {
			case c >= '0' && c <= '9':
				d = c - '0'
			case c >= 'a' && c <= 'f':
				d = c - 'a' + 10
			default:
				return bad("number digit %q is not lowercase hex", c)
			}
			b = b<<4 | uint64(d)
		}
		if b>>63 == 1 {
			b &^= 1 << 63
		} else {
			b = ^b
		}
		k = Key{Kind: Number, N: math.Float64frombits(b)}
		if err := k.Check(); err != nil || (k.N == 0 && math.Signbit(k.N)) {
			return bad("number is not a finite float64 in canonical form")
		}
		rest = rest[16:]
	case '5':
		if end := strings.IndexByte(rest, 0x00); end >= 0 && strings.IndexByte(rest[:end], 0x01) < 0 {
			k = StringKey(rest[:end]) // nothing escaped: no copy
			if err := k.Check(); err != nil {
				return bad("%v", err)
			}
			rest = rest[end+1:]
			break
		}
		var sb []byte
		i := 0
		for ; ; i++ {
			if i >= len(rest) {
				return bad("the string has no terminator")
			}
			c := rest[i]
			if c == 0x00 {
				break
			}
			if c == 0x01 {
				if i+1 >= len(rest) || (rest[i+1] != 0x01 && rest[i+1] != 0x02) {
					return bad("invalid escape in the string at byte %d", i)
				}
				sb = append(sb, rest[i+1]-1)
				i++
				continue
			}
			sb = append(sb, c)
		}
		k = StringKey(string(sb))
		if err := k.Check(); err != nil {
			return bad("%v", err)
		}
		rest = rest[i+1:]
	default:
		return bad("unknown kind tag %q", s[1])
	}
	if err := docfmt.ValidateID(rest); err != nil {
		return bad("%v", err)
	}
	return k, rest, nil
}

// CheckItemKey reports whether item key s fits a container with a
// partition key (keyed) or without one: a composite that decodes, or a
// plain id that does not start with Marker. It does not check a plain id
// further.
func CheckItemKey(s string, keyed bool) error {
	if !keyed {
		if IsComposite(s) {
			return fmt.Errorf("%w: %s: a container without a partition key holds a composite item key", ErrBadItemKey, docfmt.QuoteShort(s))
		}
		return nil
	}
	_, _, err := Split(s)
	return err
}

// Show is how the offline tools show item key s: the id, and the
// partition key's header form ("" for a plain id). A composite that does
// not decode is an error wrapping ErrBadItemKey.
func Show(s string) (id, key string, err error) {
	if !IsComposite(s) {
		return s, "", nil
	}
	k, id, err := Split(s)
	if err != nil {
		return "", "", err
	}
	return id, k.String(), nil
}

// hasControl reports whether b holds a byte below 0x20, which a JSON
// string must escape.
func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}
