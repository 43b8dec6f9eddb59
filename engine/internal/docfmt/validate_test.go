package docfmt

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestValidateIDFastPath checks that ValidateID's table agrees with the
// character-by-character rules on every byte in every position, at the
// length limit, and on random strings.
func TestValidateIDFastPath(t *testing.T) {
	check := func(id string) {
		t.Helper()
		fast, slow := ValidateID(id), validateIDSlow(id)
		if (fast == nil) != (slow == nil) {
			t.Fatalf("ValidateID(%q) = %v, character by character %v", id, fast, slow)
		}
	}
	for c := 0; c < 256; c++ {
		for _, id := range []string{string(rune(c)), "a" + string([]byte{byte(c)}), string([]byte{byte(c)}) + "z", "ab" + string([]byte{byte(c)}) + "cd"} {
			check(id)
		}
	}
	check(strings.Repeat("x", MaxIDLength))
	check(strings.Repeat("x", MaxIDLength+1))
	check(strings.Repeat("é", MaxIDLength))
	check(strings.Repeat("é", MaxIDLength+1))
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("az09-_ /\\?#\x00\x1f\x7f\xc3\xa9\xff.")
	for range 20000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		check(string(b))
	}
	if err := ValidateID("doc-000000000000042"); err != nil {
		t.Fatalf("a plain id: %v", err)
	}
	for _, bad := range []string{"a/b", `a\b`, "a?b", "a#b", "a\x01b", "\xff"} {
		if ValidateID(bad) == nil {
			t.Errorf("ValidateID(%q) accepted it", bad)
		}
	}
}

func BenchmarkValidateID(b *testing.B) {
	id := "doc-000000000000000000000042"
	for b.Loop() {
		if err := ValidateID(id); err != nil {
			b.Fatal(err)
		}
	}
}
