// Package docfmt is how ebb names and shows a stored item, for the engine
// and its offline tools (package engine/tool) alike: the rules an id
// follows, the etag of a version, and a stored body rendered with its
// system properties as a read returns it.
package docfmt

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/ebbdb/ebb/engine/query"
)

// MaxIDLength is the longest id accepted, in characters (Unicode code
// points), as in Cosmos DB: the engine's MaxIDLength.
const MaxIDLength = 255

// ValidateID applies the id rules: a non-empty string of valid UTF-8, at most
// MaxIDLength characters, without '/', '\\', '?', '#' or a control character
// (U+0000 to U+001F). The error's message starts with "id"; the engine
// wraps it in its ErrInvalidDocument.
func ValidateID(id string) error {
	// The common id, plain ASCII without a forbidden byte, is checked with
	// a table (every read and write validates its id); any other goes the
	// slow way, which names what is wrong.
	i := 0
	for i < len(id) && idPlain[id[i]] {
		i++
	}
	if i == len(id) && id != "" && len(id) <= MaxIDLength {
		return nil
	}
	return validateIDSlow(id)
}

// validateIDSlow is ValidateID without its fast path, character by
// character.
func validateIDSlow(id string) error {
	if id == "" {
		return errors.New("id must be a non-empty string")
	}
	n := 0
	for i := 0; i < len(id); {
		c := id[i]
		if c < utf8.RuneSelf {
			switch c {
			case '/', '\\', '?', '#':
				return fmt.Errorf("id %s must not contain %q", QuoteShort(id), c)
			}
			if c < 0x20 {
				return fmt.Errorf("id %s must not contain control character U+%04X", QuoteShort(id), c)
			}
			i++
		} else {
			r, size := utf8.DecodeRuneInString(id[i:])
			if r == utf8.RuneError && size == 1 {
				return fmt.Errorf("id %s is not valid UTF-8", QuoteShort(id))
			}
			i += size
		}
		n++
	}
	if n > MaxIDLength {
		return fmt.Errorf("id %s is %d characters long, longer than the maximum of %d", QuoteShort(id), n, MaxIDLength)
	}
	return nil
}

// idPlain marks the bytes that ValidateID's fast path accepts: ASCII, not
// a control character, not '/', '\\', '?' or '#'.
var idPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `/\?#` {
		t[c] = false
	}
	return t
}()

// QuoteShort quotes s for an error message, shortened to about 40
// characters.
func QuoteShort(s string) string {
	const max = 40
	if utf8.RuneCountInString(s) <= max {
		return strconv.Quote(s)
	}
	n := 0
	for i := range s {
		if n == max {
			return strconv.Quote(s[:i]) + "..."
		}
		n++
	}
	return strconv.Quote(s)
}

// Render appends to dst the stored body (a body as the engine stores it) with
// the system properties added in front:
//
//	{"_ts":<ts>,"_etag":<etag as a JSON string>,<the stored members>}
//
// etag is rendered as a JSON string, escaped as needed (Cosmos etags hold
// quotes: "\"0000...\""). stored must be a JSON object; whitespace around its
// braces is tolerated.
func Render(dst, stored []byte, ts int64, etag string) []byte {
	var buf [64]byte // holds the head, etag included, unless ts or etag is unusually long
	head := append(buf[:0], `{"_ts":`...)
	head = strconv.AppendInt(head, ts, 10)
	head = append(head, `,"_etag":`...)
	head = query.AppendString(head, etag)
	rest := stored[SkipWS(stored, 0):]
	if len(rest) > 0 && rest[0] == '{' {
		rest = rest[SkipWS(rest, 1):]
	}
	if len(rest) == 0 || rest[0] == '}' {
		rest = closeBrace
	} else {
		head = append(head, ',')
	}
	if cap(dst)-len(dst) >= len(head)+len(rest) {
		return append(append(dst, head...), rest...)
	}
	// A new allocation of the exact size that is not zeroed first
	// (bytes.Join): every byte of it is written here, and zeroing is a
	// pass of its own over memory that, while the heap grows, is new to
	// the process and faults once per page.
	return bytes.Join([][]byte{dst, head, rest}, nil)
}

// RenderSeq is Render of the version written with sequence seq, its etag
// ETag(seq), written without building the etag or escaping it: what a
// query does for every row it returns. dst must have room for
// RenderedSize(stored) more bytes, or it grows as append grows it.
func RenderSeq(dst, stored []byte, ts int64, seq uint64) []byte {
	dst = AppendHead(dst, ts)
	dst = AppendHex16(dst, seq)
	return AppendMembers(append(dst, `\""`...), stored)
}

// MaxHeadLen bounds what AppendHead appends.
const MaxHeadLen = len(`{"_ts":-9223372036854775808,"_etag":"\"`)

// AppendHead appends the start of a body rendered at ts, up to its etag's
// 16 hex digits (AppendHex16), which the closing `\""` and the members
// (AppendMembers) follow. A query's rows written in the same second share
// it.
func AppendHead(dst []byte, ts int64) []byte {
	dst = append(dst, `{"_ts":`...)
	dst = strconv.AppendInt(dst, ts, 10)
	return append(dst, `,"_etag":"\"`...)
}

// AppendMembers appends the rest of a rendered body: the stored object's
// members after a comma, or, for an object without any, the closing
// brace. Whitespace around the stored object's braces is passed over.
func AppendMembers(dst, stored []byte) []byte {
	rest := members(stored)
	if rest == nil {
		return append(dst, '}')
	}
	return append(append(dst, ','), rest...)
}

// members returns the stored object's members and closing brace, from the
// first member on, or nil for an object without members.
func members(stored []byte) []byte {
	rest := stored[SkipWS(stored, 0):]
	if len(rest) > 0 && rest[0] == '{' {
		rest = rest[SkipWS(rest, 1):]
	}
	if len(rest) == 0 || rest[0] == '}' {
		return nil
	}
	return rest
}

// AppendETag appends ETag(seq) to dst.
func AppendETag(dst []byte, seq uint64) []byte {
	return append(AppendHex16(append(dst, '"'), seq), '"')
}

// hexPairs holds the two hex digits of every byte value.
const hexPairs = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f" +
	"202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f" +
	"404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f" +
	"606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f" +
	"808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f" +
	"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf" +
	"c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf" +
	"e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"

// AppendHex16 appends seq in 16 lowercase hex digits, as an etag spells
// it, a byte (two digits) at a time.
func AppendHex16(dst []byte, seq uint64) []byte {
	var b [16]byte
	for i := 14; i >= 0; i -= 2 {
		p := 2 * (seq & 0xff)
		b[i], b[i+1] = hexPairs[p], hexPairs[p+1]
		seq >>= 8
	}
	return append(dst, b[:]...)
}

// closeBrace ends the rendering of an empty stored object.
var closeBrace = []byte{'}'}

// RenderedSize bounds the bytes Render appends for a stored body with
// an etag of ETag.
func RenderedSize(stored []byte) int {
	return len(`{"_ts":-9223372036854775808,"_etag":"\"0123456789abcdef\""}`) + 1 + len(stored)
}

// ETag renders the etag of the version written with sequence seq: the
// sequence in 16 hex digits, quoted as Cosmos DB quotes its etags.
func ETag(seq uint64) string {
	var b [etagLen]byte
	putETag(&b, seq)
	return string(b[:])
}

// etagLen is the length of every etag.
const etagLen = 18

// putETag writes the etag of seq into b.
func putETag(b *[etagLen]byte, seq uint64) { AppendETag(b[:0], seq) }

// SkipWS returns the index of the first byte of b at or after i that is
// not JSON whitespace.
func SkipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}
