package compactor

import (
	"cmp"
	"math"
	"slices"
)

// Data that dies together should live together: Place decides how the
// records of one seal are spread over new segment files so that most files
// later die whole and are dropped without being read.

// Placed is one record to place: its expiry under the current policy
// (math.MaxInt64 for never), whether it is a tombstone, and its size.
type Placed struct {
	Expire    int64
	Tombstone bool
	Size      int
}

// Place groups records (by index into recs) into files: tombstones
// together, records that never expire together, and the rest ordered by
// expiry and cut into files of about targetBytes, so each covers a narrow
// window of expiry instants. Within a file, records keep their order.
func Place(recs []Placed, targetBytes int64) [][]int {
	var tombs, never, finite []int
	for i, r := range recs {
		switch {
		case r.Tombstone:
			tombs = append(tombs, i)
		case r.Expire == math.MaxInt64:
			never = append(never, i)
		default:
			finite = append(finite, i)
		}
	}
	slices.SortStableFunc(finite, func(a, b int) int { return cmp.Compare(recs[a].Expire, recs[b].Expire) })
	var files [][]int
	for _, class := range [][]int{tombs, never, finite} {
		var cur []int
		var bytes int64
		for _, i := range class {
			if len(cur) > 0 && bytes+int64(recs[i].Size) > targetBytes {
				files = append(files, cur)
				cur, bytes = nil, 0
			}
			cur = append(cur, i)
			bytes += int64(recs[i].Size)
		}
		if len(cur) > 0 {
			files = append(files, cur)
		}
	}
	return files
}
