package query

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// function is a built-in scalar function. Its arguments arrive evaluated;
// a call whose arguments have the wrong kinds returns undefined, as Cosmos
// DB does.
type function struct {
	name             string // upper case
	minArgs, maxArgs int
	call             func(args []Value) Value
}

// functions are the built-ins, by upper-case name.
var functions = map[string]*function{}

func init() {
	for _, f := range []*function{
		{"IS_DEFINED", 1, 1, func(a []Value) Value { return BoolValue(a[0].kind != Undefined) }},
		{"IS_NULL", 1, 1, isKind(Null)},
		{"IS_BOOL", 1, 1, isKind(Bool)},
		{"IS_NUMBER", 1, 1, isKind(Number)},
		{"IS_STRING", 1, 1, isKind(String)},
		{"IS_ARRAY", 1, 1, isKind(Array)},
		{"IS_OBJECT", 1, 1, isKind(Object)},
		{"IS_PRIMITIVE", 1, 1, func(a []Value) Value {
			k := a[0].kind
			return BoolValue(k == Null || k == Bool || k == Number || k == String)
		}},
		{"STARTSWITH", 2, 3, stringTest(hasPrefixFold, strings.HasPrefix)},
		{"ENDSWITH", 2, 3, stringTest(hasSuffixFold, strings.HasSuffix)},
		{"CONTAINS", 2, 3, stringTest(containsFold, strings.Contains)},
		{"ARRAY_CONTAINS", 2, 3, arrayContains},
		{"ARRAY_LENGTH", 1, 1, func(a []Value) Value {
			if a[0].kind != Array {
				return Value{}
			}
			return NumberValue(float64(len(a[0].arr)))
		}},
		{"LENGTH", 1, 1, func(a []Value) Value {
			if a[0].kind != String {
				return Value{}
			}
			return NumberValue(float64(utf8.RuneCountInString(a[0].str)))
		}},
		{"LOWER", 1, 1, mapString(strings.ToLower)},
		{"UPPER", 1, 1, mapString(strings.ToUpper)},
	} {
		functions[f.name] = f
	}
}

// aggregates are recognised only to say they are not supported (COUNT is
// handled by the parser).
var aggregates = map[string]bool{"SUM": true, "AVG": true, "MIN": true, "MAX": true}

func isKind(k Kind) func([]Value) Value {
	return func(a []Value) Value { return BoolValue(a[0].kind == k) }
}

func mapString(f func(string) string) func([]Value) Value {
	return func(a []Value) Value {
		if a[0].kind != String {
			return Value{}
		}
		return StringValue(f(a[0].str))
	}
}

// stringTest builds STARTSWITH-like functions: (s, t [, ignoreCase bool]);
// undefined unless s and t are strings and ignoreCase, if given, a boolean.
func stringTest(fold, exact func(s, t string) bool) func([]Value) Value {
	return func(a []Value) Value {
		if a[0].kind != String || a[1].kind != String {
			return Value{}
		}
		if len(a) == 3 {
			if a[2].kind != Bool {
				return Value{}
			}
			if a[2].AsBool() {
				return BoolValue(fold(a[0].str, a[1].str))
			}
		}
		return BoolValue(exact(a[0].str, a[1].str))
	}
}

// hasPrefixFold reports whether s starts with p under Unicode simple case
// folding, rune by rune.
func hasPrefixFold(s, p string) bool {
	_, ok := foldPrefixLen(s, p)
	return ok
}

// foldPrefixLen matches p against the start of s ignoring case and returns
// the byte length of s that matched.
func foldPrefixLen(s, p string) (int, bool) {
	i := 0
	for _, pr := range p {
		if i >= len(s) {
			return 0, false
		}
		sr, size := utf8.DecodeRuneInString(s[i:])
		if !equalFoldRune(sr, pr) {
			return 0, false
		}
		i += size
	}
	return i, true
}

func hasSuffixFold(s, t string) bool {
	for i := len(s); i >= 0; i-- {
		if i < len(s) && !utf8.RuneStart(s[i]) {
			continue
		}
		if n, ok := foldPrefixLen(s[i:], t); ok && i+n == len(s) {
			return true
		}
	}
	return false
}

func containsFold(s, t string) bool {
	for i := 0; i <= len(s); i++ {
		if i < len(s) && !utf8.RuneStart(s[i]) {
			continue
		}
		if _, ok := foldPrefixLen(s[i:], t); ok {
			return true
		}
	}
	return false
}

func equalFoldRune(a, b rune) bool {
	if a == b {
		return true
	}
	for r := unicode.SimpleFold(a); r != a; r = unicode.SimpleFold(r) {
		if r == b {
			return true
		}
	}
	return false
}

// arrayContains is ARRAY_CONTAINS(arr, x [, partial]): whether an element
// equals x; with partial true, an object x also matches an object element
// that has all of x's members (with equal values).
func arrayContains(a []Value) Value {
	if a[0].kind != Array || a[1].kind == Undefined {
		return Value{}
	}
	partial := false
	if len(a) == 3 {
		if a[2].kind != Bool {
			return Value{}
		}
		partial = a[2].AsBool()
	}
	for _, e := range a[0].arr {
		if Equal(e, a[1]) || (partial && a[1].kind == Object && e.kind == Object && hasMembers(e, a[1])) {
			return BoolValue(true)
		}
	}
	return BoolValue(false)
}

// hasMembers reports whether object o has every member of sub.
func hasMembers(o, sub Value) bool {
	for _, m := range sub.obj.members {
		if !Equal(o.Get(m.Key), m.Value) {
			return false
		}
	}
	return true
}
