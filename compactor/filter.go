package compactor

import (
	"math"
	"math/bits"
)

// IDFilter is a Bloom filter of the item ids in one segment file. The
// compactor asks it whether a file may hold a version of an id, to decide
// whether a dead record must stay behind as a tombstone (an older version
// may be on disk there) or can go. False positives only keep a tombstone
// longer than needed; there are no false negatives.
//
// Open builds one for every segment file, so adding must be cheap: an id is
// hashed once, its k probes derived from that hash (double hashing, after
// Kirsch and Mitzenmacher), and each mapped onto the m bits with a
// multiplication rather than a division. The hash has no random seed, so
// that a run replays with the same false positives (the model test's
// seeds rely on it).
type IDFilter struct {
	bits []uint64
	m    uint64 // bits in the filter
	k    int    // probes per id
}

// filterFalsePositive is the filter's target false-positive rate: about
// 10 bits (1.2 bytes) per id.
const filterFalsePositive = 0.01

// NewIDFilter returns an empty filter sized for n ids.
func NewIDFilter(n int) *IDFilter {
	fn := float64(max(n, 1))
	m := uint64(math.Ceil(-fn * math.Log(filterFalsePositive) / (math.Ln2 * math.Ln2)))
	k := max(1, int(math.Round(float64(m)/fn*math.Ln2)))
	return &IDFilter{bits: make([]uint64, (m+63)/64), m: m, k: k}
}

// Add records id.
func (x *IDFilter) Add(id string) {
	h1, h2 := probes(id)
	for range x.k {
		i, _ := bits.Mul64(h1, x.m) // h1 scaled to [0, m)
		x.bits[i/64] |= 1 << (i % 64)
		h1 += h2
	}
}

// MayContain reports whether id may have been added; false is certain.
func (x *IDFilter) MayContain(id string) bool {
	h1, h2 := probes(id)
	for range x.k {
		i, _ := bits.Mul64(h1, x.m)
		if x.bits[i/64]&(1<<(i%64)) == 0 {
			return false
		}
		h1 += h2
	}
	return true
}

// probes returns the first probe of id and the step between probes.
func probes(id string) (h1, h2 uint64) {
	h := hashID(id)
	return h, bits.RotateLeft64(h, 32) | 1
}

// hashID hashes id eight bytes at a time, each word mixed in by a
// multiplication, and the result finished with splitmix64's mixer.
func hashID(s string) uint64 {
	h := uint64(len(s)) * 0x9e3779b97f4a7c15
	for ; len(s) >= 8; s = s[8:] {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		h = bits.RotateLeft64((h^w)*0xbf58476d1ce4e5b9, 31)
	}
	var w uint64
	for i := range len(s) {
		w |= uint64(s[i]) << (8 * i)
	}
	h ^= w
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}
