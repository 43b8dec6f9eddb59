package index

import (
	"cmp"
	"slices"
	"unsafe"
)

// TermUsage describes the secondary indexes for memory reports.
type TermUsage struct {
	Paths    int   // paths with at least one key
	Keys     int   // distinct (path, key) terms
	Postings int64 // slot entries over all terms
	// Bytes estimates the heap the secondary indexes hold: the paths, their
	// keys and posting lists, and the per-slot term lists.
	Bytes   int64
	PerPath []PathUsage // by path name
}

// PathUsage is the share of one path in TermUsage. Its Bytes cover the
// path's keys and posting lists, not the per-slot term lists, which only
// TermUsage.Bytes counts.
type PathUsage struct {
	Path     string
	Keys     int
	Postings int64
	Bytes    int64
}

// Estimates of the heap behind the secondary structures, on 64-bit
// platforms. secondary_mem_test.go compares the total with the measured
// heap.
const (
	termBytes      = int64(unsafe.Sizeof(term{}))
	slotTermsBytes = int64(unsafe.Sizeof(slotTerms{}))
	// btreeItemBytes is a term's share of its path's B-tree: an 8-byte
	// pointer in a node between half and completely full, whose item slice
	// may have spare capacity, and the node's own header.
	btreeItemBytes = 20
	// pathBytes is the fixed cost of a path: its pathIndex, B-tree, root
	// node and entry in the path map.
	pathBytes = 200
)

// TermUsage reports the size of the secondary indexes. It walks every term
// and every allocated page of slot lists: it is for memory reports, not for
// every request.
func (x *Index) TermUsage() TermUsage {
	s := &x.sec
	u := TermUsage{Paths: len(s.paths), Keys: s.keys, Postings: s.postings}
	per := make([]PathUsage, len(s.pathTab))
	for pid, p := range s.pathTab {
		if p != nil {
			per[pid] = PathUsage{
				Path:     p.name,
				Keys:     p.keys.Len(),
				Postings: p.postings,
				Bytes:    pathBytes + roundUp8(int64(len(p.name))) + int64(p.slots.GetSizeInBytes()),
			}
		}
	}
	s.terms.each(func(t *term) {
		per[t.path].Bytes += termBytes + btreeItemBytes + roundUp8(int64(len(t.key))) + t.bytes()
	})
	// Free terms in allocated pages still hold their place.
	u.Bytes = s.terms.bytes() - int64(s.keys)*termBytes + s.table.bytes()
	for _, pu := range per {
		if pu.Keys > 0 {
			u.PerPath = append(u.PerPath, pu)
			u.Bytes += pu.Bytes
		}
	}
	slices.SortFunc(u.PerPath, func(a, b PathUsage) int { return cmp.Compare(a.Path, b.Path) })
	for _, page := range s.lists {
		if page == nil {
			continue
		}
		u.Bytes += int64(len(page)) * slotTermsBytes
		for i := range page {
			u.Bytes += int64(cap(page[i].ids)) * 4
		}
	}
	return u
}

func roundUp8(n int64) int64 { return (n + 7) &^ 7 }
