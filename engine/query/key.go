package query

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
)

// Type tags, the first byte of every Key. Their order is Compare's order of
// the scalar kinds.
const (
	tagNull   byte = 0x02
	tagFalse  byte = 0x03
	tagTrue   byte = 0x04
	tagNumber byte = 0x05
	tagString byte = 0x06
)

// Key encodes a scalar so that the byte order of keys (bytes.Compare) equals
// Compare's order of the values: a type tag byte (null < false < true <
// number < string), then for numbers the 8 big-endian bytes of the float64
// with the sign flipped (positive: top bit set; negative: all bits inverted;
// -0 is written as 0), for strings their raw UTF-8 bytes (so a string
// prefix is a key prefix). ok is false for undefined, arrays, objects and
// non-finite numbers.
func Key(v Value) (string, bool) {
	switch v.kind {
	case Null:
		return string(tagNull), true
	case Bool:
		if v.num != 0 {
			return string(tagTrue), true
		}
		return string(tagFalse), true
	case Number:
		if math.IsNaN(v.num) || math.IsInf(v.num, 0) {
			return "", false
		}
		var b [9]byte
		b[0] = tagNumber
		binary.BigEndian.PutUint64(b[1:], numberBits(v.num))
		return string(b[:]), true
	case String:
		return string(tagString) + v.str, true
	}
	return "", false
}

// AppendNumberKey appends Key(NumberValue(f)) to dst, without making a
// string; ok is false for NaN and infinities, which have no key.
func AppendNumberKey(dst []byte, f float64) (_ []byte, ok bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, false
	}
	return binary.BigEndian.AppendUint64(append(dst, tagNumber), numberBits(f)), true
}

// numberBits maps a float64 to a uint64 whose unsigned order is the
// numeric order.
func numberBits(f float64) uint64 {
	if f == 0 {
		f = 0 // -0 → 0
	}
	u := math.Float64bits(f)
	if u&(1<<63) != 0 {
		return ^u
	}
	return u | 1<<63
}

// KeyValue decodes a key made by Key: the scalar it stands for. ok is
// false for bytes Key does not make.
func KeyValue(k string) (v Value, ok bool) { return keyValue(k) }

// keyValue decodes a key made by Key (for plan explanations).
func keyValue(k string) (Value, bool) {
	if k == "" {
		return Value{}, false
	}
	switch k[0] {
	case tagNull:
		return NullValue(), len(k) == 1
	case tagFalse:
		return BoolValue(false), len(k) == 1
	case tagTrue:
		return BoolValue(true), len(k) == 1
	case tagNumber:
		if len(k) != 9 {
			return Value{}, false
		}
		u := binary.BigEndian.Uint64([]byte(k[1:]))
		if u&(1<<63) != 0 {
			u &^= 1 << 63
		} else {
			u = ^u
		}
		return NumberValue(math.Float64frombits(u)), true
	case tagString:
		return StringValue(k[1:]), true
	}
	return Value{}, false
}

// Term is one entry of a secondary index: the scalar Key found at a term
// path of a document.
type Term struct {
	Path string // term path, e.g. "/a/b", "/tags/[]"
	Key  string // Key of the scalar
}

// Term paths name where a scalar sits in a document: "/" + segment per
// step, where a property is its name and an array element is "[]" (so the
// elements of c.tags are at "/tags/[]", and c.a[i].b at "/a/[]/b"). A
// property name is written raw unless it is empty, is "[]", "*" or "?", or
// contains '/', '"' or '\\'; then it is quoted: '"' + the name with '\\'
// and '"' escaped by a backslash + '"'. So {"a/b": 1} is at `/"a/b"`, and
// the two spellings can never collide. Policy paths use the same syntax.

// appendSegment appends "/" and the term-path form of property name to dst.
func appendSegment(dst []byte, name string) []byte {
	dst = append(dst, '/')
	if !needsQuote(name) {
		return append(dst, name...)
	}
	dst = append(dst, '"')
	for i := 0; i < len(name); i++ {
		if c := name[i]; c == '"' || c == '\\' {
			dst = append(dst, '\\')
		}
		dst = append(dst, name[i])
	}
	return append(dst, '"')
}

func needsQuote(name string) bool {
	return name == "" || name == "[]" || name == "*" || name == "?" || strings.ContainsAny(name, `/"\`)
}

// TermPath returns the term path of a property path given as names from the
// root, e.g. ["a","b"] → "/a/b".
func TermPath(names ...string) string {
	var b []byte
	for _, n := range names {
		b = appendSegment(b, n)
	}
	return string(b)
}

// Terms appends to dst every term of doc whose path is indexed, each
// distinct (path, key) once, and returns the extended slice. Only scalars
// make terms; arrays and objects make terms for their elements and members.
// Terms appended are sorted by path and key.
func Terms(doc Value, indexed func(path string) bool, dst []Term) []Term {
	start := len(dst)
	w := termWalker{indexed: indexed, out: dst, cache: map[string]bool{}}
	w.walk(doc, nil)
	out := w.out
	added := out[start:]
	slices.SortFunc(added, func(a, b Term) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	added = slices.Compact(added)
	return out[:start+len(added)]
}

// termWalker walks a document, building term paths in one buffer.
type termWalker struct {
	indexed func(string) bool
	out     []Term
	cache   map[string]bool // indexed() answers by path, for repeated array paths
}

func (w *termWalker) walk(v Value, path []byte) {
	switch v.kind {
	case Array:
		p := append(path, "/[]"...)
		for _, e := range v.arr {
			w.walk(e, p)
		}
	case Object:
		for _, m := range v.obj.members {
			w.walk(m.Value, appendSegment(path, m.Key))
		}
	case Undefined:
	default:
		if len(path) == 0 {
			return // a scalar document has no term path
		}
		ok, seen := w.cache[string(path)]
		var ps string
		if !seen {
			ps = string(path)
			ok = w.indexed(ps)
			w.cache[ps] = ok
		}
		if !ok {
			return
		}
		if ps == "" {
			ps = string(path)
		}
		k, _ := Key(v)
		if k != "" {
			w.out = append(w.out, Term{Path: ps, Key: k})
		}
	}
}
