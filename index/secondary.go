package index

import (
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/tidwall/btree"
)

// Term is one secondary-index entry of an item: a value found at a path of
// its document. Both fields are opaque to the index. Path names where the
// value is ("/a/b", "/tags/[]"); Key encodes the value so that plain string
// order is value order. The engine computes an item's terms and hands them
// to SetTerms.
type Term struct {
	Path, Key string
}

// secondary holds the secondary indexes of one container: for every path,
// its keys in order, each with the slots of the items that have it; and for
// every slot, the terms it was given, so that they can be taken back.
//
// Paths are interned to uint32 path ids and (path, key) pairs to uint32 term
// ids. A term lives in a paged array (termStore), so that a pointer to it
// stays valid as the array grows; a path's B-tree orders pointers to its
// terms by key, for ranges and walks; a hash table (termTable) finds a term
// by path and key, for SetTerms. A slot's terms are a sorted list of term
// ids. A term whose last slot leaves is freed, and so is a path whose last
// term goes, so that memory follows the live data.
//
// Writers (SetTerms, ClearTerms, the release of a slot) hold the container's
// write lock. Readers hold its read lock, possibly many at once, so nothing
// that answers a query may change anything here, not even a scratch buffer.
type secondary struct {
	paths     map[string]uint32 // path name → path id
	pathTab   []*pathIndex      // by path id; nil while the id is free
	freePaths []uint32

	terms termStore // by term id
	table termTable // (path id, key) → term id

	lists listPages // by slot: the slot's term ids and their version

	keys     int   // terms in use
	postings int64 // slot entries over all terms

	scratch []uint32 // term ids being set; writers only
	cand    []uint64 // internAll's candidates; writers only
	list    TermList // SetTerms's terms, packed; writers only
	left    []uint32 // path ids a slot being set left a term of; writers only
}

// pathIndex is the secondary index of one path: its keys in string order,
// and the slots that hold at least one of them (so that the slots holding
// none, which ORDER BY places itself, are one AndNot away).
type pathIndex struct {
	name     string
	keys     *btree.BTreeG[*term]
	slots    roaring.Bitmap // slots with a term at this path
	postings int64          // slot entries over the path's terms
}

func lessTerm(a, b *term) bool { return a.key < b.key }

func newPathIndex(name string) *pathIndex {
	return &pathIndex{
		name: name,
		// The index is guarded by the engine's lock; the tree needs none.
		keys: btree.NewBTreeGOptions(lessTerm, btree.Options{NoLocks: true}),
	}
}

// get returns the term for key, or nil. It allocates its search key, so that
// concurrent readers share nothing.
func (p *pathIndex) get(key string) *term {
	t, _ := p.keys.Get(&term{key: key})
	return t
}

// slotTerms is what one slot was given by SetTerms: the sorted, distinct ids
// of its terms and the version (the item's Seq) they were computed from. A
// nil ids means no terms were set; an empty, non-nil one means the item has
// none.
type slotTerms struct {
	seq uint64
	ids []uint32
}

// noTerms is the term list of an item that was indexed and has no terms.
var noTerms = []uint32{}

// SetTerms makes terms the secondary-index entries of item id, replacing
// what it had, if the item's newest version is seq (live or expired); it
// reports whether it did. A call for an older version, or for an id not in
// the index, changes nothing: lazy indexing may come after a newer write or
// a delete. Duplicate terms count once. The index copies the strings it
// keeps, so terms may point into a buffer the caller reuses.
func (x *Index) SetTerms(id string, seq uint64, terms []Term) bool {
	l := &x.sec.list
	l.Reset()
	for _, t := range terms {
		l.AddString(t.Path, t.Key)
	}
	return x.SetTermList(id, seq, l)
}

// SetTermList is SetTerms for terms packed in a TermList, which the index
// does not keep.
func (x *Index) SetTermList(id string, seq uint64, l *TermList) bool {
	n, _, ok := x.ids.find(id, x.slots)
	if !ok || x.slots.at(n).Seq != seq {
		return false
	}
	x.sec.set(n, seq, l)
	return true
}

// ClearTerms drops every secondary-index entry, after a change of the
// indexing policy. All of their memory goes back at once.
func (x *Index) ClearTerms() { x.sec = secondary{} }

// TermsSeq returns the version of item id (its Seq at the time) whose terms
// are the item's secondary-index entries, and false if the id is not in the
// index or has had no terms set since it was written under this slot. A
// rebuild skips an item whose TermsSeq is its newest version's Seq.
func (x *Index) TermsSeq(id string) (seq uint64, ok bool) {
	n, _, found := x.ids.find(id, x.slots)
	if !found {
		return 0, false
	}
	l := x.sec.lists.at(n)
	if l == nil || l.ids == nil {
		return 0, false
	}
	return l.seq, true
}

// set replaces the terms of slot n by those of tl, computed from version
// seq.
func (s *secondary) set(n uint32, seq uint64, tl *TermList) {
	ids := s.internAll(tl, s.scratch[:0])
	slices.Sort(ids)
	ids = slices.Compact(ids)
	s.scratch = ids

	// Every term in ids exists now; only then may the merge below free the
	// terms n leaves, so that no id in ids is freed and handed out again.
	s.lists = s.lists.grow(n)
	l := s.lists.at(n)
	old := l.ids
	left := s.left[:0]
	i, j := 0, 0
	for i < len(old) || j < len(ids) {
		switch {
		case j == len(ids) || (i < len(old) && old[i] < ids[j]):
			left = append(left, s.terms.at(old[i]).path)
			s.unpost(old[i], n)
			i++
		case i == len(old) || ids[j] < old[i]:
			s.post(ids[j], n)
			j++
		default:
			i++
			j++
		}
	}
	s.leavePaths(n, left, ids)
	s.left = left
	switch {
	case len(ids) == 0:
		l.ids = noTerms
	case cap(old) >= len(ids) && cap(old) <= 2*len(ids):
		l.ids = append(old[:0], ids...)
	default:
		l.ids = append(make([]uint32, 0, len(ids)), ids...)
	}
	l.seq = seq
}

// drop takes slot n out of every posting list, as the slot is released:
// whatever reuses it next starts without terms.
func (s *secondary) drop(n uint32) {
	l := s.lists.at(n)
	if l == nil || l.ids == nil {
		return
	}
	left := s.left[:0]
	for _, id := range l.ids {
		left = append(left, s.terms.at(id).path)
		s.unpost(id, n)
	}
	s.leavePaths(n, left, nil)
	s.left = left
	*l = slotTerms{}
}

// leavePaths takes slot n out of the slot sets of the paths in left (where
// it lost a term) at which none of its terms ids remain. A path freed
// meanwhile, with its last term, took its slot set with it.
func (s *secondary) leavePaths(n uint32, left, ids []uint32) {
	for _, pid := range left {
		p := s.pathTab[pid]
		if p == nil || !p.slots.Contains(n) {
			continue
		}
		if !slices.ContainsFunc(ids, func(id uint32) bool { return s.terms.at(id).path == pid }) {
			p.slots.Remove(n)
		}
	}
}

// internAll appends the ids of the terms of tl to ids, creating the terms
// that are new. Most of the time goes in cache misses: the table entry, the
// term, its key, one after the other for each term. So it looks the terms
// up in passes over all of them, each pass's loads independent of one
// another, so that the processor overlaps the misses of different terms:
// first the entries at the terms' home positions, then the terms their
// fingerprints name; only then does it compare keys. A term whose
// candidate is another (fingerprints collide), or new, is interned one by
// one.
func (s *secondary) internAll(tl *TermList, ids []uint32) []uint32 {
	if s.table.entries == nil {
		s.table.entries = make([]uint64, minTableSize)
	}
	entries := s.table.entries
	mask := len(entries) - 1
	cand := s.cand[:0]
	for i := range tl.terms {
		cand = append(cand, entries[int(fingerprint(tl.terms[i].hash))&mask])
	}
	for i, e := range cand {
		// The first entry with the term's fingerprint on its probe path,
		// mostly in the cache line of its home.
		fp := fingerprint(tl.terms[i].hash)
		for k := int(fp) & mask; e != 0 && uint32(e>>32) != fp; e = entries[k] {
			k = (k + 1) & mask
		}
		if e != 0 {
			// The term's key, loaded now: its length and first byte.
			cand[i] = keyHead(s.terms.at(uint32(e)-1).key)<<32 | e&0xffffffff
		} else {
			cand[i] = 0
		}
	}
	for i, e := range cand {
		t := &tl.terms[i]
		if e != 0 {
			id := uint32(e) - 1
			key := tl.bytes(t.key)
			if tm := s.terms.at(id); e>>32 == keyHead(key) && tm.key == string(key) &&
				s.pathTab[tm.path].name == string(tl.bytes(t.path)) {
				ids = append(ids, id)
				continue
			}
		}
		ids = append(ids, s.intern(tl, t))
	}
	s.cand = cand
	return ids
}

// keyHead packs a key's length (modulo 2^24) and first byte, which
// internAll compares before the keys themselves.
func keyHead[S string | []byte](key S) uint64 {
	if len(key) == 0 {
		return 0
	}
	return uint64(len(key))<<8&0xffffff00 | uint64(key[0])
}

// intern returns the id of the term t of l, creating it (and its path) if
// needed. A new term has no slots until post gives it one.
func (s *secondary) intern(l *TermList, t *packedTerm) uint32 {
	path, key := l.bytes(t.path), l.bytes(t.key)
	fp := fingerprint(t.hash)
	id, pos, found := s.table.find(fp, path, key, s)
	if found {
		return id
	}
	pid, ok := s.paths[string(path)]
	if !ok {
		pid = s.newPath(string(path))
	}
	id = s.terms.alloc()
	tm := s.terms.at(id)
	*tm = term{key: string(key), path: pid, id: id}
	s.table.insert(fp, id, pos)
	s.pathTab[pid].keys.Set(tm)
	s.keys++
	return id
}

// newPath interns path, which is not yet interned, and returns its id; the
// index keeps path.
func (s *secondary) newPath(path string) uint32 {
	if s.paths == nil {
		s.paths = make(map[string]uint32)
	}
	p := newPathIndex(path)
	var pid uint32
	if k := len(s.freePaths); k > 0 {
		pid = s.freePaths[k-1]
		s.freePaths = s.freePaths[:k-1]
		s.pathTab[pid] = p
	} else {
		pid = uint32(len(s.pathTab))
		s.pathTab = append(s.pathTab, p)
	}
	s.paths[p.name] = pid
	return pid
}

// post adds slot n to term id's posting list.
func (s *secondary) post(id, n uint32) {
	t := s.terms.at(id)
	t.add(n)
	p := s.pathTab[t.path]
	p.slots.Add(n)
	p.postings++
	s.postings++
}

// unpost takes slot n out of term id's posting list, freeing the term when
// that was its last slot, and its path when that was the path's last term.
func (s *secondary) unpost(id, n uint32) {
	t := s.terms.at(id)
	t.remove(n)
	p := s.pathTab[t.path]
	p.postings--
	s.postings--
	if t.inUse() {
		return
	}
	p.keys.Delete(t)
	s.table.remove(p.name, t.key, s)
	s.keys--
	pid := t.path
	s.terms.release(id)
	if p.keys.Len() == 0 {
		delete(s.paths, p.name)
		s.pathTab[pid] = nil
		s.freePaths = append(s.freePaths, pid)
	}
}

// path returns the secondary index of path, or nil if no item has a term
// under it.
func (s *secondary) path(path string) *pathIndex {
	pid, ok := s.paths[path]
	if !ok {
		return nil
	}
	return s.pathTab[pid]
}

// listPageBits sizes the pages of per-slot term lists, allocated when a
// slot in their range first gets terms.
const listPageBits = 12

type listPages [][]slotTerms

// at returns slot n's term list, or nil if its page was never allocated.
func (p listPages) at(n uint32) *slotTerms {
	i := int(n >> listPageBits)
	if i >= len(p) || p[i] == nil {
		return nil
	}
	return &p[i][n&(1<<listPageBits-1)]
}

// grow makes room for slot n's term list and returns the pages.
func (p listPages) grow(n uint32) listPages {
	i := int(n >> listPageBits)
	for i >= len(p) {
		p = append(p, nil)
	}
	if p[i] == nil {
		p[i] = make([]slotTerms, 1<<listPageBits)
	}
	return p
}
