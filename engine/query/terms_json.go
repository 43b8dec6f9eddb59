package query

import (
	"bytes"
	"math"
	"slices"
	"sync"
	"unsafe"
)

// TermsJSON appends to dst the terms of the JSON document doc whose paths
// are indexed and returns the extended slice: the same terms, in the same
// order, as Terms(Decode(doc), indexed, dst), without building a Value.
// Invalid JSON leaves dst as it was and returns Decode's error (it matches
// ErrInvalidJSON). indexed is called once per distinct term path found.
//
// The strings of the appended terms share one allocation, which the terms
// keep alive as long as any of them is referenced; it is at most about twice
// the size of the terms kept.
func TermsJSON(doc []byte, indexed func(termPath string) bool, dst []Term) ([]Term, error) {
	return termsJSON(doc, indexed, nil, dst)
}

// TermsJSON is TermsJSON(doc, m.Indexed, dst), and faster: it does not look
// into a subtree under which m indexes nothing (see IndexedUnder), beyond
// checking that it is valid JSON.
func (m *PathMatcher) TermsJSON(doc []byte, dst []Term) ([]Term, error) {
	return termsJSON(doc, nil, m, dst)
}

// EachTermJSON calls fn for each term of the JSON document doc whose path m
// indexes: the terms m.TermsJSON(doc, nil) returns, in no particular order,
// some perhaps more than once. It is for a caller that files the terms
// itself (a secondary index, which counts each once): it sorts nothing and
// allocates nothing. path and key are valid only during the call. Invalid
// JSON returns Decode's error before fn is called.
func (m *PathMatcher) EachTermJSON(doc []byte, fn func(path, key []byte)) error {
	s, v, err := scanTerms(doc, m)
	if err != nil {
		return err
	}
	if s == nil {
		for _, t := range Terms(v, m.Indexed, nil) {
			fn([]byte(t.Path), []byte(t.Key))
		}
		return nil
	}
	a := s.arena
	var prev span
	var ok bool
	for i, r := range s.recs {
		// The elements of an array share their path's span.
		if i == 0 || r.path != prev {
			p := r.path.of(a)
			// Indexed keeps nothing of its argument: no copy is needed.
			prev, ok = r.path, m.Indexed(unsafe.String(unsafe.SliceData(p), len(p)))
		}
		if ok {
			fn(r.path.of(a), r.key.of(a))
		}
	}
	s.release()
	return nil
}

// termsJSON scans doc in one pass. A document the scanner does not take
// (invalid JSON, or a repeated property name whose values could make terms,
// since the last value wins) goes through Decode and Terms, which are the
// reference: they give the error, or the terms.
func termsJSON(doc []byte, indexed func(string) bool, m *PathMatcher, dst []Term) ([]Term, error) {
	s, v, err := scanTerms(doc, m)
	if err != nil {
		return dst, err
	}
	if s == nil {
		if indexed == nil {
			indexed = m.Indexed
		}
		// Terms keeps its dst; appending its result keeps the caller's
		// dst from escaping, so that it may live on the stack.
		return append(dst, Terms(v, indexed, nil)...), nil
	}
	dst = s.emit(indexed, dst)
	s.release()
	return dst, nil
}

// scanTerms scans doc with a pooled scanner, which it returns for the
// caller to read and release. A document the scanner does not take is
// decoded instead: scanTerms then returns its value (nil scanner), or
// Decode's error.
func scanTerms(doc []byte, m *PathMatcher) (*termScanner, Value, error) {
	s := scanners.Get().(*termScanner)
	s.doc, s.m = doc, m
	if len(doc) <= maxScan && s.scan() {
		return s, Value{}, nil
	}
	s.release()
	v, err := Decode(doc)
	return nil, v, err
}

// termScanner is the state of one TermsJSON call: a JSON scanner that, for
// each scalar that may be indexed, records its term path and Key in one
// byte arena. Scanners are pooled, so that a call allocates nothing but the
// strings of its result.
type termScanner struct {
	doc []byte
	i   int          // read position in doc
	m   *PathMatcher // when set, subtrees it indexes nothing under are skipped

	path  []byte    // term path of the value being read
	arena []byte    // term paths and keys, referenced by recs
	recs  []termRec // the scalars found
	// recent are the arena spans of the last term paths stored, so that
	// the elements of an array share their members' paths.
	recent [8]span
	next   int // slot of recent to overwrite next
	arrays int // arrays open around the value being read

	names []byte // term-path segments of the open objects' members
	spans []span // their spans in names, innermost object last
	// repeated is set when an object repeats a name that could make terms.
	repeated bool
}

// span is a range of bytes in a scanner's buffer.
type span struct{ off, n uint32 }

func (p span) of(b []byte) []byte { return b[p.off : p.off+p.n] }

// termRec is one scalar found: its term path and Key in the arena.
type termRec struct{ path, key span }

var scanners = sync.Pool{New: func() any { return new(termScanner) }}

// maxPooledScratch bounds the buffers a scanner keeps between calls, so that
// one huge document does not pin its scratch memory.
const maxPooledScratch = 64 << 10

// maxScan keeps the scanner's offsets within uint32 (a term path can be
// longer than the document); larger documents go the Decode way.
const maxScan = 1 << 30

// maxArena keeps arena offsets within uint32; a document that needs more
// goes the Decode way.
const maxArena = math.MaxUint32

func (s *termScanner) release() {
	s.doc, s.m, s.i, s.repeated, s.arrays = nil, nil, 0, false, 0
	if cap(s.arena) > maxPooledScratch || cap(s.recs)*16 > maxPooledScratch ||
		cap(s.path) > maxPooledScratch || cap(s.names) > maxPooledScratch || cap(s.spans)*8 > maxPooledScratch {
		return
	}
	s.path, s.arena, s.recs = s.path[:0], s.arena[:0], s.recs[:0]
	s.names, s.spans = s.names[:0], s.spans[:0]
	s.recent, s.next = [8]span{}, 0
	scanners.Put(s)
}

// scan reads the whole document, recording its scalars. It reports false
// for invalid JSON and for documents it leaves to Decode.
func (s *termScanner) scan() bool {
	s.skipSpace()
	if !s.value(0, true) {
		return false
	}
	s.skipSpace()
	return s.i == len(s.doc)
}

func (s *termScanner) skipSpace() {
	for s.i < len(s.doc) {
		switch s.doc[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value reads one value at depth (as decoder.value counts it). live is
// false inside a subtree where nothing is indexed: the value is only
// checked.
func (s *termScanner) value(depth int, live bool) bool {
	if s.i >= len(s.doc) {
		return false
	}
	c := s.doc[s.i]
	switch c {
	case '{':
		return s.object(depth+1, live)
	case '[':
		return s.array(depth+1, live)
	}
	live = live && len(s.path) > 0 // a scalar document has no term path
	switch {
	case c == '"':
		if !live {
			return s.skipString()
		}
		p := s.storePath()
		k := len(s.arena)
		var ok bool
		s.arena, ok = s.appendString(append(s.arena, tagString))
		return ok && s.record(p, k)
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number(live)
	case bytes.HasPrefix(s.doc[s.i:], []byte("true")):
		s.i += 4
		return s.literal(live, tagTrue)
	case bytes.HasPrefix(s.doc[s.i:], []byte("false")):
		s.i += 5
		return s.literal(live, tagFalse)
	case bytes.HasPrefix(s.doc[s.i:], []byte("null")):
		s.i += 4
		return s.literal(live, tagNull)
	}
	return false
}

func (s *termScanner) literal(live bool, tag byte) bool {
	if !live {
		return true
	}
	p := s.storePath()
	k := len(s.arena)
	s.arena = append(s.arena, tag)
	return s.record(p, k)
}

// object reads an object whose '{' is at s.i. Its members' names are kept
// until its '}', to find a repeated one.
func (s *termScanner) object(depth int, live bool) bool {
	if depth > maxDepth {
		return false
	}
	s.i++ // '{'
	s.skipSpace()
	if s.i < len(s.doc) && s.doc[s.i] == '}' {
		s.i++
		return true
	}
	base, first, names := len(s.path), len(s.spans), len(s.names)
	// A bit per member name, by its length and bytes at both ends: names
	// are compared (repeatedName) only if two of them share a bit.
	var seen uint64
	maybeRepeated := false
	for {
		s.skipSpace()
		if s.i >= len(s.doc) || s.doc[s.i] != '"' {
			return false
		}
		memberLive := live
		if live {
			if !s.appendName() {
				return false
			}
			memberLive = s.m == nil || indexedUnder(s.m, s.path)
			if memberLive {
				seg := s.path[base:]
				bit := uint64(1) << ((uint(len(seg)) + uint(seg[len(seg)-1]) + 7*uint(seg[min(1, len(seg)-1)])) & 63)
				maybeRepeated = maybeRepeated || seen&bit != 0
				seen |= bit
				s.spans = append(s.spans, span{uint32(len(s.names)), uint32(len(seg))})
				s.names = append(s.names, seg...)
			}
		} else if !s.skipString() {
			return false
		}
		s.skipSpace()
		if s.i >= len(s.doc) || s.doc[s.i] != ':' {
			return false
		}
		s.i++
		s.skipSpace()
		if !s.value(depth, memberLive) {
			return false
		}
		s.path = s.path[:base]
		s.skipSpace()
		if s.i >= len(s.doc) {
			return false
		}
		switch s.doc[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			s.repeated = maybeRepeated && s.repeatedName(first)
			s.spans, s.names = s.spans[:first], s.names[:names]
			return !s.repeated
		default:
			return false
		}
	}
}

// array reads an array whose '[' is at s.i.
func (s *termScanner) array(depth int, live bool) bool {
	if depth > maxDepth {
		return false
	}
	s.i++ // '['
	s.skipSpace()
	if s.i < len(s.doc) && s.doc[s.i] == ']' {
		s.i++
		return true
	}
	base := len(s.path)
	if live {
		s.path = append(s.path, "/[]"...)
		live = s.m == nil || indexedUnder(s.m, s.path)
	}
	s.arrays++
	defer func() { s.arrays-- }()
	for {
		s.skipSpace()
		if !s.value(depth, live) {
			return false
		}
		s.skipSpace()
		if s.i >= len(s.doc) {
			return false
		}
		switch s.doc[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			s.path = s.path[:base]
			return true
		default:
			return false
		}
	}
}

// repeatedName reports whether two of the member names recorded since
// spans[first] are equal. Segments are compared: quoting is one to one.
func (s *termScanner) repeatedName(first int) bool {
	sp := s.spans[first:]
	if len(sp) <= 16 {
		for i := 1; i < len(sp); i++ {
			for j := range i {
				if bytes.Equal(sp[i].of(s.names), sp[j].of(s.names)) {
					return true
				}
			}
		}
		return false
	}
	slices.SortFunc(sp, func(a, b span) int { return bytes.Compare(a.of(s.names), b.of(s.names)) })
	for i := 1; i < len(sp); i++ {
		if bytes.Equal(sp[i].of(s.names), sp[i-1].of(s.names)) {
			return true
		}
	}
	return false
}

// appendName reads the property name at s.i and appends its segment to
// s.path, as appendSegment does.
func (s *termScanner) appendName() bool {
	s.path = append(s.path, '/')
	start := len(s.path)
	var ok bool
	if s.path, ok = s.appendString(s.path); !ok {
		return false
	}
	name := s.path[start:]
	if !segmentNeedsQuote(name) {
		return true
	}
	// Rare: quote it. The name moves to the end of names, as scratch.
	n := len(s.names)
	s.names = append(s.names, name...)
	s.path = append(s.path[:start], '"')
	for _, c := range s.names[n:] {
		if c == '"' || c == '\\' {
			s.path = append(s.path, '\\')
		}
		s.path = append(s.path, c)
	}
	s.path = append(s.path, '"')
	s.names = s.names[:n]
	return true
}

// segmentNeedsQuote is needsQuote for a name held in bytes.
func segmentNeedsQuote(name []byte) bool {
	switch string(name) {
	case "", "[]", "*", "?":
		return true
	}
	for _, c := range name {
		if c == '/' || c == '"' || c == '\\' {
			return true
		}
	}
	return false
}

// storePath returns the arena span of s.path, storing it unless it is one
// of the paths stored last. Only in an array can a path come again (with
// its next element); a path outside every array is one of a kind, as it
// has no "[]" segment and a repeated name sends the document to Decode.
func (s *termScanner) storePath() span {
	if s.arrays == 0 {
		p := span{uint32(len(s.arena)), uint32(len(s.path))}
		s.arena = append(s.arena, s.path...)
		return p
	}
	for _, p := range s.recent {
		if p.n == uint32(len(s.path)) && p.n > 0 && bytes.Equal(p.of(s.arena), s.path) {
			return p
		}
	}
	p := span{uint32(len(s.arena)), uint32(len(s.path))}
	s.arena = append(s.arena, s.path...)
	s.recent[s.next] = p
	s.next = (s.next + 1) % len(s.recent)
	return p
}

// record adds the scalar whose term path is at p and whose Key starts at
// arena offset k and runs to the arena's end.
func (s *termScanner) record(p span, k int) bool {
	if len(s.arena) > maxArena {
		return false
	}
	s.recs = append(s.recs, termRec{path: p, key: span{uint32(k), uint32(len(s.arena) - k)}})
	return true
}

// emit appends the recorded terms whose paths are indexed (by indexed, or
// else by s.m) to dst, sorted by path and key, each once, as Terms does.
func (s *termScanner) emit(indexed func(string) bool, dst []Term) []Term {
	if len(s.recs) == 0 {
		return dst
	}
	a := s.arena
	slices.SortFunc(s.recs, func(x, y termRec) int {
		if x.path != y.path { // one span often serves many scalars
			if c := bytes.Compare(x.path.of(a), y.path.of(a)); c != 0 {
				return c
			}
		}
		return bytes.Compare(x.key.of(a), y.key.of(a))
	})
	// One string holds every path and key; indexed sees its substrings.
	str := string(a)
	at := func(p span) string { return str[p.off : p.off+p.n] }
	kept := s.recs[:0]
	keptBytes := 0
	var ok bool
	for i, r := range s.recs {
		if prev := s.recs[max(i-1, 0)].path; i == 0 || r.path != prev && !bytes.Equal(r.path.of(a), prev.of(a)) {
			if indexed != nil {
				ok = indexed(at(r.path))
			} else {
				ok = s.m.Indexed(at(r.path))
			}
			if ok {
				keptBytes += int(r.path.n)
			}
		} else if !ok || bytes.Equal(r.key.of(a), s.recs[i-1].key.of(a)) {
			continue
		}
		if ok {
			kept = append(kept, r)
			keptBytes += int(r.key.n)
		}
	}
	if keptBytes*2 < len(a) {
		// Most of the arena is not kept (paths not indexed, repeats): copy
		// what is, so that the terms do not pin the rest.
		b := s.arena[:0] // str holds the old bytes
		var old, moved span
		for i, r := range kept {
			if i == 0 || at(r.path) != at(old) {
				old, moved = r.path, span{uint32(len(b)), r.path.n}
				b = append(b, at(r.path)...)
			}
			k := span{uint32(len(b)), r.key.n}
			b = append(b, at(r.key)...)
			kept[i] = termRec{path: moved, key: k}
		}
		s.arena = b
		if len(b) == 0 {
			return dst
		}
		str = string(b)
	}
	dst = slices.Grow(dst, len(kept))
	for _, r := range kept {
		dst = append(dst, Term{Path: at(r.path), Key: at(r.key)})
	}
	return dst
}
