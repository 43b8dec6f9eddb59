package query

import (
	"cmp"
	"slices"
	"strings"
)

// Kind is the type of a Value. The constants are declared in the order that
// Compare (ORDER BY) sorts values of different kinds.
type Kind uint8

// The kinds of JSON value, plus Undefined: what a path to a missing property
// evaluates to.
const (
	Undefined Kind = iota
	Null
	Bool
	Number
	String
	Array
	Object
)

var kindNames = [...]string{"undefined", "null", "boolean", "number", "string", "array", "object"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + string(rune('0'+k)) + ")"
}

// Value is an immutable JSON value as queries see it. The zero Value is
// undefined. Values are safe to share between goroutines.
type Value struct {
	kind Kind
	num  float64 // Number; Bool: 1 for true
	str  string  // String
	arr  []Value // Array
	obj  *object // Object
}

// Member is one property of an object.
type Member struct {
	Key   string
	Value Value
}

// object holds an object's members in their first-seen order with unique
// keys; objects larger than smallObject also carry a by-key index.
type object struct {
	members []Member
	byKey   []int32 // member positions sorted by key; nil when small
}

// smallObject is the member count up to which lookups scan linearly.
const smallObject = 12

// NullValue returns JSON null.
func NullValue() Value { return Value{kind: Null} }

// BoolValue returns a JSON boolean.
func BoolValue(b bool) Value {
	if b {
		return Value{kind: Bool, num: 1}
	}
	return Value{kind: Bool}
}

// NumberValue returns a JSON number. f must be finite: JSON has no NaN or
// infinity (AppendJSON writes them as null and Key refuses them).
func NumberValue(f float64) Value { return Value{kind: Number, num: f} }

// StringValue returns a JSON string.
func StringValue(s string) Value { return Value{kind: String, str: s} }

// ArrayValue returns a JSON array of elems; it keeps elems, which the caller
// must not change afterwards.
func ArrayValue(elems []Value) Value {
	if elems == nil {
		elems = []Value{}
	}
	return Value{kind: Array, arr: elems}
}

// ObjectValue returns a JSON object of members. When a key repeats, the last
// value wins and keeps the position of the first. It keeps members, which
// the caller must not change afterwards.
func ObjectValue(members []Member) Value {
	return Value{kind: Object, obj: newObject(members)}
}

func newObject(members []Member) *object {
	if members == nil {
		members = []Member{}
	}
	o := &object{members: members}
	if len(members) <= smallObject {
		// Dedupe by scanning: small objects rarely repeat a key.
		for i := 1; i < len(o.members); i++ {
			for j := 0; j < i; j++ {
				if o.members[j].Key == o.members[i].Key {
					o.members[j].Value = o.members[i].Value
					o.members = slices.Delete(o.members, i, i+1)
					i--
					break
				}
			}
		}
		if len(o.members) <= smallObject {
			return o
		}
	}
	idx := make([]int32, len(o.members))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(a, b int32) int { return strings.Compare(o.members[a].Key, o.members[b].Key) })
	// Duplicates are adjacent now, in input order: the last one's value
	// goes to the first one's place and the others are dropped.
	dup := false
	for i := 1; i < len(idx); i++ {
		if o.members[idx[i]].Key == o.members[idx[i-1]].Key {
			dup = true
			break
		}
	}
	if !dup {
		o.byKey = idx
		return o
	}
	keep := make([]bool, len(o.members))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && o.members[idx[j+1]].Key == o.members[idx[i]].Key {
			j++
		}
		o.members[idx[i]].Value = o.members[idx[j]].Value
		keep[idx[i]] = true
		i = j + 1
	}
	out := o.members[:0]
	for i, m := range o.members {
		if keep[i] {
			out = append(out, m)
		}
	}
	return newObject(out)
}

// Kind returns v's kind.
func (v Value) Kind() Kind { return v.kind }

// IsDefined reports whether v is not undefined.
func (v Value) IsDefined() bool { return v.kind != Undefined }

// AsBool returns the boolean of a Bool value, false otherwise.
func (v Value) AsBool() bool { return v.kind == Bool && v.num != 0 }

// AsNumber returns the number of a Number value, 0 otherwise.
func (v Value) AsNumber() float64 {
	if v.kind != Number {
		return 0
	}
	return v.num
}

// AsString returns the text of a String value, "" otherwise.
func (v Value) AsString() string { return v.str }

// Len returns the number of elements of an array or members of an object,
// 0 for other kinds.
func (v Value) Len() int {
	switch v.kind {
	case Array:
		return len(v.arr)
	case Object:
		return len(v.obj.members)
	}
	return 0
}

// Index returns element i of an array; undefined when v is not an array or
// i is out of range.
func (v Value) Index(i int) Value {
	if v.kind != Array || i < 0 || i >= len(v.arr) {
		return Value{}
	}
	return v.arr[i]
}

// Elems returns the elements of an array (nil otherwise). Read only.
func (v Value) Elems() []Value { return v.arr }

// Members returns the members of an object in first-seen order (nil
// otherwise). Read only.
func (v Value) Members() []Member {
	if v.kind != Object {
		return nil
	}
	return v.obj.members
}

// Get returns the property key of an object; undefined when v is not an
// object or has no such property.
func (v Value) Get(key string) Value {
	if v.kind != Object {
		return Value{}
	}
	o := v.obj
	if o.byKey == nil {
		for i := range o.members {
			if o.members[i].Key == key {
				return o.members[i].Value
			}
		}
		return Value{}
	}
	i, ok := slices.BinarySearchFunc(o.byKey, key, func(p int32, k string) int { return strings.Compare(o.members[p].Key, k) })
	if !ok {
		return Value{}
	}
	return o.members[o.byKey[i]].Value
}

// String returns v as compact JSON ("undefined" for undefined), for
// messages and tests.
func (v Value) String() string {
	if v.kind == Undefined {
		return "undefined"
	}
	return string(v.AppendJSON(nil))
}

// Equal reports whether a and b are the same JSON value: same kind and, for
// arrays and objects, deeply equal (object member order does not matter).
// Numbers compare as float64, so 0 equals -0.
func Equal(a, b Value) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case Bool, Number:
		return a.num == b.num
	case String:
		return a.str == b.str
	case Array:
		return slices.EqualFunc(a.arr, b.arr, Equal)
	case Object:
		if len(a.obj.members) != len(b.obj.members) {
			return false
		}
		for _, m := range a.obj.members {
			if !Equal(m.Value, b.Get(m.Key)) {
				return false
			}
		}
	}
	return true
}

// Compare is the total order of ORDER BY: it returns -1, 0 or +1. Kinds sort
// undefined < null < false < true < numbers < strings < arrays < objects
// (the order Cosmos DB documents for mixed-type ORDER BY). Numbers compare
// numerically (0 equals -0), strings by their UTF-8 bytes (ordinal), arrays
// element by element and then by length, objects by their members sorted by
// key (key, then value, member by member) and then by size. Among scalars the
// order equals the byte order of Key.
func Compare(a, b Value) int {
	if a.kind != b.kind {
		return cmp.Compare(a.kind, b.kind)
	}
	switch a.kind {
	case Bool:
		return cmp.Compare(a.num, b.num)
	case Number:
		if a.num == b.num { // also 0 and -0
			return 0
		}
		return cmp.Compare(a.num, b.num)
	case String:
		return strings.Compare(a.str, b.str)
	case Array:
		return slices.CompareFunc(a.arr, b.arr, Compare)
	case Object:
		am, bm := a.obj.sorted(), b.obj.sorted()
		return slices.CompareFunc(am, bm, func(x, y Member) int {
			if c := strings.Compare(x.Key, y.Key); c != 0 {
				return c
			}
			return Compare(x.Value, y.Value)
		})
	}
	return 0
}

// sorted returns the members ordered by key.
func (o *object) sorted() []Member {
	out := make([]Member, len(o.members))
	if o.byKey != nil {
		for i, p := range o.byKey {
			out[i] = o.members[p]
		}
		return out
	}
	copy(out, o.members)
	slices.SortFunc(out, func(x, y Member) int { return strings.Compare(x.Key, y.Key) })
	return out
}
