package engine

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a wall clock that tests move by hand.
type fakeClock struct{ sec atomic.Int64 }

func newFakeClock(sec int64) *fakeClock {
	c := &fakeClock{}
	c.sec.Store(sec)
	return c
}

func (c *fakeClock) Now() time.Time    { return time.Unix(c.sec.Load(), 0) }
func (c *fakeClock) Set(sec int64)     { c.sec.Store(sec) }
func (c *fakeClock) Advance(d int64)   { c.sec.Add(d) }
func (c *fakeClock) Unix() (sec int64) { return c.sec.Load() }

const t0 = 1_700_000_000

func openTest(t testing.TB, dir string, clk *fakeClock, mod ...func(*Options)) *DB {
	t.Helper()
	o := &Options{Clock: clk.Now}
	for _, f := range mod {
		f(o)
	}
	db, err := Open(dir, o)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return db
}

func mustCreateContainer(t testing.TB, db *DB, props ContainerProperties) *Container {
	t.Helper()
	c, err := db.CreateContainer(context.Background(), props)
	if err != nil {
		t.Fatalf("CreateContainer(%+v): %v", props, err)
	}
	return c
}

// bodyField decodes an item's body and returns one property.
func bodyField(t testing.TB, it Item, name string) any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(it.Body, &m); err != nil {
		t.Fatalf("item %q body %s: %v", it.ID, it.Body, err)
	}
	return m[name]
}
