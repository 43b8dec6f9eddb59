package compactor

import (
	"cmp"
	"slices"
)

// FileStats is what the picker knows about one segment file of a container.
type FileStats struct {
	Num         uint32
	FileBytes   int64 // size on disk
	RawBytes    int64 // its records, uncompressed
	LiveBytes   int64 // raw bytes of its records that are the live, newest version of an item
	LiveRecords int64
	Puts        int64 // put records (the rest are tombstones)
	// HidesLive: some record in the file may be the newest version of an
	// id whose older version is in a file still on disk, so dropping the
	// file whole could bring that older version back at the next open.
	HidesLive bool
	// ExpiresBy is the instant by which every record of the file will have
	// expired, as far as was known when it was written (math.MaxInt64 when
	// unknown or never). A hint only: it decides when to rewrite, never
	// what a rewrite keeps.
	ExpiresBy int64
}

// deadShare is the share of the file's raw bytes that no reader needs.
func (f FileStats) deadShare() float64 {
	if f.RawBytes <= 0 {
		return 1
	}
	return 1 - float64(f.LiveBytes)/float64(f.RawBytes)
}

// PickOptions tune the picker. Zero fields take the defaults below.
type PickOptions struct {
	// RewriteThreshold is the dead share of a file's raw bytes at which it
	// is rewritten with its live records only. Default 0.5.
	RewriteThreshold float64
	// SmallFileBytes: files whose records (uncompressed, the unit seals cut
	// files by) are smaller than this are merged. Default 512 KiB, below
	// the smallest file a seal writes on purpose.
	SmallFileBytes int64
	// MinMerge is how many small files it takes to merge them. Default 4.
	MinMerge int
	// MaxRewriteBytes bounds the input (file bytes) of one rewrite group, so
	// that one step of compaction stays short. Default 64 MiB.
	MaxRewriteBytes int64
	// Now is the current instant, and WaitHorizon how many seconds ahead a
	// file's ExpiresBy may be for the picker to wait for it to die whole
	// rather than rewrite it: rewriting data that expires in a moment is
	// write amplification for nothing. Default 60 s.
	Now         int64
	WaitHorizon int64
}

func (o PickOptions) withDefaults() PickOptions {
	if o.RewriteThreshold <= 0 {
		o.RewriteThreshold = 0.5
	}
	if o.SmallFileBytes <= 0 {
		o.SmallFileBytes = 512 << 10
	}
	if o.MinMerge <= 1 {
		o.MinMerge = 4
	}
	if o.MaxRewriteBytes <= 0 {
		o.MaxRewriteBytes = 64 << 20
	}
	if o.WaitHorizon <= 0 {
		o.WaitHorizon = 60
	}
	return o
}

// Plan is the picker's decision.
type Plan struct {
	// Drop are files with no live record that hide nothing still on disk:
	// they are deleted without being read.
	Drop []uint32
	// Rewrite are groups of files, each rewritten together into new files
	// that keep only live records (and the tombstones still needed).
	Rewrite [][]uint32
}

// Pick decides what to compact. A file with no live record is dropped whole
// unless it may hide older versions elsewhere; then it is rewritten (keeping
// just the tombstones it needs), but a file of tombstones alone is left
// until what it hides is gone, since rewriting it would change nothing. A
// file whose records all expire within WaitHorizon is left to die whole. A
// file whose dead share passes the threshold is rewritten; small files are
// merged once there are enough of them. Rewrites go most-dead first, in
// groups bounded by MaxRewriteBytes.
func Pick(files []FileStats, opts PickOptions) Plan {
	o := opts.withDefaults()
	var plan Plan
	var dead, small []FileStats
	for _, f := range files {
		switch {
		case f.LiveRecords == 0 && !f.HidesLive:
			plan.Drop = append(plan.Drop, f.Num)
		case f.ExpiresBy > o.Now && f.ExpiresBy-o.WaitHorizon <= o.Now:
			// Everything in it expires within the horizon: it will be
			// dropped whole then, at no cost. (Once that instant has
			// passed the hint no longer holds it back.)
		case f.LiveRecords == 0 && f.Puts == 0:
			// Only tombstones, all still needed: nothing to gain yet,
			// beyond merging it with other small files.
			if f.RawBytes < o.SmallFileBytes {
				small = append(small, f)
			}
		case f.deadShare() >= o.RewriteThreshold:
			dead = append(dead, f)
		case f.RawBytes < o.SmallFileBytes:
			small = append(small, f)
		}
	}
	slices.SortStableFunc(dead, func(a, b FileStats) int { return cmp.Compare(b.deadShare(), a.deadShare()) })
	plan.Rewrite = appendGroups(plan.Rewrite, dead, 1, o.MaxRewriteBytes)
	slices.SortStableFunc(small, func(a, b FileStats) int { return cmp.Compare(a.Num, b.Num) })
	plan.Rewrite = appendGroups(plan.Rewrite, small, o.MinMerge, o.MaxRewriteBytes)
	slices.Sort(plan.Drop)
	return plan
}

// appendGroups cuts files into groups of at most maxBytes (a file larger
// than that is a group of its own) and keeps the groups of at least min
// files.
func appendGroups(groups [][]uint32, files []FileStats, min int, maxBytes int64) [][]uint32 {
	var cur []uint32
	var bytes int64
	flush := func() {
		if len(cur) >= min {
			groups = append(groups, cur)
		}
		cur, bytes = nil, 0
	}
	for _, f := range files {
		if len(cur) > 0 && bytes+f.FileBytes > maxBytes {
			flush()
		}
		cur = append(cur, f.Num)
		bytes += f.FileBytes
	}
	flush()
	return groups
}
