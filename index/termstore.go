package index

import "github.com/RoaringBitmap/roaring/v2"

// termPageBits sizes the pages terms are stored in. Pages never move, so a
// B-tree may point into them.
const termPageBits = 10

// termStore holds the terms of the secondary indexes by term id, in pages.
// A freed id is handed out again before a new one, lowest first, so that
// the terms in use gather in the low pages; a page whose terms are all freed
// is itself freed, so that the memory of terms follows the live ones after
// a great many expire or are deleted.
type termStore struct {
	pages [][]term // nil while a page holds no term in use
	live  []uint16 // terms in use per page
	next  uint32   // term ids ever allocated
	free  roaring.Bitmap
}

// at returns term id, which is in use.
func (s *termStore) at(id uint32) *term {
	return &s.pages[id>>termPageBits][id&(1<<termPageBits-1)]
}

// alloc returns a free term id; its term is zero.
func (s *termStore) alloc() uint32 {
	var id uint32
	if s.free.IsEmpty() {
		id = s.next
		s.next++
	} else {
		id = s.free.Minimum()
		s.free.Remove(id)
	}
	p := int(id >> termPageBits)
	for p >= len(s.pages) {
		s.pages = append(s.pages, nil)
		s.live = append(s.live, 0)
	}
	if s.pages[p] == nil {
		s.pages[p] = make([]term, 1<<termPageBits)
	}
	s.live[p]++
	return id
}

// release frees term id.
func (s *termStore) release(id uint32) {
	*s.at(id) = term{}
	s.free.Add(id)
	p := id >> termPageBits
	if s.live[p]--; s.live[p] == 0 {
		s.pages[p] = nil
	}
}

// each calls fn for every term in use.
func (s *termStore) each(fn func(t *term)) {
	for _, page := range s.pages {
		for i := range page {
			if t := &page[i]; t.inUse() {
				fn(t)
			}
		}
	}
}

// bytes is the heap of the allocated pages, free terms included.
func (s *termStore) bytes() int64 {
	var n int64
	for _, page := range s.pages {
		n += int64(len(page)) * termBytes
	}
	if !s.free.IsEmpty() {
		n += int64(s.free.GetSizeInBytes())
	}
	return n + int64(len(s.pages))*(24+2) // page headers, live counts
}
