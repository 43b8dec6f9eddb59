package engine

import "testing"

// TestDefaultJournalSegmentSize: with fsync on the journal's files are
// 1 MiB; with NoSync they hold a seal's worth of records, within 1 and
// 64 MiB, so that a seal's new file comes before a file fills; a size set
// by the caller is kept either way.
func TestDefaultJournalSegmentSize(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want int
	}{
		{Options{}, 1 << 20},
		{Options{SealThreshold: 256 << 20}, 1 << 20},
		{Options{NoSync: true}, 16 << 20},
		{Options{NoSync: true, SealThreshold: 32 << 20}, 32 << 20},
		{Options{NoSync: true, SealThreshold: 64 << 10}, 1 << 20},
		{Options{NoSync: true, SealThreshold: 1 << 40}, 64 << 20},
		{Options{NoSync: true, JournalSegmentSize: 8 << 10}, 8 << 10},
		{Options{JournalSegmentSize: 4 << 20}, 4 << 20},
	} {
		if got := tc.o.withDefaults().JournalSegmentSize; got != tc.want {
			t.Errorf("NoSync %v, SealThreshold %d, JournalSegmentSize %d: default %d, want %d",
				tc.o.NoSync, tc.o.SealThreshold, tc.o.JournalSegmentSize, got, tc.want)
		}
	}
}
