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
		{T: 1_700_000_010, S: 9, Class: ClassExpiry, M: 2, V: 1, ID: "b"},
	} {
		f.Add(k.Token(3))
	}
	f.Add("ebbfeed1.3.1.2.1.2.")
	f.Add("ebbfeed1.3.1.2.1.2.YQ.")
	f.Add("ebbfeed1.3.1.2.0.2.YQ.0")
	f.Add("ebbfeed1.3.1.2.0.2.YQ.1")
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
	// writes before it, and after those of an earlier change at the same
	// journal position, whatever versions they expire.
	keys := []Key{
		{T: 9, S: 5, Class: ClassWrite, V: 5, ID: "a"},
		{T: 10, S: 0, Class: ClassExpiry, V: 1, ID: "z"},
		{T: 10, S: 0, Class: ClassExpiry, V: 2, ID: "a"},
		{T: 10, S: 6, Class: ClassWrite, V: 6, ID: "a"},
		{T: 10, S: 6, Class: ClassWrite, V: 6, ID: "b"},
		{T: 10, S: 7, Class: ClassExpiry, V: 3, ID: "c"},
		{T: 10, S: 7, Class: ClassExpiry, M: 1, V: 1, ID: "a"},
		{T: 10, S: 7, Class: ClassExpiry, M: 2, V: 0, ID: "a"},
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

// TestTokenChangeRank: an expiry's change rank is in its token only when it
// is not 0, so every other token reads as before; a token that writes 0, or
// gives a rank to a write or to an expiry no DefaultTTL change caused, is
// refused.
func TestTokenChangeRank(t *testing.T) {
	k := Key{T: 10, S: 7, Class: ClassExpiry, M: 3, V: 1, ID: "a"}
	if got, want := k.Token(3), "ebbfeed1.3.10.7.0.1.YQ.3"; got != want {
		t.Fatalf("token %q, want %q", got, want)
	}
	if back, err := ParseToken(k.Token(3), 3); err != nil || back != k {
		t.Fatalf("parsed back to %+v, %v", back, err)
	}
	k.M = 0
	if got, want := k.Token(3), "ebbfeed1.3.10.7.0.1.YQ"; got != want {
		t.Fatalf("token %q, want %q", got, want)
	}
	for _, bad := range []string{"ebbfeed1.3.10.7.0.1.YQ.0", "ebbfeed1.3.10.7.1.7.YQ.1", "ebbfeed1.3.10.0.0.1.YQ.1", "ebbfeed1.3.10.7.0.1.YQ.x"} {
		if _, err := ParseToken(bad, 3); !errors.Is(err, ErrBadToken) {
			t.Errorf("%q: %v, want ErrBadToken", bad, err)
		}
	}
}
