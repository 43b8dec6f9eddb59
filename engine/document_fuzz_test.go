package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ebbdb/ebb/engine/internal/docfmt"
	"github.com/ebbdb/ebb/policy"
)

// FuzzParseDocument checks parseDocument against a slow reference built on
// encoding/json: both must accept the same documents and agree on id and
// ttl. Input that is not JSON is reported as invalid JSON
// (checkInvalidJSONError). An accepted document must render to valid JSON
// that parses back to the same id, ttl and stored body. Nothing may panic.
func FuzzParseDocument(f *testing.F) {
	for _, c := range documentCases() {
		if len(c.doc) <= 4096 {
			f.Add([]byte(c.doc), int64(1_700_000_000), `"etag"`)
		}
	}
	f.Add(benchDoc, int64(-1), "\x00\xff\"\\")
	f.Fuzz(func(t *testing.T, b []byte, ts int64, etag string) {
		d, err := parseDocument(b)
		wantID, wantTTL, refErr := referenceParse(b)
		if err != nil {
			if !errors.Is(err, ErrInvalidDocument) && !errors.Is(err, ErrInvalidTTL) {
				t.Fatalf("error %q wraps neither ErrInvalidDocument nor ErrInvalidTTL", err)
			}
			if refErr == nil {
				t.Fatalf("rejected a document the reference accepts (id %q ttl %d): %v", wantID, wantTTL, err)
			}
			var de *docError
			if errors.As(err, &de) && de.syntax && json.Valid(b) && utf8.Valid(b) {
				t.Fatalf("reported a syntax error for valid JSON: %v", err)
			}
			if !json.Valid(b) {
				checkInvalidJSONError(t, b, len(b), err)
			}
			return
		}
		if refErr != nil {
			t.Fatalf("accepted (id %q ttl %d) a document the reference rejects: %v", d.ID, d.TTL, refErr)
		}
		if d.ID != wantID || d.TTL != wantTTL {
			t.Fatalf("got id %q ttl %d, reference says id %q ttl %d", d.ID, d.TTL, wantID, wantTTL)
		}
		if !json.Valid(d.Body) || len(d.Body) > len(b) {
			t.Fatalf("stored body is invalid or grew: %q", d.Body)
		}
		if want, err := referenceBody(b); err != nil || !bytes.Equal(d.Body, want) {
			t.Fatalf("stored body\n got %q\nwant %q (%v)", d.Body, want, err)
		}
		out := docfmt.Render(nil, d.Body, ts, etag)
		if err := checkRendered(out, d, ts, etag); err != nil {
			t.Fatalf("%v\nrendered: %q", err, out)
		}
	})
}

// referenceBody builds the body parseDocument must store for the valid
// object b with encoding/json: its members in order, each name as written
// and each value byte for byte, without the system properties and without
// whitespace between the top-level tokens.
func referenceBody(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not an object: %v %v", tok, err)
	}
	out := []byte{'{'}
	for n := 0; dec.More(); {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name := bytes.TrimLeft(b[start:dec.InputOffset()], " \t\r\n,") // the name as written
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		if isSystemProperty([]byte(tok.(string))) {
			continue
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(append(append(out, name...), ':'), val...)
		n++
	}
	return append(out, '}'), nil
}

// referenceParse applies the document rules with encoding/json: valid JSON
// and UTF-8, at most MaxDocumentSize bytes, nesting at most maxNestingDepth,
// an object with distinct top-level names, a valid string id and, if
// present, a valid ttl.
func referenceParse(b []byte) (id string, ttl int32, err error) {
	if len(b) > MaxDocumentSize || !json.Valid(b) || !utf8.Valid(b) {
		return "", 0, errors.New("not valid JSON, or too large")
	}
	if jsonDepth(b) > maxNestingDepth {
		return "", 0, errors.New("too deep")
	}
	if err := referenceValues(b); err != nil {
		return "", 0, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return "", 0, errors.New("not an object")
	}
	seen := map[string]bool{}
	var idRaw, ttlRaw json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", 0, err
		}
		k := tok.(string)
		if seen[k] {
			return "", 0, errors.New("duplicate name")
		}
		seen[k] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", 0, err
		}
		switch k {
		case "id":
			idRaw = v
		case "ttl":
			ttlRaw = v
		}
	}
	if idRaw == nil || idRaw[0] != '"' {
		return "", 0, errors.New("id missing or not a string")
	}
	if err := json.Unmarshal(idRaw, &id); err != nil {
		return "", 0, err
	}
	if id == "" || utf8.RuneCountInString(id) > MaxIDLength || strings.ContainsAny(id, `/\?#`) ||
		strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 }) {
		return "", 0, errors.New("bad id")
	}
	if ttlRaw != nil {
		if ttl, err = policy.ParseItemTTL(ttlRaw); err != nil {
			return "", 0, err
		}
	}
	return id, ttl, nil
}

// referenceValues applies, with encoding/json's tokens, the rules beyond
// the grammar: numbers within float64's range, and no \u escape of a
// surrogate outside a high-low pair (found by scanning the raw string
// tokens, since encoding/json replaces them).
func referenceValues(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if n, ok := tok.(json.Number); ok {
			if _, err := strconv.ParseFloat(string(n), 64); err != nil {
				return err
			}
		}
	}
	inString := false
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '"':
			inString = !inString
		case inString && b[i] == '\\' && b[i+1] == 'u':
			r, _ := strconv.ParseUint(string(b[i+2:i+6]), 16, 32)
			switch {
			case r >= 0xd800 && r < 0xdc00:
				lo, err := strconv.ParseUint(string(b[min(i+8, len(b)):min(i+12, len(b))]), 16, 32)
				if err != nil || string(b[i+6:min(i+8, len(b))]) != `\u` || lo < 0xdc00 || lo >= 0xe000 {
					return errors.New("unpaired high surrogate")
				}
				i += 11
			case r >= 0xdc00 && r < 0xe000:
				return errors.New("unpaired low surrogate")
			default:
				i += 5
			}
		case inString && b[i] == '\\':
			i++
		}
	}
	return nil
}

// jsonDepth returns the deepest nesting of objects and arrays in valid JSON.
func jsonDepth(b []byte) int {
	depth, deepest := 0, 0
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
