package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
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

// TestOpenRebuildsEverything: Open rebuilds, from many segment files and a
// journal tail of many small entries and a few large compressed ones, the
// versions the writes left: overwrites in later files win, deletes in later
// files hide the versions in earlier ones, and the journal's writes win
// over the files'.
func TestOpenRebuildsEverything(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := newFakeClock(t0)
	want := map[string]int{} // id -> the "v" of its newest version
	var db *DB
	var c *Container
	open := func(seal int64) {
		db = openTest(t, dir, clk, func(o *Options) { o.SealThreshold = seal; o.CompactionInterval = -1 })
		var err error
		if c, err = db.Container("c"); errors.Is(err, ErrNotFound) {
			c = mustCreateContainer(t, db, ContainerProperties{ID: "c", DefaultTTL: TTL(-1)})
		} else if err != nil {
			t.Fatal(err)
		}
	}
	doc := func(id string, v, pad int) []byte {
		return fmt.Appendf(nil, `{"id":%q,"v":%d,"p":"%s"}`, id, v, strings.Repeat("abc ", pad))
	}
	write := func(round int) {
		for i := range 600 {
			id := fmt.Sprintf("k%04d", i)
			gone := i%11 == 0 // deleted in a file, for good
			if gone && round == 3 {
				continue
			}
			if (i+round)%7 == 0 || gone && round == 2 {
				if err := c.Delete(ctx, id); err != nil && !errors.Is(err, ErrNotFound) {
					t.Fatal(err)
				}
				delete(want, id)
				continue
			}
			if _, err := c.Upsert(ctx, doc(id, round*1000+i, 20)); err != nil {
				t.Fatal(err)
			}
			want[id] = round*1000 + i
		}
	}
	check := func(when string) {
		t.Helper()
		for i := range 700 {
			id := fmt.Sprintf("k%04d", i)
			it, err := c.Read(ctx, id)
			v, ok := want[id]
			switch {
			case !ok && !errors.Is(err, ErrNotFound):
				t.Fatalf("%s: Read(%s) = %v, want ErrNotFound", when, id, err)
			case ok && err != nil:
				t.Fatalf("%s: Read(%s): %v", when, id, err)
			case ok && !bytes.Contains(it.Body, fmt.Appendf(nil, `"v":%d,`, v)):
				t.Fatalf("%s: Read(%s) = %.40s..., want v %d", when, id, it.Body, v)
			}
		}
		if st := c.Stats(); st.Items != int64(len(want)) {
			t.Fatalf("%s: %d items, want %d", when, st.Items, len(want))
		}
	}

	open(8 << 10) // small files, sealed as the writes go
	for round := range 3 {
		write(round)
	}
	check("written")
	db.Close()
	if n := len(segNames(t, dir)); n < 5 {
		t.Fatalf("%d segment files, want several", n)
	}

	open(64 << 20) // nothing sealed: a journal tail of many small entries
	write(3)
	for b := range 3 { // and a few large ones, compressed
		bt := c.NewBatch()
		for i := range 100 {
			id := fmt.Sprintf("k%04d", 600+i)
			bt.Upsert(doc(id, 5000+b*100+i, 1000))
			want[id] = 5000 + b*100 + i
		}
		if _, err := c.ExecuteBatch(ctx, bt); err != nil {
			t.Fatal(err)
		}
	}
	check("journal written")
	db.Close()

	open(64 << 20)
	check("reopened")
	db.Close()
}
