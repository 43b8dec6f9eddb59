package pkey

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// orderedKeys are keys in the order their composites must sort.
var orderedKeys = []Key{
	{},
	{Kind: Null},
	BoolKey(false),
	BoolKey(true),
	NumberKey(-math.MaxFloat64),
	NumberKey(-1e10),
	NumberKey(-1.5),
	NumberKey(-math.SmallestNonzeroFloat64),
	NumberKey(0),
	NumberKey(math.SmallestNonzeroFloat64),
	NumberKey(1),
	NumberKey(5),
	NumberKey(1e300),
	NumberKey(math.MaxFloat64),
	StringKey(""),
	StringKey("\x00"),
	StringKey("\x00\x00"),
	StringKey("\x00\x01"),
	StringKey("\x01"),
	StringKey("\x01\x00"),
	StringKey("\x02"),
	StringKey("a"),
	StringKey("a\x00"),
	StringKey("a\x00b"),
	StringKey("a\x01"),
	StringKey("ab"),
	StringKey("b"),
	StringKey("é"),
	StringKey("\U0001F600"),
}

func TestComposeOrderAndRoundTrip(t *testing.T) {
	ids := []string{"a", "a b", "z", "é"}
	var all []string
	for _, k := range orderedKeys {
		for _, id := range ids {
			s := Compose(k, id)
			if !utf8.ValidString(s) {
				t.Errorf("Compose(%v, %q) = %q is not UTF-8", k, id, s)
			}
			if !strings.HasPrefix(s, Prefix(k)) || !IsComposite(s) {
				t.Errorf("Compose(%v, %q) = %q does not start with its prefix", k, id, s)
			}
			gk, gid, err := Split(s)
			if err != nil || gk != k || gid != id {
				t.Errorf("Split(Compose(%v, %q)) = %v, %q, %v", k, id, gk, gid, err)
			}
			all = append(all, s)
		}
	}
	if !slices.IsSorted(all) {
		for i := 1; i < len(all); i++ {
			if all[i-1] >= all[i] {
				t.Errorf("composites out of order: %q >= %q", all[i-1], all[i])
			}
		}
	}
	// No key's prefix is a prefix of another key's composite.
	for _, a := range orderedKeys {
		for _, b := range orderedKeys {
			if a != b && strings.HasPrefix(Compose(b, "x"), Prefix(a)) {
				t.Errorf("prefix of %v selects an item of %v", a, b)
			}
		}
	}
}

func TestNumberKeyEquality(t *testing.T) {
	if NumberKey(5) != NumberKey(5.0) || NumberKey(math.Copysign(0, -1)) != NumberKey(0) {
		t.Error("equal numbers give different keys")
	}
	if Compose(NumberKey(math.Copysign(0, -1)), "a") != Compose(NumberKey(0), "a") {
		t.Error("-0 and 0 compose differently")
	}
}

func TestSplitDamaged(t *testing.T) {
	for _, s := range []string{
		"", "a", "\x01", "\x01" + "9a", "\x010", "\x014", "\x014zzzzzzzzzzzzzzzza",
		"\x014" + "fff8000000000000" + "a", "\x014" + "0007ffffffffffff" + "a", // NaN, -NaN
		"\x015abc", "\x015a\x01\x03\x00a", "\x015\x00", "\x015a\x00a/b", "\x015\xff\x00a",
		"\x013" + strings.Repeat("x", 300),
	} {
		if _, _, err := Split(s); !errors.Is(err, ErrBadItemKey) {
			t.Errorf("Split(%q) = %v, want ErrBadItemKey", s, err)
		}
	}
}

func TestParseHeader(t *testing.T) {
	for in, want := range map[string]Key{
		`["a"]`: StringKey("a"), `[5]`: NumberKey(5), `[-0.0]`: NumberKey(0), `[null]`: {Kind: Null},
		`[{}]`: {}, `[]`: {}, `[ true ]`: BoolKey(true),
	} {
		k, err := ParseHeader([]byte(in))
		if err != nil || k != want {
			t.Errorf("ParseHeader(%s) = %v, %v; want %v", in, k, err, want)
		}
		if back, err := ParseHeader([]byte(k.String())); err != nil || back != k {
			t.Errorf("ParseHeader(%s.String() = %s) = %v, %v", in, k.String(), back, err)
		}
	}
}

// FuzzSplit: the composite decoder never panics, and what it accepts is
// what Compose makes.
func FuzzSplit(f *testing.F) {
	for _, k := range orderedKeys {
		f.Add(Compose(k, "id"))
	}
	f.Add("\x015a\x01\x01b\x00x")
	f.Add("\x014zzzz")
	f.Fuzz(func(t *testing.T, s string) {
		k, id, err := Split(s)
		if err != nil {
			if !errors.Is(err, ErrBadItemKey) {
				t.Fatalf("Split(%q): error %v does not wrap ErrBadItemKey", s, err)
			}
			return
		}
		if k.Check() != nil {
			t.Fatalf("Split(%q) accepted key %v: %v", s, k, k.Check())
		}
		if back := Compose(k, id); back != s {
			t.Fatalf("Split(%q) = %v, %q; composed back: %q", s, k, id, back)
		}
	})
}

// FuzzParseHeader: the header parser never panics, and what it accepts
// prints as a header that parses to the same key.
func FuzzParseHeader(f *testing.F) {
	for _, s := range []string{`["a"]`, `[5]`, `[1e400]`, `[{}]`, `[]`, `[null]`, `[true]`, `["a","b"]`, `[{"a":1}]`, `["\ud800"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := ParseHeader(b)
		if err != nil {
			return
		}
		if k.Check() != nil {
			t.Fatalf("ParseHeader(%q) accepted key %v: %v", b, k, k.Check())
		}
		back, err := ParseHeader([]byte(k.String()))
		if err != nil || back != k {
			t.Fatalf("ParseHeader(%q) = %v; its String %s parses to %v, %v", b, k, k.String(), back, err)
		}
	})
}
