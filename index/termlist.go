package index

import (
	"hash/maphash"
	"unsafe"
)

// TermList is the terms of one item, packed for SetTermList: every path and
// key in one byte buffer, and for each term its spans there and its hash,
// computed as the term is added. A writer fills it outside the container
// lock, so that under the lock each term costs one probe of the term table
// and a byte compare, and nothing is allocated for a term the index
// already holds.
//
// A term may be added twice; it counts once. The zero TermList is empty
// and ready; Reset empties it for reuse, keeping its memory.
type TermList struct {
	buf   []byte
	terms []packedTerm
	// The path of the term added last, to share its span and hash with the
	// next term when the path is the same (the elements of an array).
	lastPath span
	lastHash uint64
}

// packedTerm is one term of a TermList: spans of its buf, and the hash of
// (path, key) that the term table files it under.
type packedTerm struct {
	path, key span
	hash      uint64
}

// span is a range of a TermList's buf.
type span struct{ off, n int }

// termSeed seeds the hashes of terms: one per process, so that a
// TermList's hashes are good for every index.
var termSeed = maphash.MakeSeed()

// pathHash and termHash are the hashes a term is filed under: the path's
// hash, and the key's hashed on top of it.
func pathHash(path []byte) uint64 { return maphash.Bytes(termSeed, path) }

func termHash(ph uint64, key []byte) uint64 {
	return maphash.Bytes(termSeed, key) ^ ph*0x9e3779b97f4a7c15
}

// hashOf is the hash of the term (path, key) held as strings.
func hashOf(path, key string) uint64 { return termHash(pathHash(bytesOf(path)), bytesOf(key)) }

// bytesOf is s's bytes, to be read only.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// Add appends the term (path, key); the list copies both.
func (l *TermList) Add(path, key []byte) {
	p := l.lastPath
	if len(l.terms) == 0 || p.n != len(path) || string(l.buf[p.off:p.off+p.n]) != string(path) {
		p = span{len(l.buf), len(path)}
		l.buf = append(l.buf, path...)
		l.lastPath, l.lastHash = p, pathHash(path)
	}
	k := span{len(l.buf), len(key)}
	l.buf = append(l.buf, key...)
	l.terms = append(l.terms, packedTerm{path: p, key: k, hash: termHash(l.lastHash, key)})
}

// AddString is Add for strings.
func (l *TermList) AddString(path, key string) { l.Add(bytesOf(path), bytesOf(key)) }

// Len is the number of terms added.
func (l *TermList) Len() int { return len(l.terms) }

// Reset empties l, keeping its memory.
func (l *TermList) Reset() {
	l.buf, l.terms = l.buf[:0], l.terms[:0]
	l.lastPath, l.lastHash = span{}, 0
}

// Term returns term i, as strings that share nothing with l.
func (l *TermList) Term(i int) Term {
	t := &l.terms[i]
	return Term{Path: string(l.bytes(t.path)), Key: string(l.bytes(t.key))}
}

func (l *TermList) bytes(s span) []byte { return l.buf[s.off : s.off+s.n] }

// Bytes is the memory l holds, for a caller that pools lists.
func (l *TermList) Bytes() int { return cap(l.buf) + cap(l.terms)*int(unsafe.Sizeof(packedTerm{})) }
