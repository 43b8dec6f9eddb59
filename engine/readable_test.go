package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/internal/docfmt"
	"github.com/ebbdb/ebb/engine/query"
	"github.com/ebbdb/ebb/engine/tool"
)

// readableValues are JSON values at the edges of what the grammar allows:
// numbers near and beyond float64's range, surrogate escapes, deep and odd
// shapes. Each goes into a document as the value of "n".
var readableValues = []string{
	`0`, `-0`, `1e308`, `1.7976931348623157e308`, `-1.7976931348623157e308`, `1.8e308`, `1e400`, `-1e400`,
	`1e-400`, `0e99999`, `4.9e-324`, strings.Repeat("9", 308), strings.Repeat("9", 309), `123456789012345678901234567890`,
	`"\ud83c\udf89"`, `"\ud800"`, `"\udc00x"`, `"\ud800\ud800"`, `"\u0000\u001f"`, `"é\u00e9"`,
	`[1e400]`, `{"x":[{"y":-2e308}]}`, `{"\ud800":1}`, `[[[[[]]]]]`, `{"a":{"b":{"c":null}}}`, `true`, `null`,
}

// TestAcceptedDocumentsAreReadable: every document a write accepts is
// readable by every read path (Read, Items, and queries that decode every
// body: COUNT, a projection, ORDER BY on the odd value), before and after
// Compact and a reopen; and every document refused is refused as invalid,
// with nothing written.
func TestAcceptedDocumentsAreReadable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := newFakeClock(t0)
	db := openTest(t, dir, clk)
	c := mustCreateContainer(t, db, ContainerProperties{ID: "c"})
	accepted := map[string]bool{}
	for i, v := range readableValues {
		id := fmt.Sprintf("d%02d", i)
		doc := fmt.Sprintf(`{"id":%q,"n":%s}`, id, v)
		_, err := c.Upsert(ctx, []byte(doc))
		if err != nil {
			if !errors.Is(err, ErrInvalidDocument) {
				t.Fatalf("%s: refused without ErrInvalidDocument: %v", doc, err)
			}
			if _, derr := query.Decode([]byte(doc)); derr == nil && !strings.Contains(err.Error(), "surrogate") {
				t.Errorf("%s: refused (%v) though the query decoder takes it, and not for a surrogate", doc, err)
			}
			continue
		}
		accepted[id] = true
	}
	if len(accepted) == 0 || len(accepted) == len(readableValues) {
		t.Fatalf("accepted %d of %d edge values: the test no longer tests a boundary", len(accepted), len(readableValues))
	}
	check := func(when string) {
		t.Helper()
		for id := range accepted {
			if _, err := c.Read(ctx, id); err != nil {
				t.Errorf("%s: Read(%s): %v", when, id, err)
			}
		}
		n := 0
		for _, err := range c.Items(ctx) {
			if err != nil {
				t.Fatalf("%s: Items: %v", when, err)
			}
			n++
		}
		if n != len(accepted) {
			t.Errorf("%s: Items yielded %d items, want %d", when, n, len(accepted))
		}
		for _, sql := range []string{`SELECT VALUE COUNT(1) FROM c`, `SELECT VALUE c.id FROM c`, `SELECT * FROM c ORDER BY c.n`, `SELECT c.n FROM c WHERE c.n > 0`} {
			for _, err := range c.Query(ctx, sql) {
				if err != nil {
					t.Errorf("%s: %s: %v", when, sql, err)
					break
				}
			}
		}
	}
	check("in the memtable")
	if err := c.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	check("after Compact")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, dir, clk)
	defer db.Close()
	c, _ = db.Container("c")
	check("after reopen")
}

// TestVerifyFindsUndecodableBody: a stored body the query path cannot
// decode (one that bypassed the write validator, as an older version let
// 1e400 through) is reported by Verify, in the journal and in a segment.
func TestVerifyFindsUndecodableBody(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := newFakeClock(t0)
	db := openTest(t, dir, clk)
	c := mustCreateContainer(t, db, ContainerProperties{ID: "c"})
	if _, err := c.Upsert(ctx, []byte(`{"id":"ok","n":1}`)); err != nil {
		t.Fatal(err)
	}
	bad := op{kind: opUpsert, id: "big", body: []byte(`{"id":"big","n":1e400}`)}
	if _, err := c.commit(ctx, []op{bad}, false); err != nil {
		t.Fatal(err)
	}
	want := func(when, file string) {
		t.Helper()
		rep, err := tool.Verify(dir)
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		for _, p := range rep.Problems {
			if strings.HasPrefix(p.File, file) && strings.Contains(p.Record, `"big"`) && strings.Contains(p.What, "stored body does not decode") &&
				strings.Contains(p.What, "1e400") {
				return
			}
		}
		t.Errorf("%s: Verify did not report the undecodable body in %s: %v", when, file, rep.Problems)
	}
	want("in the journal", dbfile.JournalDir)
	if err := c.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	want("in a segment", "seg")
}

// FuzzWriteAndQueryAgree feeds the same bytes, as the value of a property,
// to the write validator (parseDocument), the query decoder (query.Decode)
// and the index term scanner (query.TermsJSON). What the validator accepts,
// both must take; what the decoder refuses, the validator must refuse; and
// the validator refuses a value the decoder takes only by one of its own
// stricter rules (UTF-8, unpaired surrogates, nesting), never for grammar
// or range.
func FuzzWriteAndQueryAgree(f *testing.F) {
	for _, v := range readableValues {
		f.Add([]byte(v))
	}
	for _, s := range []string{`1e`, `01`, `tru`, `"\x"`, "\"\xff\"", `[1,]`, `{"a" 1}`, `-`, `1.`, `"\u12"`, ` 1 `} {
		f.Add([]byte(s))
	}
	all := func(string) bool { return true }
	f.Fuzz(func(t *testing.T, v []byte) {
		doc := append(append([]byte(`{"id":"x","v":`), v...), '}')
		d, err := parseDocument(doc)
		_, decErr := query.Decode(doc)
		if err == nil {
			if _, derr := query.Decode(d.Body); derr != nil {
				t.Fatalf("accepted %q, but its stored body does not decode: %v", doc, derr)
			}
			if _, terr := query.TermsJSON(d.Body, all, nil); terr != nil {
				t.Fatalf("accepted %q, but the term scanner refuses its body: %v", doc, terr)
			}
			if _, derr := query.Decode(docfmt.Render(nil, d.Body, 1, `"e"`)); derr != nil {
				t.Fatalf("accepted %q, but its rendered body does not decode: %v", doc, derr)
			}
			return
		}
		if !errors.Is(err, ErrInvalidDocument) {
			t.Fatalf("%q: error %v does not wrap ErrInvalidDocument", doc, err)
		}
		if decErr != nil {
			return // both refuse
		}
		msg := err.Error()
		switch {
		case !utf8.Valid(v) && strings.Contains(msg, "invalid UTF-8"),
			strings.Contains(msg, "unpaired surrogate"),
			strings.Contains(msg, "nest deeper than"),
			strings.Contains(msg, "control character in string"): // raw control bytes: the decoder refuses too
		default:
			t.Fatalf("%q: refused (%v), though the query decoder takes it", doc, err)
		}
	})
}
