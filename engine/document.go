package engine

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/ebbdb/ebb/engine/internal/docfmt"
	"github.com/ebbdb/ebb/engine/internal/pkey"
	"github.com/ebbdb/ebb/engine/query"
	"github.com/ebbdb/ebb/policy"
)

// Document limits.
const (
	// MaxDocumentSize is the largest document accepted, in bytes of JSON as
	// stored: the document without the system properties (_ts, _etag,
	// _rid, _self, _attachments) and without whitespace between its
	// top-level members. Read adds _ts and _etag to what it returns, so
	// whatever Read returns can be written back.
	MaxDocumentSize = 2 << 20
	// maxInputSize bounds the bytes a write may send, system properties and
	// whitespace included, so that a document is refused before it is
	// scanned and copied when it cannot fit.
	maxInputSize = 2 * MaxDocumentSize
	// MaxIDLength is the longest id accepted, in characters (Unicode code
	// points, counted after JSON unescaping).
	MaxIDLength = 255
	// maxNestingDepth bounds how deeply objects and arrays may nest, the
	// document itself being level 1. It keeps the scanner's state fixed-size
	// and protects any recursive consumer of stored bodies; 128 is the
	// per-item nesting limit Cosmos DB documents.
	maxNestingDepth = 128
)

// parsedDoc is a validated document.
type parsedDoc struct {
	ID string
	// TTL is the item's own ttl: 0 when absent, -1, or 1..policy.MaxTTL.
	TTL int32
	// Body is the stored form of the document: `{`, the top-level members
	// of the input in their order except the system properties _ts, _etag,
	// _rid, _self and _attachments, `}`. Whitespace between top-level
	// tokens is dropped; member names and values are copied verbatim. Body
	// is freshly allocated: it never aliases the input.
	Body []byte
	// Key is the document's value at the container's partition key path
	// (None when the path has no value); None for containers without one.
	Key pkey.Key
}

// docError is an invalid-document error: its message names what was wrong
// and it wraps ErrInvalidDocument.
type docError struct {
	msg string
	// syntax is set when the input is not JSON at all (as opposed to JSON
	// that breaks one of ebb's rules).
	syntax bool
}

func (e *docError) Error() string { return e.msg }
func (e *docError) Unwrap() error { return ErrInvalidDocument }

func docErrorf(format string, args ...any) error {
	return &docError{msg: "document: " + fmt.Sprintf(format, args...)}
}

func syntaxError(b []byte, off int, what string) error {
	if what == "" {
		if off >= len(b) {
			what = "unexpected end of input"
		} else {
			what = "unexpected " + showByte(b[off])
		}
	}
	return &docError{msg: fmt.Sprintf("document: invalid JSON at offset %d: %s", off, what), syntax: true}
}

func showByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// nameBit returns one of 64 bits for a member name, from its length and its
// first and last bytes: the duplicate check compares a name with the ones
// before it only when one of them has its bit.
func nameBit(name []byte) uint64 {
	h := uint(len(name))
	if len(name) > 0 {
		h += uint(name[0])*7 + uint(name[len(name)-1])*31
	}
	return 1 << (h & 63)
}

// isSystemProperty reports whether a top-level member name is one the
// engine owns; such members are dropped from stored bodies.
func isSystemProperty(k []byte) bool {
	switch string(k) {
	case "_ts", "_etag", "_rid", "_self", "_attachments":
		return true
	}
	return false
}

// parseDocument validates b and extracts what the engine needs from it.
//
// b must be valid JSON (RFC 8259: UTF-8, nothing but whitespace after the
// value, nesting at most 128 deep) whose value is an object of at most
// MaxDocumentSize bytes once stored. Beyond the grammar, every number must
// fit a float64 (|x| <= 1.8e308) and every \u escape of a UTF-16 surrogate
// must be one half of a pair, so that each string means one sequence of
// characters and every query can decode what was stored. Its top-level members must have distinct names (after
// unescaping) and must include "id", a non-empty JSON string that passes
// validateID. A top-level "ttl", if present, must be one policy.ParseItemTTL
// accepts. System properties (_ts, _etag, _rid, _self, _attachments) may be
// present; they are validated as JSON and dropped.
//
// Errors wrap ErrInvalidDocument, except an invalid ttl, which wraps
// ErrInvalidTTL (`item "a": ttl 0 is invalid: ...`).
//
// The input is scanned once; nothing is decoded into maps or interfaces.
func parseDocument(b []byte) (parsedDoc, error) { return parseDocumentKey(b, nil) }

// parseDocumentKey is parseDocument for a container whose partition key
// path is kp (nil: none): it also takes the document's value at kp, from
// the top-level member kp[0] that the scan finds (a nested path descends
// into that member's value only). A value at kp that is an object or an
// array, or a string or number a key cannot hold (pkey.Key.Check), fails
// with ErrInvalidPartitionKey.
func parseDocumentKey(b []byte, kp keyPath) (parsedDoc, error) {
	if len(b) > maxInputSize {
		return parsedDoc{}, docErrorf("%d bytes is larger than the maximum document size of %d bytes", len(b), MaxDocumentSize)
	}
	i := docfmt.SkipWS(b, 0)
	if i == len(b) {
		return parsedDoc{}, docErrorf("empty; a document must be a JSON object")
	}
	if b[i] != '{' {
		// Invalid JSON is reported as such, where it goes wrong; only a
		// whole valid value of another type is "not an object".
		end, err := scanValue(b, i, 0)
		if err != nil {
			return parsedDoc{}, err
		}
		if j := docfmt.SkipWS(b, end); j != len(b) {
			return parsedDoc{}, syntaxError(b, j, "unexpected data after the top-level value")
		}
		return parsedDoc{}, docErrorf("must be a JSON object, not %s", kindOf(b[i]))
	}

	// The body is the object without its system properties and without
	// whitespace between its members. Most inputs are written that way
	// already: while they are, the body is the span b[objStart:verbatim]
	// and nothing is copied; the first member that is not (a system
	// property, or whitespace around its name, colon or comma) copies that
	// span into body, and members are appended one by one from then on.
	objStart, verbatim := i, i+1
	var body []byte // nil while the body is b[objStart:verbatim]
	var (
		keyBuf         [32][]byte // names seen so far, while few
		keys           = keyBuf[:0]
		keyMask        uint64              // nameBit of every name in keys
		seen           map[string]struct{} // names seen so far, once many
		dup            []byte              // first duplicated name
		idVal, ttlVal  []byte
		keyVal         []byte // the value of top-level member kp[0]
		idStart        int
		hasID, hasTTL  bool
		members        int
		err            error
		keyEnd, valEnd int
	)
	i = docfmt.SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return parsedDoc{}, syntaxError(b, i, "expected a property name")
			}
			ks := i
			var escaped bool
			if keyEnd, escaped, err = scanString(b, i); err != nil {
				return parsedDoc{}, err
			}
			key := b[ks+1 : keyEnd-1]
			if escaped {
				if key, err = unescapeString(b, ks, keyEnd); err != nil {
					return parsedDoc{}, err
				}
			}
			i = docfmt.SkipWS(b, keyEnd)
			if i >= len(b) || b[i] != ':' {
				return parsedDoc{}, syntaxError(b, i, "expected ':' after a property name")
			}
			colon := i
			i = docfmt.SkipWS(b, i+1)
			vs := i
			if valEnd, err = scanValue(b, i, 1); err != nil {
				return parsedDoc{}, locate(err, b, ks, keyEnd, vs)
			}
			val := b[vs:valEnd]

			// Duplicate names: a linear search while there are few, a set
			// after that.
			if dup == nil {
				if seen == nil {
					if bit := nameBit(key); keyMask&bit != 0 {
						for _, k := range keys {
							if string(k) == string(key) {
								dup = key
								break
							}
						}
					} else {
						keyMask |= bit
					}
					if len(keys) < len(keyBuf) {
						keys = append(keys, key)
					} else {
						seen = make(map[string]struct{}, 2*len(keyBuf))
						for _, k := range keys {
							seen[string(k)] = struct{}{}
						}
					}
				}
				if seen != nil {
					if _, ok := seen[string(key)]; ok && dup == nil {
						dup = key
					}
					seen[string(key)] = struct{}{}
				}
			}

			switch {
			case string(key) == "id":
				idVal, idStart, hasID = val, vs, true
			case string(key) == "ttl":
				ttlVal, hasTTL = val, true
			}
			if kp != nil && string(key) == kp[0] {
				keyVal = val
			}
			system := isSystemProperty(key)
			if body == nil && (system || ks != verbatim+min(members, 1) || colon != keyEnd || vs != colon+1) {
				// Dropped, or space around its name, colon or comma: the
				// body stops being a span of the input.
				body = append(make([]byte, 0, len(b)), b[objStart:verbatim]...) // the body never outgrows the input
			}
			switch {
			case system:
			case body == nil:
				verbatim = valEnd
			default:
				if members > 0 {
					body = append(body, ',')
				}
				body = append(body, b[ks:keyEnd]...)
				body = append(body, ':')
				body = append(body, val...)
			}
			if !system {
				members++
			}

			i = docfmt.SkipWS(b, valEnd)
			if i < len(b) && b[i] == ',' {
				i = docfmt.SkipWS(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return parsedDoc{}, syntaxError(b, i, "expected ',' or '}' after an object member")
		}
	}
	if i = docfmt.SkipWS(b, i); i != len(b) {
		return parsedDoc{}, syntaxError(b, i, "unexpected data after the top-level object")
	}
	if body == nil {
		body = append(make([]byte, 0, verbatim+1-objStart), b[objStart:verbatim]...)
	}
	body = append(body, '}')
	if len(body) > MaxDocumentSize {
		return parsedDoc{}, docErrorf("%d bytes is larger than the maximum document size of %d bytes (system properties and whitespace between members not counted)", len(body), MaxDocumentSize)
	}

	if dup != nil {
		return parsedDoc{}, docErrorf("duplicate property %s", docfmt.QuoteShort(string(dup)))
	}
	if !hasID {
		return parsedDoc{}, docErrorf(`"id" must be a non-empty string (it is missing)`)
	}
	if idVal[0] != '"' {
		return parsedDoc{}, docErrorf(`"id" must be a non-empty string (it is %s)`, kindOf(idVal[0]))
	}
	if len(idVal) == 2 {
		return parsedDoc{}, docErrorf(`"id" must be a non-empty string (it is empty)`)
	}
	var id string
	if slices.Contains(idVal, '\\') {
		u, err := unescapeString(b, idStart, idStart+len(idVal))
		if err != nil {
			return parsedDoc{}, err
		}
		id = string(u)
	} else {
		id = string(idVal[1 : len(idVal)-1])
	}
	if err := validateID(id); err != nil {
		return parsedDoc{}, &docError{msg: "document: " + err.Error()}
	}
	var ttl int32
	if hasTTL {
		if ttl, err = policy.ParseItemTTL(ttlVal); err != nil {
			return parsedDoc{}, fmt.Errorf("item %s: %w", docfmt.QuoteShort(id), err)
		}
	}
	d := parsedDoc{ID: id, TTL: ttl, Body: body}
	if kp != nil {
		if d.Key, err = documentKey(keyVal, kp); err != nil {
			return parsedDoc{}, fmt.Errorf("%w: item %s: value at partition key path %s: %v", ErrInvalidPartitionKey, docfmt.QuoteShort(id), kp, err)
		}
	}
	return d, nil
}

// validateID applies the id rules of docfmt.ValidateID; the error wraps
// ErrInvalidDocument and its message starts with "id".
func validateID(id string) error {
	if err := docfmt.ValidateID(id); err != nil {
		return &docError{msg: err.Error()}
	}
	return nil
}

// kindOf names the JSON type a value starting with c has, or "" if no JSON
// value starts with c.
func kindOf(c byte) string {
	switch {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	}
	return ""
}

// unescapeString decodes the validated JSON string token b[start:end]
// (quotes included) exactly as encoding/json does (lone surrogates become
// U+FFFD). It is only used for the rare names and ids that hold escapes.
func unescapeString(b []byte, start, end int) ([]byte, error) {
	var s string
	if err := json.Unmarshal(b[start:end], &s); err != nil {
		// Not expected: scanString validated the token.
		return nil, syntaxError(b, start, "invalid string: "+err.Error())
	}
	return []byte(s), nil
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// specialBytes returns, for the 8 bytes of x (little endian), a mask with the
// high bit set in every byte that needs a closer look inside a JSON string:
// '"', '\\', a control character, or a byte of a multi-byte UTF-8 sequence.
// Borrows can set bits above a special byte, never below the lowest one, so
// the lowest set bit locates the first special byte exactly.
func specialBytes(x uint64) uint64 {
	q := x ^ (ones * '"')
	bs := x ^ (ones * '\\')
	special := (q - ones) &^ q
	special |= (bs - ones) &^ bs
	special |= (x - ones*0x20) &^ x // bytes below 0x20
	special |= x                    // bytes from 0x80
	return special & highs
}

// scanString validates the JSON string starting at b[i] == '"' and returns
// the index just past its closing quote, and whether it holds escapes.
func scanString(b []byte, i int) (end int, escaped bool, err error) {
	j := i + 1
	for {
		// Skip to the next byte that needs a look, 8 bytes at a time.
		for j+8 <= len(b) {
			if m := specialBytes(binary.LittleEndian.Uint64(b[j:])); m != 0 {
				j += bits.TrailingZeros64(m) >> 3
				break
			}
			j += 8
		}
		if j >= len(b) {
			return 0, false, syntaxError(b, j, "unterminated string")
		}
		c := b[j]
		switch {
		case c == '"':
			return j + 1, escaped, nil
		case c == '\\':
			escaped = true
			if j+1 >= len(b) {
				return 0, false, syntaxError(b, j+1, "unterminated string")
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if _, ok := query.Hex4(b, j+2); !ok {
					return 0, false, syntaxError(b, j, "invalid \\u escape in string")
				}
				if j, err = scanSurrogates(b, j); err != nil {
					return 0, false, err
				}
			default:
				return 0, false, syntaxError(b, j, "invalid escape in string")
			}
		case c < 0x20:
			return 0, false, syntaxError(b, j, "control character in string")
		case c < utf8.RuneSelf:
			j++
		default:
			r, size := utf8.DecodeRune(b[j:])
			if r == utf8.RuneError && size == 1 {
				return 0, false, syntaxError(b, j, "invalid UTF-8 in string")
			}
			j += size
		}
	}
}

// scanSurrogates checks the valid \u escape at b[j] and returns the index
// past it, or past the pair when it opens a UTF-16 surrogate pair. A
// surrogate escape that is not half of a pair is refused: decoders replace
// it with U+FFFD, so two different strings (ids among them) would read as
// one.
func scanSurrogates(b []byte, j int) (int, error) {
	r, _ := query.Hex4(b, j+2) // the caller checked the digits
	switch {
	case r < 0xd800 || r >= 0xe000:
		return j + 6, nil
	case r < 0xdc00: // a high surrogate: a low one must follow
		k := j + 6
		if k >= len(b) {
			return 0, syntaxError(b, k, "unterminated string")
		}
		if k+1 < len(b) && b[k] == '\\' && b[k+1] == 'u' {
			lo, ok := query.Hex4(b, k+2)
			if !ok {
				return 0, syntaxError(b, k, "invalid \\u escape in string")
			}
			if lo >= 0xdc00 && lo < 0xe000 {
				return k + 6, nil
			}
		}
	}
	return 0, &valueError{off: j, what: fmt.Sprintf("unpaired surrogate %s in a string", b[j:j+6])}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanNumber validates the JSON number starting at b[i] and returns the index
// just past it.
func scanNumber(b []byte, i int) (int, error) {
	j := i
	if b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		j++
		for j < len(b) && isDigit(b[j]) {
			j++
		}
	default:
		return 0, syntaxError(b, j, "invalid number")
	}
	if j < len(b) && b[j] == '.' {
		j++
		if j >= len(b) || !isDigit(b[j]) {
			return 0, syntaxError(b, j, "invalid number")
		}
		for j < len(b) && isDigit(b[j]) {
			j++
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if j >= len(b) || !isDigit(b[j]) {
			return 0, syntaxError(b, j, "invalid number")
		}
		for j < len(b) && isDigit(b[j]) {
			j++
		}
		return j, checkRange(b, i, j)
	}
	if j-i > 308 {
		// Without an exponent, fewer than 309 integer digits stay below
		// 1e308 < MaxFloat64: only longer numbers need the range check.
		return j, checkRange(b, i, j)
	}
	return j, nil
}

// checkRange refuses the number b[i:j] when it is beyond float64's range
// (|x| > 1.8e308): every reader of a stored body (queries, index terms)
// decodes numbers as float64, so such a number could be written and never
// read. Numbers too small for a float64 round to 0, as they do everywhere.
func checkRange(b []byte, i, j int) error {
	if _, err := strconv.ParseFloat(string(b[i:j]), 64); err != nil {
		text := string(b[i:j])
		if len(text) > 40 {
			text = text[:40] + "..."
		}
		return &valueError{off: i, what: "number " + text + " is out of range (beyond ±1.8e308, the float64 range)"}
	}
	return nil
}

// scanKey validates `"name" :` starting at b[i] and returns the index of the
// value that follows, whitespace skipped.
func scanKey(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return 0, syntaxError(b, i, "expected a property name")
	}
	end, _, err := scanString(b, i)
	if err != nil {
		return 0, err
	}
	i = docfmt.SkipWS(b, end)
	if i >= len(b) || b[i] != ':' {
		return 0, syntaxError(b, i, "expected ':' after a property name")
	}
	return docfmt.SkipWS(b, i+1), nil
}

// scanValue validates the JSON value starting at b[i] (not whitespace), found
// at nesting level depth (0 at the top, 1 inside the document object), and
// returns the index just past it. Nesting is tracked in a fixed bit stack,
// without recursion.
func scanValue(b []byte, i int, depth int) (int, error) {
	var (
		isObject [(maxNestingDepth + 63) / 64]uint64 // bit per open level: object (1) or array (0)
		level    int                                 // containers open inside this value
		err      error
	)
	for {
		if i >= len(b) {
			return 0, syntaxError(b, i, "")
		}
		switch c := b[i]; c {
		case '"':
			if i, _, err = scanString(b, i); err != nil {
				return 0, err
			}
		case '{', '[':
			if depth+level+1 > maxNestingDepth {
				return 0, docErrorf("objects and arrays nest deeper than %d levels at offset %d", maxNestingDepth, i)
			}
			w, bit := level/64, uint64(1)<<(level%64)
			level++
			i = docfmt.SkipWS(b, i+1)
			if c == '{' {
				isObject[w] |= bit
				if i < len(b) && b[i] == '}' {
					i++
					level--
					break
				}
				if i, err = scanKey(b, i); err != nil {
					return 0, err
				}
			} else {
				isObject[w] &^= bit
				if i < len(b) && b[i] == ']' {
					i++
					level--
					break
				}
			}
			continue // scan the first element
		case 't':
			if !hasLiteral(b, i, "true") {
				return 0, syntaxError(b, i, "invalid literal")
			}
			i += 4
		case 'f':
			if !hasLiteral(b, i, "false") {
				return 0, syntaxError(b, i, "invalid literal")
			}
			i += 5
		case 'n':
			if !hasLiteral(b, i, "null") {
				return 0, syntaxError(b, i, "invalid literal")
			}
			i += 4
		default:
			if c != '-' && !isDigit(c) {
				return 0, syntaxError(b, i, "")
			}
			if i, err = scanNumber(b, i); err != nil {
				return 0, err
			}
		}

		// A value is complete: close containers, or move to the next element.
	next:
		for {
			if level == 0 {
				return i, nil
			}
			i = docfmt.SkipWS(b, i)
			if i >= len(b) {
				return 0, syntaxError(b, i, "")
			}
			l := level - 1
			obj := isObject[l/64]&(1<<(l%64)) != 0
			switch b[i] {
			case ',':
				i = docfmt.SkipWS(b, i+1)
				if obj {
					if i, err = scanKey(b, i); err != nil {
						return 0, err
					}
				}
				break next
			case '}':
				if !obj {
					return 0, syntaxError(b, i, "expected ',' or ']' in an array")
				}
				i++
				level--
			case ']':
				if obj {
					return 0, syntaxError(b, i, "expected ',' or '}' in an object")
				}
				i++
				level--
			default:
				if obj {
					return 0, syntaxError(b, i, "expected ',' or '}' in an object")
				}
				return 0, syntaxError(b, i, "expected ',' or ']' in an array")
			}
		}
	}
}

func hasLiteral(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}
