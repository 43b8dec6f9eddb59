package index

// termTable finds a term id by (path, key) in constant time, so that
// SetTerms does not search a B-tree for each of an item's terms; the B-trees
// are searched only to add a key that is new to its path. Like idTable it is
// an open-addressing hash table of 8-byte entries that keeps no strings:
// each entry is a 32-bit fingerprint of (path, key) and the term id plus one
// (zero marks an empty entry), and the path and key are read from the term
// when fingerprints match. The fingerprint comes from the hash a TermList
// computed, outside the lock, as the term was added; paths are not looked
// up unless the term is new. Deletion shifts later entries back, so there
// are no tombstones. The table halves when it is mostly empty, so that it follows
// the number of terms in use. Only writers use it: find sets up an empty
// table.
type termTable struct {
	entries []uint64
	n       int
}

// fingerprint is the 32 bits of a term's hash (see TermList) that the
// table keeps.
func fingerprint(h uint64) uint32 { return uint32(h>>32) ^ uint32(h) }

// find returns the id of the term (path, key), whose fingerprint is fp,
// and its position in entries. If it is absent, pos is where insert puts
// it.
func (t *termTable) find(fp uint32, path, key []byte, s *secondary) (id uint32, pos int, ok bool) {
	if t.entries == nil {
		t.entries = make([]uint64, minTableSize)
	}
	mask := len(t.entries) - 1
	for i := int(fp) & mask; ; i = (i + 1) & mask {
		e := t.entries[i]
		if e == 0 {
			return 0, i, false
		}
		if uint32(e>>32) == fp {
			id := uint32(e) - 1
			if tm := s.terms.at(id); tm.key == string(key) && s.pathTab[tm.path].name == string(path) {
				return id, i, true
			}
		}
	}
}

// insert adds the term id, whose fingerprint is fp, at pos, the position
// find returned.
func (t *termTable) insert(fp uint32, id uint32, pos int) {
	t.entries[pos] = uint64(fp)<<32 | uint64(id+1)
	t.n++
	if t.n*4 > len(t.entries)*3 {
		t.resize(len(t.entries) * 2)
	}
}

// remove deletes the term (path, key), which is in the table.
func (t *termTable) remove(path, key string, s *secondary) {
	_, pos, ok := t.find(fingerprint(hashOf(path, key)), bytesOf(path), bytesOf(key), s)
	if !ok {
		return
	}
	mask := len(t.entries) - 1
	t.entries[pos] = 0
	t.n--
	for i := (pos + 1) & mask; t.entries[i] != 0; i = (i + 1) & mask {
		e := t.entries[i]
		home := int(uint32(e>>32)) & mask
		// Move e into the hole if the hole lies on e's probe path: between
		// its home and its position, cyclically.
		if (i > pos && (home <= pos || home > i)) || (i < pos && home <= pos && home > i) {
			t.entries[pos] = e
			t.entries[i] = 0
			pos = i
		}
	}
	if len(t.entries) > minTableSize && t.n*8 < len(t.entries) {
		t.resize(len(t.entries) / 2)
	}
}

func (t *termTable) resize(size int) {
	old := t.entries
	t.entries = make([]uint64, size)
	mask := size - 1
	for _, e := range old {
		if e == 0 {
			continue
		}
		i := int(uint32(e>>32)) & mask
		for t.entries[i] != 0 {
			i = (i + 1) & mask
		}
		t.entries[i] = e
	}
}

// bytes is the heap of the table.
func (t *termTable) bytes() int64 { return int64(len(t.entries)) * 8 }
