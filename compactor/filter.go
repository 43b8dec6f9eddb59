package compactor

import "github.com/bits-and-blooms/bloom/v3"

// IDFilter is a Bloom filter of the item ids in one segment file. The
// compactor asks it whether a file may hold a version of an id, to decide
// whether a dead record must stay behind as a tombstone (an older version
// may be on disk there) or can go. False positives only keep a tombstone
// longer than needed; there are no false negatives.
type IDFilter struct{ f *bloom.BloomFilter }

// filterFalsePositive is the filter's target false-positive rate: about
// 10 bits (1.2 bytes) per id.
const filterFalsePositive = 0.01

// NewIDFilter returns an empty filter sized for n ids.
func NewIDFilter(n int) *IDFilter {
	return &IDFilter{f: bloom.NewWithEstimates(uint(max(n, 1)), filterFalsePositive)}
}

// Add records id.
func (x *IDFilter) Add(id string) { x.f.AddString(id) }

// MayContain reports whether id may have been added; false is certain.
func (x *IDFilter) MayContain(id string) bool { return x.f.TestString(id) }
