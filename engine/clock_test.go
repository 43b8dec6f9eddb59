package engine

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// TestObservedExpirySurvivesCrash: once an answer has shown an item
// expired, no crash followed by a wall clock found behind can bring the
// item back, even when the answer came within the second before the crash
// (before the background tick persisted the clock). Each way of observing
// an expiry is tried: a read, a refused replace, a scan, a count, a query.
func TestObservedExpirySurvivesCrash(t *testing.T) {
	ctx := context.Background()
	observe := map[string]func(c *Container) error{
		"read": func(c *Container) error {
			_, err := c.Read(ctx, "x")
			return wantNotFound(err)
		},
		"replace refused": func(c *Container) error {
			_, err := c.Replace(ctx, []byte(`{"id":"x"}`))
			return wantNotFound(err)
		},
		"items": func(c *Container) error {
			for it, err := range c.Items(ctx) {
				if err != nil || it.ID == "x" {
					return errors.Join(err, errors.New("Items yields the expired item"))
				}
			}
			return nil
		},
		"stats": func(c *Container) error {
			if st := c.Stats(); st.Items != 1 {
				return errors.New("Stats counts the expired item")
			}
			return nil
		},
		"query count": func(c *Container) error {
			for it, err := range c.Query(ctx, `SELECT VALUE COUNT(1) FROM c`) {
				if err != nil || string(it.Body) != "1" {
					return errors.Join(err, errors.New("COUNT counts the expired item: "+string(it.Body)))
				}
			}
			return nil
		},
	}
	for name, see := range observe {
		t.Run(name, func(t *testing.T) {
			clk := newFakeClock(t0)
			dir := filepath.Join(t.TempDir(), "db")
			db := openTest(t, dir, clk, func(o *Options) { o.CompactionInterval = -1 })
			c := mustCreateContainer(t, db, ContainerProperties{ID: "c", DefaultTTL: TTL(-1)})
			for _, doc := range []string{`{"id":"x","ttl":5}`, `{"id":"keep"}`} {
				if _, err := c.Create(ctx, []byte(doc)); err != nil {
					t.Fatal(err)
				}
			}
			clk.Advance(3600) // x expired at t0+5; nothing has been written since
			if err := see(c); err != nil {
				t.Fatal(err)
			}
			// The crash: the directory as a kill leaves it, at once.
			crashed := filepath.Join(t.TempDir(), "crashed")
			db.sealMu.Lock()
			err := mdlCopyDir(dir, crashed)
			db.sealMu.Unlock()
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			clk.Set(t0 + 1) // the wall clock found behind after the restart
			db = openTest(t, crashed, clk)
			defer db.Close()
			c, err = db.Container("c")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Read(ctx, "x"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("after the crash, item x, seen expired, reads back: %v", err)
			}
			if got := db.clock.highest(); got < t0+5 {
				t.Fatalf("after the crash the engine's now is %d, before x's expiry %d that an answer relied on", got, t0+5)
			}
		})
	}
}

func wantNotFound(err error) error {
	if !errors.Is(err, ErrNotFound) {
		return errors.Join(err, errors.New("want ErrNotFound"))
	}
	return nil
}
