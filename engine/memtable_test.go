package engine

import "testing"

// TestMemtableHint: a new memtable has room for the records of the one it
// replaces, so that a steady stream of writes fills it without regrowing,
// and never for more than maxMemtableHint, so that one burst of small
// records does not reserve memory for every memtable after it.
func TestMemtableHint(t *testing.T) {
	for _, hint := range []int{0, 1, 16_000, maxMemtableHint, maxMemtableHint + 1, 10 * maxMemtableHint} {
		m := newMemtable(7, hint)
		want := min(hint, maxMemtableHint)
		if cap(m.recs) != want || cap(m.replaced) != want || len(m.recs) != 0 || m.gen != 7 {
			t.Errorf("newMemtable(7, %d): gen %d, %d records with room for %d and %d, want none with room for %d",
				hint, m.gen, len(m.recs), cap(m.recs), cap(m.replaced), want)
		}
	}
}
