package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// TestInvalidJSONReportedAtItsOffset: malformed input is reported as
// invalid JSON at the offset where it goes wrong, whatever its first byte
// looks like, never as a valid value of the wrong type.
func TestInvalidJSONReportedAtItsOffset(t *testing.T) {
	for _, c := range []struct {
		in  string
		off int
	}{
		{`not json`, 0}, {`nul`, 0}, {`tru`, 0}, {`true1`, 4}, {`falsey`, 5}, {`123abc`, 3}, {`-`, 1}, {`1.`, 2},
		{`01`, 1}, {`"abc`, 4}, {`"a\x"`, 2}, {`[1,]`, 3}, {`[1 2]`, 3}, {`  x`, 2}, {`{"id":"a"} x`, 11},
		{`{"id":"a",}`, 10}, {`{"id" "a"}`, 6}, {`{"id":tru}`, 6}, {"\"\xff\"", 1}, {`[`, 1}, {`{"id":"a","n":1e}`, 16},
		{`null x`, 5}, {`"s" "t"`, 4}, {`[] ]`, 3},
	} {
		_, err := parseDocument([]byte(c.in))
		want := fmt.Sprintf("invalid JSON at offset %d", c.off)
		if err == nil || !errors.Is(err, ErrInvalidDocument) || !strings.Contains(err.Error(), want) {
			t.Errorf("parseDocument(%q) = %v, want an ErrInvalidDocument containing %q", c.in, err, want)
		}
		if json.Valid([]byte(c.in)) && utf8.ValidString(c.in) {
			t.Errorf("test case %q is valid JSON", c.in)
		}
	}
	// Valid JSON of another type is named by its type.
	for in, kind := range map[string]string{`null`: "null", ` true `: "a boolean", `-1.5e3`: "a number", `"x"`: "a string", `[{}]`: "an array"} {
		_, err := parseDocument([]byte(in))
		if want := "must be a JSON object, not " + kind; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseDocument(%q) = %v, want %q", in, err, want)
		}
	}
}

// TestInvalidJSONNeverMisreported: the property behind
// TestInvalidJSONReportedAtItsOffset, over every prefix of the test
// documents and random single-byte changes of them: input that is not JSON
// is reported as invalid JSON at an offset no later than where the bytes
// stop being the start of a JSON text (for a prefix, its length), never as
// a valid value of the wrong type, a missing id or any other rule applied
// to a value that was not there.
func TestInvalidJSONNeverMisreported(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	junk := []byte("{}[]\",:0123456789-+.eEtrufalsn \t\n\x00\xff\u00e9")
	n := 0
	for _, c := range documentCases() {
		doc := []byte(c.doc)
		if len(doc) > 2000 {
			continue
		}
		for k := range len(doc) {
			if b := doc[:k]; !json.Valid(b) {
				_, err := parseDocument(b)
				checkInvalidJSONError(t, b, k, err)
				n++
			}
		}
		for range 50 {
			b := slices.Clone(doc)
			if len(b) == 0 {
				break
			}
			switch p := rng.IntN(len(b)); rng.IntN(3) {
			case 0:
				b[p] = junk[rng.IntN(len(junk))]
			case 1:
				b = slices.Insert(b, p, junk[rng.IntN(len(junk))])
			default:
				b = slices.Delete(b, p, p+1)
			}
			if !json.Valid(b) {
				_, err := parseDocument(b)
				checkInvalidJSONError(t, b, len(b), err)
				n++
			}
		}
	}
	if n < 1000 {
		t.Fatalf("only %d invalid inputs were tried", n)
	}
}

var invalidAtRE = regexp.MustCompile(`invalid JSON at offset (\d+)`)

// checkInvalidJSONError checks the error parseDocument gave for b, which is
// not valid JSON and stops being the start of a JSON text at or before
// offset limit: it is a syntax error at an offset up to limit, or one of
// the rules that apply as the bytes are read, before the grammar fails (a
// number out of range, an unpaired surrogate, nesting, size), or, for
// input of nothing but whitespace, that it is empty.
func checkInvalidJSONError(t *testing.T, b []byte, limit int, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("parseDocument(%.80q) accepted invalid JSON", b)
	}
	var de *docError
	if errors.As(err, &de) && de.syntax {
		m := invalidAtRE.FindStringSubmatch(err.Error())
		if m == nil {
			t.Fatalf("parseDocument(%.80q): syntax error %q does not say \"invalid JSON at offset\"", b, err)
		}
		if off, _ := strconv.Atoi(m[1]); off > limit {
			t.Fatalf("parseDocument(%.80q): %v: the offset is past %d, where the input stops being JSON", b, err, limit)
		}
		return
	}
	for _, ok := range []string{"out of range", "unpaired surrogate", "nest deeper than", "larger than the maximum document size", "document: empty;"} {
		if strings.Contains(err.Error(), ok) {
			return
		}
	}
	t.Fatalf("parseDocument(%.80q), which is not JSON: %v, want invalid JSON at its offset", b, err)
}

// TestReadBodyWritesBack: for random documents near MaxDocumentSize, what
// Read returns (the document plus _ts and _etag) is accepted by Replace and
// Upsert, and the size limit counts exactly the document without its
// system properties.
func TestReadBodyWritesBack(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 7))
	db := openTest(t, t.TempDir(), newFakeClock(t0))
	defer db.Close()
	c := mustCreateContainer(t, db, ContainerProperties{ID: "c", DefaultTTL: TTL(-1)})
	for i := range 12 {
		id := fmt.Sprintf("doc%d", i)
		// A few members of random sizes, the last one padded so that the
		// document is within 64 bytes of the limit (exactly at it every
		// third time).
		head := fmt.Sprintf(`{"id":%q,"ttl":%d,"a":%d,"b":"%s"`, id, 1+rng.IntN(1000), rng.Int64(), strings.Repeat("y", rng.IntN(1000)))
		pad := MaxDocumentSize - len(head) - len(`,"pad":""}`)
		if i%3 != 0 {
			pad -= rng.IntN(64)
		}
		doc := head + `,"pad":"` + strings.Repeat("x", pad) + `"}`
		if i%3 == 0 && len(doc) != MaxDocumentSize {
			t.Fatalf("test document is %d bytes, not %d", len(doc), MaxDocumentSize)
		}
		if _, err := c.Upsert(ctx, []byte(doc)); err != nil {
			t.Fatalf("Upsert of a %d-byte document: %v", len(doc), err)
		}
		it, err := c.Read(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(it.Body) <= MaxDocumentSize && i%3 == 0 {
			t.Fatalf("Read body is %d bytes: the test does not pass the limit", len(it.Body))
		}
		if _, err := c.Replace(ctx, it.Body, IfMatch(it.ETag)); err != nil {
			t.Errorf("Replace with the %d-byte body Read returned: %v", len(it.Body), err)
		}
		it, _ = c.Read(ctx, id)
		if _, err := c.Upsert(ctx, it.Body); err != nil {
			t.Errorf("Upsert with the %d-byte body Read returned: %v", len(it.Body), err)
		}
		// One more byte of document is one too many, system properties or not.
		over := `{"_ts":1,"_etag":"e",` + doc[1:len(doc)-2] + strings.Repeat("x", MaxDocumentSize-len(doc)+1) + `"}`
		if _, err := c.Upsert(ctx, []byte(over)); !errors.Is(err, ErrInvalidDocument) || !strings.Contains(err.Error(), "larger than the maximum document size") {
			t.Errorf("Upsert of a document of MaxDocumentSize+1 bytes: %v", err)
		}
	}
}

// TestIDsNeverMerge: an accepted id is exactly the sequence of characters
// its JSON token denotes, so two tokens give one id only when they denote
// the same characters. Random id tokens built from raw and escaped
// characters, surrogate pairs, lone surrogates and U+FFFD: a token with a
// lone surrogate (which decoders would turn into U+FFFD, merging "a\ud800b"
// with "a\ufffdb") is refused; every other one is accepted as its strict
// decoding.
func TestIDsNeverMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	frags := []string{"a", "é", `\u00e9`, `\ud83c\udf89`, "🎉", `\ufffd`, "\ufffd", `\ud800`, `\udc00`, `\uDBFF`, `\u0041`}
	byID := map[string]string{} // id -> the characters some token denoted
	for range 2000 {
		var tok strings.Builder
		for range 1 + rng.IntN(4) {
			tok.WriteString(frags[rng.IntN(len(frags))])
		}
		// Adjacent escapes can pair up: \ud800 then \udc00 is one character.
		want, ok := strictUnquote(tok.String())
		d, err := parseDocument([]byte(`{"id":"` + tok.String() + `"}`))
		if !ok {
			if err == nil || !strings.Contains(err.Error(), "unpaired surrogate") {
				t.Fatalf("id token %q with a lone surrogate: %v, want refused as an unpaired surrogate", tok.String(), err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("id token %q: %v", tok.String(), err)
		}
		if d.ID != want {
			t.Fatalf("id token %q became %q, want %q", tok.String(), d.ID, want)
		}
		if prev, seen := byID[d.ID]; seen && prev != want {
			t.Fatalf("id %q from two different character sequences", d.ID)
		}
		byID[d.ID] = want
	}
	if _, err := parseDocument([]byte(`{"id":"a\ud800b"}`)); err == nil {
		t.Error(`"a\ud800b" accepted`)
	}
	if d, err := parseDocument([]byte(`{"id":"a\ufffdb"}`)); err != nil || d.ID != "a\ufffdb" {
		t.Errorf(`"a\ufffdb": %q, %v`, d.ID, err)
	}
}

// strictUnquote decodes the body of a JSON string token that holds only
// raw characters and \uXXXX escapes, refusing (ok false) a surrogate that
// is not half of a pair.
func strictUnquote(s string) (string, bool) {
	var out []rune
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			r, n := utf8.DecodeRuneInString(s[i:])
			out = append(out, r)
			i += n
			continue
		}
		v, _ := strconv.ParseUint(s[i+2:i+6], 16, 32)
		i += 6
		switch {
		case v >= 0xd800 && v < 0xdc00:
			if i+6 > len(s) || s[i] != '\\' {
				return "", false
			}
			lo, _ := strconv.ParseUint(s[i+2:i+6], 16, 32)
			if lo < 0xdc00 || lo >= 0xe000 {
				return "", false
			}
			out = append(out, utf16.DecodeRune(rune(v), rune(lo)))
			i += 6
		case v >= 0xdc00 && v < 0xe000:
			return "", false
		default:
			out = append(out, rune(v))
		}
	}
	return string(out), true
}

// TestContainerIDControlCharacters: container ids follow the item id
// rules, control characters included, and the error names the id and the
// character.
func TestContainerIDControlCharacters(t *testing.T) {
	db := openTest(t, t.TempDir(), newFakeClock(t0))
	defer db.Close()
	for c := range rune(0x20) {
		id := "c" + string(c) + "x"
		_, err := db.CreateContainer(context.Background(), ContainerProperties{ID: id})
		want := fmt.Sprintf("id %s must not contain control character U+%04X", strconv.Quote(id), c)
		if !errors.Is(err, ErrInvalidProperties) || !strings.Contains(err.Error(), want) {
			t.Errorf("CreateContainer(%q) = %v, want ErrInvalidProperties saying %q", id, err, want)
		}
	}
	if _, err := db.CreateContainer(context.Background(), ContainerProperties{ID: "c\x7fx"}); err != nil {
		t.Errorf("DEL is not a control character in U+0000..U+001F: %v", err)
	}
}
