package query

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// randScalar returns a scalar biased towards edge cases: ±0, equal values,
// extremes, strings that are prefixes of one another, non-ASCII bytes.
func randScalar(r *rand.Rand) Value {
	switch r.IntN(6) {
	case 0:
		return NullValue()
	case 1:
		return BoolValue(r.IntN(2) == 0)
	case 2:
		specials := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, math.MaxFloat64, -math.MaxFloat64,
			math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, 1e21, -1e-7, 2, 3}
		if r.IntN(2) == 0 {
			return NumberValue(specials[r.IntN(len(specials))])
		}
		return NumberValue((r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(40)-20)))
	default:
		alphabet := []string{"a", "b", "", "\x00", "é", "\xff", "ab", "Z", "~"}
		var b strings.Builder
		for range r.IntN(4) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return StringValue(b.String())
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func TestKeyOrderMatchesCompare(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		a, b := randScalar(r), randScalar(r)
		ka, okA := Key(a)
		kb, okB := Key(b)
		if !okA || !okB {
			t.Fatalf("Key refused a scalar: %v %v", a, b)
		}
		if got, want := sign(bytes.Compare([]byte(ka), []byte(kb))), Compare(a, b); got != want {
			t.Fatalf("Key order %d, Compare %d for %v and %v", got, want, a, b)
		}
		if (ka == kb) != Equal(a, b) {
			t.Fatalf("Key equality differs from Equal for %v and %v", a, b)
		}
		if v, ok := keyValue(ka); !ok || !Equal(v, a) {
			t.Fatalf("keyValue(Key(%v)) = %v", a, v)
		}
	}
}

func TestKeyRefuses(t *testing.T) {
	for _, v := range []Value{{}, ArrayValue(nil), ObjectValue(nil), NumberValue(math.NaN()), NumberValue(math.Inf(1))} {
		if k, ok := Key(v); ok {
			t.Errorf("Key(%v) = %q, want refusal", v, k)
		}
	}
	if k1, _ := Key(NumberValue(math.Copysign(0, -1))); k1 != mustKey(NumberValue(0)) {
		t.Error("-0 and 0 have different keys")
	}
	if k, _ := Key(StringValue("ab")); !strings.HasPrefix(mustKey(StringValue("abc")), k) {
		t.Error("a string prefix is not a key prefix")
	}
}

func mustKey(v Value) string {
	k, ok := Key(v)
	if !ok {
		panic("no key for " + v.String())
	}
	return k
}

func TestCompareOrder(t *testing.T) {
	// One value of each rank, in ascending order.
	ordered := []string{`null`, `false`, `true`, `-1e300`, `-1`, `0`, `1e-9`, `1`, `""`, `"A"`, `"a"`, `"ab"`, `"é"`,
		`[]`, `[1]`, `[1,2]`, `[2]`, `["a"]`, `{}`, `{"a":1}`, `{"a":1,"b":0}`, `{"a":2}`, `{"b":0}`}
	vals := append([]Value{{}}, decodeAll(t, ordered)...)
	for i := range vals {
		for j := range vals {
			if got, want := Compare(vals[i], vals[j]), sign(i-j); got != want {
				t.Errorf("Compare(%v, %v) = %d, want %d", vals[i], vals[j], got, want)
			}
		}
	}
	if Compare(mustDecode(t, `{"b":1,"a":2}`), mustDecode(t, `{"a":2,"b":1}`)) != 0 {
		t.Error("objects with the same members in another order differ")
	}
	if CompareOrder(NumberValue(1), "b", NumberValue(1), "a", true) <= 0 {
		t.Error("ties must sort by id ascending even when descending")
	}
	if CompareOrder(NumberValue(2), "a", NumberValue(1), "b", true) >= 0 {
		t.Error("descending order")
	}
}

func TestTerms(t *testing.T) {
	doc := mustDecode(t, `{"id":"x","a":{"b":1,"c":[true,null]},"tags":["x","y","x"],"m":[[1],[{"k":"v"}]],
		"a/b":2,"[]":3,"":4,"q\"":5,"_etag":"e","e":[],"o":{}}`)
	all := func(string) bool { return true }
	var got []string
	for _, term := range Terms(doc, all, nil) {
		v, _ := keyValue(term.Key)
		got = append(got, term.Path+"="+v.String())
	}
	wantAll := []string{
		`/""=4`, `/"[]"=3`, `/"a/b"=2`, `/"q\""=5`, `/_etag="e"`, `/a/b=1`, `/a/c/[]=null`, `/a/c/[]=true`,
		`/id="x"`, `/m/[]/[]=1`, `/m/[]/[]/k="v"`, `/tags/[]="x"`, `/tags/[]="y"`,
	}
	if !slices.Equal(got, wantAll) {
		t.Errorf("Terms:\n got %q\nwant %q", got, wantAll)
	}
	// Only indexed paths; dst is appended to.
	dst := []Term{{Path: "keep", Key: "k"}}
	out := Terms(doc, func(p string) bool { return p == "/tags/[]" }, dst)
	if len(out) != 3 || out[0].Path != "keep" || out[1].Key != mustKey(StringValue("x")) || out[2].Key != mustKey(StringValue("y")) {
		t.Errorf("Terms with one indexed path = %q", out)
	}
	if n := len(Terms(StringValue("s"), all, nil)); n != 0 {
		t.Errorf("a scalar document has %d terms", n)
	}
	if got := TermPath("a", "b/c", "[]"); got != `/a/"b/c"/"[]"` {
		t.Errorf("TermPath = %s", got)
	}
}

// TestAppendNumberKey: AppendNumberKey appends what Key makes of a number.
func TestAppendNumberKey(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 1.5e300, -2.5e-300, 1700000000, math.NaN(), math.Inf(-1)} {
		want, wantOK := Key(NumberValue(f))
		got, ok := AppendNumberKey([]byte("x"), f)
		if ok != wantOK || ok && string(got) != "x"+want || !ok && string(got) != "x" {
			t.Errorf("AppendNumberKey(%v) = %q, %v; Key says %q, %v", f, got, ok, want, wantOK)
		}
	}
}
