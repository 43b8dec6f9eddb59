package feedlog

import (
	"errors"
	"testing"
)

// FuzzParseToken: any string either parses into a key whose token
// parses back to the same key, or fails with an error wrapping
// ErrBadToken; never a panic.
func FuzzParseToken(f *testing.F) {
	for _, k := range []Key{
		{T: 1_700_000_000, S: 42, Class: ClassWrite, V: 42, ID: "a"},
		{T: 1_700_000_010, S: 0, Class: ClassExpiry, V: 7, ID: "user/é"},
		{T: -5, S: 9, Class: ClassExpiry, V: 1, ID: "x y"},
	} {
		f.Add(k.Token(3))
	}
	f.Add("ebbfeed1.3.1.2.1.2.")
	f.Add("ebbfeed1.3.1.2.1.2.YQ.")
	f.Add("ebbfeed1.4.1.2.1.2.YQ")
	f.Add("ebbfeed1.3.99999999999999999999.2.1.2.YQ")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseToken(s, 3)
		if err != nil {
			if !errors.Is(err, ErrBadToken) {
				t.Fatalf("%q: error %v does not wrap ErrBadToken", s, err)
			}
			return
		}
		back, err := ParseToken(k.Token(3), 3)
		if err != nil || Compare(&back, &k) != 0 {
			t.Fatalf("%q: key %+v, its token %q parses to %+v, %v", s, k, k.Token(3), back, err)
		}
	})
}

func TestKeyOrder(t *testing.T) {
	// Expiries at an instant come before the writes of that instant, and
	// after those of the instant before; a DefaultTTL change's after the
	// writes before it.
	keys := []Key{
		{T: 9, S: 5, Class: ClassWrite, V: 5, ID: "a"},
		{T: 10, S: 0, Class: ClassExpiry, V: 1, ID: "z"},
		{T: 10, S: 0, Class: ClassExpiry, V: 2, ID: "a"},
		{T: 10, S: 6, Class: ClassWrite, V: 6, ID: "a"},
		{T: 10, S: 6, Class: ClassWrite, V: 6, ID: "b"},
		{T: 10, S: 7, Class: ClassExpiry, V: 3, ID: "c"},
		{T: 10, S: 7, Class: ClassWrite, V: 7, ID: "c"},
		{T: 11, S: 8, Class: ClassWrite, V: 8, ID: "a"},
	}
	for i := 1; i < len(keys); i++ {
		if Compare(&keys[i-1], &keys[i]) >= 0 {
			t.Errorf("%+v does not come before %+v", keys[i-1], keys[i])
		}
	}
	if _, err := ExpiryLSN(5, 1<<20, 7); err != nil {
		t.Errorf("expiries spilling over a seq no write of the container took: %v", err)
	}
	if _, err := ExpiryLSN(5, 1<<19, 6); err == nil {
		t.Error("expiries reaching the next write's LSN: no error")
	}
}
