package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
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
