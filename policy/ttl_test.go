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
