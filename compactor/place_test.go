package compactor

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestPlace runs the cases of testdata/place: "place target=<bytes>" and one
// record a line ("expire=<t>|never size=<n>", "tombstone" for a tombstone),
// numbered from 0; the answer is the files Place makes, one line each, the
// records' numbers in order. -rewrite regenerates the answers.
func TestPlace(t *testing.T) {
	datadriven.RunTest(t, "testdata/place", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "place" {
			d.Fatalf(t, "unknown command %q", d.Cmd)
		}
		var target int64
		d.ScanArgs(t, "target", &target)
		var recs []Placed
		for _, line := range strings.Split(d.Input, "\n") {
			if line = strings.TrimSpace(line); line == "" {
				continue
			}
			r := Placed{Expire: math.MaxInt64}
			for _, f := range strings.Fields(line) {
				k, v, _ := strings.Cut(f, "=")
				var err error
				switch k {
				case "tombstone":
					r.Tombstone = true
				case "expire":
					if v != "never" {
						r.Expire, err = strconv.ParseInt(v, 10, 64)
					}
				case "size":
					r.Size, err = strconv.Atoi(v)
				default:
					err = fmt.Errorf("unknown field")
				}
				if err != nil {
					d.Fatalf(t, "record %q: %s: %v", line, f, err)
				}
			}
			recs = append(recs, r)
		}
		var b strings.Builder
		for _, file := range Place(recs, target) {
			fmt.Fprintln(&b, strings.Trim(fmt.Sprint(file), "[]"))
		}
		return b.String()
	})
}

func TestIDFilter(t *testing.T) {
	f := NewIDFilter(1000)
	for i := range 1000 {
		f.Add(fmt.Sprint("in-", i))
	}
	for i := range 1000 {
		if !f.MayContain(fmt.Sprint("in-", i)) {
			t.Fatalf("false negative for in-%d", i)
		}
	}
	fp := 0
	for i := range 10000 {
		if f.MayContain(fmt.Sprint("out-", i)) {
			fp++
		}
	}
	if fp > 300 {
		t.Fatalf("%d false positives in 10000, want about 100", fp)
	}
}

// TestIDFilterSizes: whatever the number of ids and their form, no false
// negatives, and false positives near the 1% target.
func TestIDFilterSizes(t *testing.T) {
	for _, n := range []int{0, 1, 7, 100, 5000, 100_000} {
		for _, form := range []string{"%d", "doc-%012d", "%x-7b1e-4c1f-9a3b-%08x"} {
			id := func(set, i int) string {
				if strings.Count(form, "%") == 2 {
					return fmt.Sprintf(form, set, i)
				}
				return fmt.Sprintf(form, set*10_000_000+i)
			}
			f := NewIDFilter(n)
			for i := range n {
				f.Add(id(1, i))
			}
			for i := range n {
				if !f.MayContain(id(1, i)) {
					t.Fatalf("n=%d %q: false negative for %s", n, form, id(1, i))
				}
			}
			fp := 0
			const probes = 20000
			for i := range probes {
				if f.MayContain(id(2, i)) {
					fp++
				}
			}
			if n >= 7 && fp > probes*3/100 { // (a filter of a few bits is a coarse one)
				t.Errorf("n=%d %q: %d false positives in %d, want about 1%%", n, form, fp, probes)
			}
			t.Logf("n=%d %q: %d bits, %d probes, %.2f%% false positives", n, form, f.m, f.k, 100*float64(fp)/probes)
		}
	}
}
