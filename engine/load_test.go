package engine

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
)

// TestInOrder: results reach use in order whatever the workers' timing;
// no more than ahead wait at a time; an error from use stops the rest and
// inOrder returns only once no work is running.
func TestInOrder(t *testing.T) {
	for _, tc := range []struct{ n, workers, ahead int }{
		{0, 2, 3}, {1, 1, 1}, {5, 8, 2}, {100, 1, 1}, {100, 3, 4}, {1000, 2, 3},
	} {
		t.Run(fmt.Sprintf("n%d/w%d/a%d", tc.n, tc.workers, tc.ahead), func(t *testing.T) {
			var started, running, maxAhead, used atomic.Int64
			err := inOrder(tc.n, tc.workers, tc.ahead, func(i int) int {
				running.Add(1)
				defer running.Add(-1)
				if d := started.Add(1) - used.Load(); d > maxAhead.Load() {
					maxAhead.Store(d) // racy max, close enough for a bound
				}
				return i * i
			}, func(i, v int) error {
				if u := int(used.Load()); i != u || v != i*i {
					t.Fatalf("use(%d, %d), want use(%d, %d)", i, v, u, u*u)
				}
				used.Add(1)
				return nil
			})
			if err != nil || int(used.Load()) != tc.n {
				t.Fatalf("inOrder = %v after %d uses, want nil after %d", err, used.Load(), tc.n)
			}
			if running.Load() != 0 {
				t.Fatal("work still running after inOrder returned")
			}
			if tc.n > 0 && maxAhead.Load() > int64(tc.ahead)+1 {
				t.Fatalf("%d started beyond use, want at most %d", maxAhead.Load(), tc.ahead+1)
			}
		})
	}
	t.Run("error", func(t *testing.T) {
		boom := errors.New("boom")
		var running, calls atomic.Int64
		err := inOrder(1000, 2, 3, func(i int) int {
			running.Add(1)
			defer running.Add(-1)
			calls.Add(1)
			return i
		}, func(i, v int) error {
			if i == 10 {
				return boom
			}
			return nil
		})
		if !errors.Is(err, boom) {
			t.Fatalf("inOrder = %v, want boom", err)
		}
		if running.Load() != 0 {
			t.Fatal("work still running after inOrder returned its error")
		}
		if c := calls.Load(); c > 10+1+3+2 {
			t.Fatalf("work called %d times after an error at 10", c)
		}
	})
}
