package segment

import (
	"fmt"
	"testing"
	"unsafe"
)

// TestIDArena: ids come back as given, in memory of the arena's own; an
// arena told the number of entries holds ids of a steady length in one
// allocation, and one told too few makes more, each at least as large as
// the ids asked for at the time.
func TestIDArena(t *testing.T) {
	for _, tc := range []struct {
		expect     int64
		allocsMost int
	}{{1000, 1}, {0, 10}, {100, 10}} {
		t.Run(fmt.Sprint(tc.expect), func(t *testing.T) {
			a := NewIDArena(tc.expect)
			var got []string
			for f := range 10 {
				var b []byte
				for i := range 100 {
					b = fmt.Appendf(b, "f%03d-id%05d", f, i)
				}
				want := string(b)
				s := a.strings(b, 100)
				b[0] = 'X'
				if s != want {
					t.Fatalf("file %d: arena returned %.20q..., want %.20q...", f, s, want)
				}
				got = append(got, s)
			}
			allocs := 1
			for i := 1; i < len(got); i++ {
				end := unsafe.Add(unsafe.Pointer(unsafe.StringData(got[i-1])), len(got[i-1]))
				if end != unsafe.Pointer(unsafe.StringData(got[i])) {
					allocs++
				}
			}
			if allocs > tc.allocsMost {
				t.Fatalf("%d allocations, want at most %d", allocs, tc.allocsMost)
			}
			if s := a.strings(nil, 0); s != "" {
				t.Fatalf("strings of nothing = %q", s)
			}
		})
	}
}
