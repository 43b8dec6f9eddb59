package query

import (
	"encoding/binary"
	"strconv"
	"unicode/utf8"
)

// The scalars of TermsJSON's scanner: numbers and strings, checked with
// exactly Decode's rules and, where they may be indexed, decoded straight
// into the scanner's arena.

// number reads a number with the JSON grammar's rules and, when live,
// records its Key. Like Decode, it refuses numbers beyond float64's range.
func (s *termScanner) number(live bool) bool {
	doc := s.doc
	start, i := s.i, s.i
	neg := doc[i] == '-'
	if neg {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(doc) && doc[i] >= '0' && doc[i] <= '9' {
			i++
		}
		return i > j
	}
	intStart := i
	switch {
	case i < len(doc) && doc[i] == '0':
		i++
	case !digits():
		return false
	}
	intEnd := i
	if i < len(doc) && doc[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	exp := false
	if i < len(doc) && (doc[i] == 'e' || doc[i] == 'E') {
		exp = true
		i++
		if i < len(doc) && (doc[i] == '+' || doc[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	s.i = i
	text := doc[start:i]
	if !live {
		// Without an exponent, fewer than 309 integer digits stay below
		// 1e308 < MaxFloat64: only longer numbers need the range check.
		if !exp && len(text) <= 308 {
			return true
		}
		_, err := strconv.ParseFloat(string(text), 64)
		return err == nil
	}
	var f float64
	if !exp && i-intStart <= 16 {
		// Below 1e15 the digits are exact in a float64, and so is a power
		// of ten up to 1e22: their quotient is the correctly rounded value
		// (Clinger's fast path, which strconv takes too).
		var u uint64
		n := 0
		for _, c := range doc[intStart:i] {
			if c != '.' {
				u = u*10 + uint64(c-'0')
				n++
			}
		}
		f = float64(u)
		if intEnd < i {
			f /= pow10[i-intEnd-1]
		}
		if neg {
			f = -f
		}
		if n > 15 { // 16 digits: not exact; ParseFloat decides
			var err error
			if f, err = strconv.ParseFloat(string(text), 64); err != nil {
				return false
			}
		}
	} else {
		var err error
		if f, err = strconv.ParseFloat(string(text), 64); err != nil {
			return false
		}
	}
	p := s.storePath()
	k := len(s.arena)
	s.arena = append(s.arena, tagNumber, 0, 0, 0, 0, 0, 0, 0, 0)
	putUint64(s.arena[k+1:], numberBits(f))
	return s.record(p, k)
}

// pow10 are the powers of ten a float64 holds exactly, for number.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

func putUint64(b []byte, u uint64) {
	_ = b[7]
	for i := range 8 {
		b[i] = byte(u >> (56 - 8*i))
	}
}

// stringSpecial marks the bytes that end a plain run in a JSON string: the
// quote, the backslash, control characters and non-ASCII bytes.
var stringSpecial = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf
	}
	return t
}()

// skipString checks the string whose quote is at s.i and moves past it.
// Invalid UTF-8 is allowed (Decode turns it into U+FFFD).
func (s *termScanner) skipString() bool {
	doc := s.doc
	for i := s.i + 1; i < len(doc); {
		if i += plainRun(doc[i:]); i >= len(doc) {
			break
		}
		switch c := doc[i]; {
		case c == '"':
			s.i = i + 1
			return true
		case c == '\\':
			if i+1 >= len(doc) {
				return false
			}
			switch doc[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := Hex4(doc, i+2); !ok {
					return false
				}
				i += 6
			default:
				return false
			}
		case c < 0x20:
			return false
		default:
			i++ // non-ASCII: any byte is allowed
		}
	}
	return false
}

// plainRun returns the length of the run of bytes at the start of b that
// need no attention in a JSON string: ASCII other than the quote, the
// backslash and control characters. It looks at eight bytes at a time.
func plainRun(b []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	n := 0
	for ; n+8 <= len(b); n += 8 {
		x := binary.LittleEndian.Uint64(b[n:])
		q, bs := x^(ones*'"'), x^(ones*'\\')
		special := (q-ones)&^q | (bs-ones)&^bs | (x-ones*0x20)&^x | x
		if special&highs != 0 {
			break
		}
	}
	for ; n < len(b) && !stringSpecial[b[n]]; n++ {
	}
	return n
}

// appendString decodes the string whose quote is at s.i onto dst and moves
// past it, exactly as decoder.string does: escapes resolved, invalid UTF-8
// and lone surrogates made U+FFFD.
func (s *termScanner) appendString(dst []byte) ([]byte, bool) {
	doc := s.doc
	i := s.i + 1
	run := i // start of the bytes still to copy as they are
	for i < len(doc) {
		i += plainRun(doc[i:])
		if i >= len(doc) {
			break
		}
		switch c := doc[i]; {
		case c == '"':
			s.i = i + 1
			return append(dst, doc[run:i]...), true
		case c == '\\':
			dst = append(dst, doc[run:i]...)
			if i+1 >= len(doc) {
				return dst, false
			}
			r, next, ok := unescape(doc, i+1)
			if !ok {
				return dst, false
			}
			dst = utf8.AppendRune(dst, r)
			i = next
			run = i
		case c < 0x20:
			return dst, false
		default:
			r, size := utf8.DecodeRune(doc[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, doc[run:i]...)
				dst = utf8.AppendRune(dst, utf8.RuneError)
				run = i + 1
			}
			i += size
		}
	}
	return dst, false
}
