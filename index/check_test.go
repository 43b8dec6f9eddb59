package index

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestCheck runs Check on an index through writes, deletes and marking in
// small steps (which split coarse buckets part way), where it must find
// nothing, and then on indexes damaged one way each, where it must name
// the damage.
func TestCheck(t *testing.T) {
	build := func() *Index {
		x := newTestIndex()
		for i := range 300 {
			e := int64(1_000 + i*7) // spread over several coarse windows
			if i%5 == 0 {
				e = Never
			}
			put(x, fmt.Sprint(i), uint64(i+1), uint32(1+i%3), e)
		}
		for i := 0; i < 300; i += 11 {
			x.Delete(fmt.Sprint(i))
		}
		return x
	}
	x := build()
	if err := x.Check(); err != nil {
		t.Fatal(err)
	}
	for now := int64(1_000); now < 3_200; now += 97 {
		for done := false; !done; {
			_, done = x.AdvanceN(now, 5)
			if err := x.Check(); err != nil {
				t.Fatalf("at %d, after a step of marking: %v", now, err)
			}
		}
		put(x, fmt.Sprint("new", now), uint64(10_000+now), 4, now+40) // filed after the split of its window
		if err := x.Check(); err != nil {
			t.Fatalf("at %d, after a write: %v", now, err)
		}
	}

	for _, c := range []struct {
		damage func(x *Index)
		want   string
	}{
		{func(x *Index) { x.buckets.reset() }, "filed in no bucket"},
		{func(x *Index) { x.live++ }, "live items"},
		{func(x *Index) { x.liveBytes-- }, "live items"},
		{func(x *Index) { x.files[1].Records++ }, "file usage"},
		{func(x *Index) { x.expired.Add(x.nslots + 5) }, "not in use"},
	} {
		x := build()
		c.damage(x)
		err := x.Check()
		if !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("damage %q: Check = %v", c.want, err)
		}
	}
}
