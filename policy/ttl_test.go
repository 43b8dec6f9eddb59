package policy

import (
	"errors"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ebbdb/ebb/internal/ttlvectors"
)

func TestParseItemTTLVectors(t *testing.T) {
	v := ttlvectors.MustLoad(t)
	for _, raw := range v.ItemTTLJSON.Valid {
		got, err := ParseItemTTL([]byte(raw))
		if err != nil {
			t.Errorf("ParseItemTTL(%s): unexpected error %v", raw, err)
			continue
		}
		want, _ := strconv.ParseInt(raw, 10, 32)
		if int64(got) != want {
			t.Errorf("ParseItemTTL(%s) = %d, want %d", raw, got, want)
		}
	}
	for _, raw := range v.ItemTTLJSON.Invalid {
		got, err := ParseItemTTL([]byte(raw))
		if err == nil {
			t.Errorf("ParseItemTTL(%s) = %d, want an error", raw, got)
			continue
		}
		checkTTLError(t, err, FieldTTL, raw)
	}
}

func checkTTLError(t *testing.T, err error, field, raw string) {
	t.Helper()
	if !errors.Is(err, ErrInvalidTTL) {
		t.Errorf("%s %s: error %q does not wrap ErrInvalidTTL", field, raw, err)
	}
	var te *InvalidTTLError
	if !errors.As(err, &te) || te.Field != field {
		t.Errorf("%s %s: error %q is not an *InvalidTTLError for %q", field, raw, err, field)
	}
	want := field + " " + raw + " is invalid: " + field +
		" must be -1 (never expire) or an integer from 1 to 2147483647"
	if err.Error() != want {
		t.Errorf("%s %s: message\n got %q\nwant %q", field, raw, err, want)
	}
}

func TestParseItemTTL(t *testing.T) {
	valid := []struct {
		raw  string
		want int32
	}{
		{"1", 1},
		{"-1", -1},
		{"60", 60},
		{"2147483647", MaxTTL},
		{" 60 ", 60},
		{"\n\t60\r", 60},
		// Integral values in any JSON number form.
		{"1e3", 1000},
		{"1E3", 1000},
		{"1e+3", 1000},
		{"10.0", 10},
		{"10.000000000000000000000000000", 10},
		{"600e-1", 60},
		{"0.5e1", 5},
		{"0.06e3", 60},
		{"-1.0", -1},
		{"-1e0", -1},
		{"-10e-1", -1},
		{"-0.1e1", -1},
		{"2.147483647e9", MaxTTL},
		{"21474836470e-1", MaxTTL},
	}
	for _, c := range valid {
		got, err := ParseItemTTL([]byte(c.raw))
		if err != nil || got != c.want {
			t.Errorf("ParseItemTTL(%q) = %d, %v; want %d, nil", c.raw, got, err, c.want)
		}
	}

	invalid := []string{
		"", " ", "0", "-0", "0.0", "0e5", "-0.0", "null", "true", "false",
		`"10"`, `"-1"`, "{}", "[]", "[60]", `{"ttl":60}`,
		"-2", "-100", "-2147483647", "-2147483648", "-1.5", "-0.5e1",
		"2147483648", "9999999999", "99999999999999999999999", "1e10", "2.147483648e9",
		"1.5", "0.5", "60.5", "1e-1", "1.0000000001", "2147483646.5",
		"1e999999999999999999", "1e-999999999999999999",
		// Not JSON numbers.
		"01", "00", "-01", "+1", ".5", "5.", "1.e3", "1e", "1e+", "--1", "-", "0x10",
		"Infinity", "NaN", "1_000", "6 0", "60,", "١٢", "60\x00",
	}
	for _, raw := range invalid {
		got, err := ParseItemTTL([]byte(raw))
		if err == nil {
			t.Errorf("ParseItemTTL(%q) = %d, want an error", raw, got)
			continue
		}
		if !errors.Is(err, ErrInvalidTTL) || errors.Is(err, ErrInvalidDefaultTTL) {
			t.Errorf("ParseItemTTL(%q): error %q wraps the wrong sentinel", raw, err)
		}
		if !strings.HasPrefix(err.Error(), "ttl ") {
			t.Errorf("ParseItemTTL(%q): message %q does not name the field", raw, err)
		}
	}
}

func TestParseItemTTLMessage(t *testing.T) {
	for _, c := range []struct{ raw, shown string }{
		{"0", "0"},
		{" 0 ", "0"},
		{"null", "null"},
		{`"10"`, `"10"`},
		{"", "(empty)"},
		{"{\n}", `"{\n}"`},
		{`"` + strings.Repeat("x", 100) + `"`, `"` + strings.Repeat("x", 63) + "..."},
		{"\"\xff\"", `"\"\xff\""`},
	} {
		_, err := ParseItemTTL([]byte(c.raw))
		want := "ttl " + c.shown + " is invalid: ttl must be -1 (never expire) or an integer from 1 to 2147483647"
		if err == nil || err.Error() != want {
			t.Errorf("ParseItemTTL(%q) error\n got %v\nwant %s", c.raw, err, want)
		}
	}
}

func TestValidateDefaultTTLVectors(t *testing.T) {
	v := ttlvectors.MustLoad(t)
	for _, d := range v.DefaultTTL.Valid {
		if d == nil {
			continue // absent: TTL off, always valid; nothing to validate
		}
		if err := ValidateDefaultTTL(*d); err != nil {
			t.Errorf("ValidateDefaultTTL(%d): unexpected error %v", *d, err)
		}
	}
	for _, d := range v.DefaultTTL.Invalid {
		if d == nil {
			t.Fatalf("vectors list an absent defaultTtl as invalid")
		}
		err := ValidateDefaultTTL(*d)
		if err == nil {
			t.Errorf("ValidateDefaultTTL(%d): want an error", *d)
			continue
		}
		if !errors.Is(err, ErrInvalidDefaultTTL) || errors.Is(err, ErrInvalidTTL) {
			t.Errorf("ValidateDefaultTTL(%d): error %q wraps the wrong sentinel", *d, err)
		}
		want := "defaultTtl " + strconv.FormatInt(*d, 10) +
			" is invalid: defaultTtl must be -1 (never expire) or an integer from 1 to 2147483647"
		if err.Error() != want {
			t.Errorf("ValidateDefaultTTL(%d): message\n got %q\nwant %q", *d, err, want)
		}
	}
}

func TestValidateDefaultTTLBounds(t *testing.T) {
	for _, v := range []int64{-1, 1, 2, 3600, MaxTTL} {
		if err := ValidateDefaultTTL(v); err != nil {
			t.Errorf("ValidateDefaultTTL(%d) = %v", v, err)
		}
	}
	for _, v := range []int64{0, -2, -1 << 63, MaxTTL + 1, 1<<63 - 1, 1 << 32} {
		if err := ValidateDefaultTTL(v); !errors.Is(err, ErrInvalidDefaultTTL) {
			t.Errorf("ValidateDefaultTTL(%d) = %v, want ErrInvalidDefaultTTL", v, err)
		}
	}
}

// FuzzParseItemTTL checks ParseItemTTL against an independent reading of the
// rule: accepted iff the text is a JSON number whose exact value is -1 or an
// integer in 1..MaxTTL.
func FuzzParseItemTTL(f *testing.F) {
	v := ttlvectors.MustLoad(f)
	for _, s := range v.ItemTTLJSON.Valid {
		f.Add([]byte(s))
	}
	for _, s := range v.ItemTTLJSON.Invalid {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := ParseItemTTL(raw)
		want, ok := referenceTTL(raw)
		if ok != (err == nil) || (ok && got != want) {
			t.Fatalf("ParseItemTTL(%q) = %d, %v; reference says %d, %v", raw, got, err, want, ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidTTL) {
			t.Fatalf("ParseItemTTL(%q): error %v does not wrap ErrInvalidTTL", raw, err)
		}
	})
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE]([+-]?[0-9]+))?$`)

// referenceTTL is a slow, independent reading of the ttl rule, for the fuzz
// target: exact rational arithmetic with math/big.
func referenceTTL(raw []byte) (int32, bool) {
	s := strings.Trim(string(raw), " \t\n\r")
	m := jsonNumber.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	if m[4] != "" {
		// Keep big.Rat away from huge powers of ten: a nonzero value with an
		// exponent beyond ±(len+20) is either below 1e-20 or above 1e20.
		e, err := strconv.ParseInt(m[4], 10, 64)
		if err != nil || e > int64(len(s))+20 || e < -int64(len(s))-20 {
			return 0, false
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok || !r.IsInt() {
		return 0, false
	}
	n := r.Num()
	if !n.IsInt64() {
		return 0, false
	}
	v := n.Int64()
	if v == -1 || (v >= 1 && v <= MaxTTL) {
		return int32(v), true
	}
	return 0, false
}
