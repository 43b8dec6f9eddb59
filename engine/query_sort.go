package engine

import (
	"cmp"
	"slices"
	"strings"
)

// A query's candidates come from bitmaps in slot order and are read in id
// order (the order results come in without ORDER BY), so every query that
// reads many sorts many ids. Comparing whole strings in a general sort
// costs a memory compare per step over strings that, in most containers,
// share a long prefix ("order-000..."). sortByID sorts instead by the 8
// bytes that follow the prefix all the ids share, as integers, with a
// radix sort, and compares whole ids only among those that tie there.

// Below radixSortMin candidates the keys are sorted by comparison (a radix
// sort's fixed cost is a pass over its 256 counts per byte), and below
// keySortMin the candidates themselves are.
const (
	radixSortMin = 256
	keySortMin   = 16
)

// sortByID sorts cands by id. It leaves them as they are when they are in
// id order already (slots given out in the order ids were first written,
// to ids that grow: a common case).
func sortByID(cands []cand) {
	if len(cands) < keySortMin {
		slices.SortFunc(cands, byID)
		return
	}
	if slices.IsSortedFunc(cands, byID) {
		return
	}
	lcp := commonPrefix(cands)
	keys := make([]idKey, len(cands))
	var and, or uint64 = ^uint64(0), 0
	for i := range cands {
		k := prefixKey(cands[i].ID, lcp)
		keys[i] = idKey{k, uint32(i)}
		and &= k
		or |= k
	}
	// Ids that tie on their 8 bytes after the common prefix are ordered by
	// the rest.
	rest := func(a, b idKey) int { return strings.Compare(cands[a.i].ID[lcp:], cands[b.i].ID[lcp:]) }
	if len(keys) < radixSortMin {
		slices.SortFunc(keys, func(a, b idKey) int {
			if c := cmp.Compare(a.k, b.k); c != 0 {
				return c
			}
			return rest(a, b)
		})
		permute(cands, keys)
		return
	}
	keys = radixSort(keys, make([]idKey, len(keys)), and^or)
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && keys[j].k == keys[i].k {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(keys[i:j], rest)
		}
		i = j
	}
	permute(cands, keys)
}

// idKey is a candidate's sort key: 8 bytes of its id as an integer, and its
// place in the candidates.
type idKey struct {
	k uint64
	i uint32
}

// commonPrefix returns the length of the prefix every id of cands shares.
func commonPrefix(cands []cand) int {
	first := cands[0].ID
	n := len(first)
	for i := 1; i < len(cands) && n > 0; i++ {
		id := cands[i].ID
		if len(id) >= n && id[:n] == first[:n] {
			continue
		}
		m := min(n, len(id))
		k := 0
		for k < m && id[k] == first[k] {
			k++
		}
		n = k
	}
	return n
}

// prefixKey returns the 8 bytes of id from byte from on, big-endian (zeros
// past the end), so that integer order is their byte order.
func prefixKey(id string, from int) uint64 {
	var k uint64
	for j := range 8 {
		k <<= 8
		if from+j < len(id) {
			k |= uint64(id[from+j])
		}
	}
	return k
}

// radixSort sorts keys by k, stably, with tmp (of keys' length) as scratch,
// passing over each byte that no two keys differ in (the bits set in
// differ mark those that do). It returns the sorted slice: keys or tmp.
func radixSort(keys, tmp []idKey, differ uint64) []idKey {
	for shift := uint(0); shift < 64; shift += 8 {
		if (differ>>shift)&0xff == 0 {
			continue
		}
		var count [256]int
		for _, k := range keys {
			count[(k.k>>shift)&0xff]++
		}
		pos := 0
		for b := range count {
			c := count[b]
			count[b] = pos
			pos += c
		}
		for _, k := range keys {
			b := (k.k >> shift) & 0xff
			tmp[count[b]] = k
			count[b]++
		}
		keys, tmp = tmp, keys
	}
	return keys
}

// permute moves cands into the order keys give (cands[keys[j].i] goes to
// j), in place: each candidate is moved once, along the permutation's
// cycles, and keys is used up to mark the places done.
func permute(cands []cand, keys []idKey) {
	const done = ^uint32(0)
	for j := range keys {
		if keys[j].i == done || keys[j].i == uint32(j) {
			continue
		}
		// Follow the cycle through j: place j takes from keys[j].i, which
		// takes from its own source, until the cycle comes back to j.
		tmp := cands[j]
		at := uint32(j)
		for {
			from := keys[at].i
			keys[at].i = done
			if from == uint32(j) {
				cands[at] = tmp
				break
			}
			cands[at] = cands[from]
			at = from
		}
	}
}
