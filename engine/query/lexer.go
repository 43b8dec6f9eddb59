package query

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// tokKind classifies the tokens of the query language.
type tokKind uint8

const (
	tEOF    tokKind = iota
	tIdent          // name or keyword; keywords are matched case-insensitively by the parser
	tNumber         // unsigned number literal; num holds its value
	tString         // 'single' or "double" quoted; text holds the decoded string
	tParam          // @name; text holds "@name"
	tPunct          // operator or punctuation; text holds it
	tError          // a lexical error; text holds the message
)

// token is one lexeme and where it starts.
type token struct {
	kind tokKind
	text string  // decoded text (see tokKind)
	raw  string  // the source text of the token, for error messages
	num  float64 // tNumber
	pos  int     // byte offset in the query
}

// lexer splits a query into tokens, one at a time.
type lexer struct {
	src string
	i   int
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentPart(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

// next returns the next token; after the end it keeps returning tEOF.
func (l *lexer) next() token {
	l.skipSpaceAndComments()
	start := l.i
	if l.i >= len(l.src) {
		return token{kind: tEOF, pos: start}
	}
	c := l.src[l.i]
	switch {
	case isIdentStart(c):
		for l.i < len(l.src) && isIdentPart(l.src[l.i]) {
			l.i++
		}
		t := l.src[start:l.i]
		return token{kind: tIdent, text: t, raw: t, pos: start}
	case c == '@':
		l.i++
		for l.i < len(l.src) && isIdentPart(l.src[l.i]) {
			l.i++
		}
		t := l.src[start:l.i]
		if len(t) == 1 {
			return token{kind: tError, text: "expected a parameter name after @", raw: t, pos: start}
		}
		return token{kind: tParam, text: t, raw: t, pos: start}
	case c >= '0' && c <= '9' || (c == '.' && l.i+1 < len(l.src) && l.src[l.i+1] >= '0' && l.src[l.i+1] <= '9'):
		return l.number()
	case c == '\'' || c == '"':
		return l.stringLit(c)
	}
	for _, op := range [...]string{"!=", "<>", "<=", ">=", "=", "<", ">", "(", ")", "[", "]", "{", "}", ",", ".", ":", "*", "-", "+"} {
		if strings.HasPrefix(l.src[l.i:], op) {
			l.i += len(op)
			return token{kind: tPunct, text: op, raw: op, pos: start}
		}
	}
	_, size := utf8.DecodeRuneInString(l.src[l.i:])
	l.i += size
	return token{kind: tError, text: "unexpected character", raw: l.src[start:l.i], pos: start}
}

func (l *lexer) skipSpaceAndComments() {
	for l.i < len(l.src) {
		switch c := l.src[l.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			l.i++
		case c == '-' && strings.HasPrefix(l.src[l.i:], "--"):
			nl := strings.IndexByte(l.src[l.i:], '\n')
			if nl < 0 {
				l.i = len(l.src)
			} else {
				l.i += nl + 1
			}
		default:
			return
		}
	}
}

func (l *lexer) number() token {
	start := l.i
	s := l.src
	digits := func() int {
		j := l.i
		for l.i < len(s) && s[l.i] >= '0' && s[l.i] <= '9' {
			l.i++
		}
		return l.i - j
	}
	digits()
	if l.i < len(s) && s[l.i] == '.' {
		l.i++
		digits()
	}
	if l.i < len(s) && (s[l.i] == 'e' || s[l.i] == 'E') {
		save := l.i
		l.i++
		if l.i < len(s) && (s[l.i] == '+' || s[l.i] == '-') {
			l.i++
		}
		if digits() == 0 {
			l.i = save // "1e" is the number 1 followed by an identifier
		}
	}
	raw := s[start:l.i]
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil {
		return token{kind: tError, text: "number out of range", raw: raw, pos: start}
	}
	return token{kind: tNumber, text: raw, raw: raw, num: f, pos: start}
}

// stringLit scans a string literal quoted by q, decoding escapes
// (\' \" \\ \/ \b \f \n \r \t \uXXXX).
func (l *lexer) stringLit(q byte) token {
	start := l.i
	s := l.src
	l.i++
	var b strings.Builder
	for l.i < len(s) {
		c := s[l.i]
		switch {
		case c == q:
			l.i++
			return token{kind: tString, text: b.String(), raw: s[start:l.i], pos: start}
		case c == '\\':
			if l.i+1 >= len(s) {
				l.i = len(s)
				return token{kind: tError, text: "unterminated string", raw: s[start:], pos: start}
			}
			at := l.i
			if s[at+1] == '\'' {
				b.WriteByte('\'')
				l.i += 2
				continue
			}
			r, next, ok := unescape(s, at+1)
			switch {
			case !ok && s[at+1] == 'u':
				return token{kind: tError, text: `invalid \u escape`, raw: s[at:min(at+6, len(s))], pos: at}
			case !ok:
				return token{kind: tError, text: "invalid escape", raw: s[at : at+2], pos: at}
			}
			b.WriteRune(r)
			l.i = next
		default:
			b.WriteByte(c)
			l.i++
		}
	}
	return token{kind: tError, text: "unterminated string", raw: s[start:], pos: start}
}
