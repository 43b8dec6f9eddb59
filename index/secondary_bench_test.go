package index

import (
	"fmt"
	"testing"
)

// benchIndex returns an index of n items each with docTerms, and their ids.
func benchIndex(b *testing.B, n int) (*Index, []string) {
	b.Helper()
	x := newTermIndex()
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("item-%011d", i)
		putItem(x, ids[i], uint64(i+1), 1, 0)
		x.SetTerms(ids[i], uint64(i+1), docTerms(i))
	}
	return x, ids
}

// BenchmarkSetTermsInsert indexes new items: eight terms each, one of them
// a new key of a unique path.
func BenchmarkSetTermsInsert(b *testing.B) {
	x := newTermIndex()
	n := b.N
	ids := make([]string, n)
	all := make([][]Term, n)
	for i := range n {
		ids[i] = fmt.Sprintf("item-%011d", i)
		putItem(x, ids[i], uint64(i+1), 1, 0)
		all[i] = docTerms(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range n {
		x.SetTerms(ids[i], uint64(i+1), all[i])
	}
}

// BenchmarkSetTermsReplace re-indexes items of a 1e5-item index with terms
// of another document: every scalar term changes, new keys come and old
// ones go.
func BenchmarkSetTermsReplace(b *testing.B) {
	const n = 100_000
	x, ids := benchIndex(b, n)
	var docs [2][][]Term // the other document, then the first again
	for v := range docs {
		docs[v] = make([][]Term, n)
		for i := range n {
			docs[v][i] = docTerms(i + (1-v)*n)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := i % n
		x.SetTerms(ids[k], uint64(k+1), docs[i/n%2][k])
	}
}

func BenchmarkTermEq(b *testing.B) {
	x, _ := benchIndex(b, 100_000)
	for _, c := range []struct{ name, path, key string }{
		{"selective", "/email", strKey("user0012345@example.com")}, // 1 item
		{"unselective", "/status", strKey("idle")},                 // 20% of the items
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				x.TermEq(c.path, c.key)
			}
		})
	}
}

func BenchmarkTermRange(b *testing.B) {
	x, _ := benchIndex(b, 100_000)
	for _, c := range []struct {
		name, path string
		lo, hi     uint64
	}{
		{"ts 1pct", "/ts", 1_700_000_000, 1_700_000_000 + 333},    // 333 keys of 1..3 slots
		{"age 10pct", "/age", 30, 40},                             // 10 keys of 1000 slots
		{"ts 50pct", "/ts", 1_700_000_000, 1_700_000_000 + 16667}, // 16667 keys
	} {
		b.Run(c.name, func(b *testing.B) {
			lo, hi := KeyBound{Key: numKey(c.lo), Inclusive: true}, KeyBound{Key: numKey(c.hi)}
			b.ReportAllocs()
			for b.Loop() {
				x.TermRange(c.path, lo, hi)
			}
		})
	}
}
