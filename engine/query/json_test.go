package query

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestDecodeAppendJSON(t *testing.T) {
	for _, tc := range []struct{ in, out string }{
		{`{"a":1,"b":[true,false,null],"c":{"d":"e"}}`, `{"a":1,"b":[true,false,null],"c":{"d":"e"}}`},
		{` { "a" : 1 , "a" : 2 , "b" : 3 } `, `{"a":2,"b":3}`},
		{`"\u00e9\ud83d\ude00\n\t\"\\\/"`, `"é😀\n\t\"\\/"`},
		{`"\ud800x"`, `"` + "\ufffd" + `x"`},
		{"\"\xff\"", `"` + "\ufffd" + `"`},
		{`1e21`, `1e+21`},
		{`0.000001`, `0.000001`},
		{`1e-7`, `1e-7`},
		{`-0`, `-0`},
		{`123456789012`, `123456789012`},
		{`[]`, `[]`},
		{`{}`, `{}`},
		{`"\u0001"`, `"\u0001"`},
	} {
		v, err := Decode([]byte(tc.in))
		if err != nil {
			t.Errorf("Decode(%s): %v", tc.in, err)
			continue
		}
		if got := string(v.AppendJSON(nil)); got != tc.out {
			t.Errorf("Decode(%s) → %s, want %s", tc.in, got, tc.out)
		}
	}
	// Large objects (indexed lookups) keep last-wins semantics and order.
	var b strings.Builder
	b.WriteString("{")
	for i := range 40 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + string(rune('A'+i%20)) + `":` + string(rune('0'+i%10)))
	}
	b.WriteString("}")
	v := mustDecode(t, b.String())
	if v.Len() != 20 || v.Get("kA").AsNumber() != 0 || v.Get("kJ").AsNumber() != 9 || v.Get("kT").AsNumber() != 9 || v.Get("zz").IsDefined() {
		t.Fatalf("large object: %v", v)
	}
	if v.Members()[0].Key != "kA" {
		t.Fatalf("first member %q", v.Members()[0].Key)
	}
	var std map[string]any
	_ = json.Unmarshal([]byte(b.String()), &std)
	if std["kK"].(float64) != v.Get("kK").AsNumber() {
		t.Fatal("last wins differs from encoding/json")
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, in := range []string{``, ` `, `{`, `{"a"}`, `{"a":1,}`, `[1,]`, `01`, `1.`, `.5`, `-`, `1e`, `tru`, `nul`,
		`"abc`, "\"\x01\"", `"\x"`, `"\u12"`, `{} {}`, `1e400`, `[` + strings.Repeat("[", 10000) + strings.Repeat("]", 10001)} {
		if _, err := Decode([]byte(in)); !errors.Is(err, ErrInvalidJSON) {
			t.Errorf("Decode(%.40q) = %v, want ErrInvalidJSON", in, err)
		}
	}
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	if _, err := Decode([]byte(deep)); err != nil {
		t.Errorf("depth 10000: %v", err)
	}
}

func TestFromGo(t *testing.T) {
	type S struct {
		A int    `json:"a"`
		B []byte `json:"b"`
	}
	for _, tc := range []struct {
		in   any
		want string
	}{
		{nil, "null"},
		{true, "true"},
		{int8(-3), "-3"},
		{uint64(7), "7"},
		{float32(0.5), "0.5"},
		{"s", `"s"`},
		{[]any{1, "x", nil}, `[1,"x",null]`},
		{map[string]any{"b": 1, "a": []any{}}, `{"a":[],"b":1}`},
		{json.RawMessage(`{"x":[1]}`), `{"x":[1]}`},
		{json.Number("12.5"), "12.5"},
		{S{A: 1, B: []byte("hi")}, `{"a":1,"b":"aGk="}`},
		{[]string{"p", "q"}, `["p","q"]`},
		{StringValue("v"), `"v"`},
	} {
		v, err := FromGo(tc.in)
		if err != nil {
			t.Errorf("FromGo(%#v): %v", tc.in, err)
			continue
		}
		if got := v.String(); got != tc.want {
			t.Errorf("FromGo(%#v) = %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, bad := range []any{math.NaN(), math.Inf(-1), make(chan int), []any{math.NaN()}, json.RawMessage(`{`)} {
		if _, err := FromGo(bad); !errors.Is(err, ErrInvalidJSON) {
			t.Errorf("FromGo(%T) = %v, want ErrInvalidJSON", bad, err)
		}
	}
}

func TestValueAccessors(t *testing.T) {
	v := mustDecode(t, `{"a":[1,"x"],"b":null}`)
	if v.Kind() != Object || v.Get("a").Kind() != Array || v.Get("a").Index(1).AsString() != "x" ||
		v.Get("a").Index(2).IsDefined() || v.Get("b").Kind() != Null || v.Index(0).IsDefined() || len(v.Get("a").Elems()) != 2 {
		t.Fatalf("accessors on %v", v)
	}
	if (Value{}).String() != "undefined" || Kind(9).String() == "" || Object.String() != "object" {
		t.Fatal("String")
	}
	if got := string(ArrayValue([]Value{NumberValue(1), {}, NumberValue(math.NaN())}).AppendJSON(nil)); got != "[1,null]" {
		t.Fatalf("AppendJSON drops undefined, writes NaN as null: %s", got)
	}
	if got := ObjectValue([]Member{{"x", NumberValue(1)}, {"y", Value{}}, {"x", NumberValue(2)}}).String(); got != `{"x":2}` {
		t.Fatalf("ObjectValue: %s", got)
	}
}
