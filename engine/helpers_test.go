package engine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ebbdb/ebb/engine/internal/testutil"
)

// fakeClock is a wall clock that tests move by hand.
type fakeClock = testutil.Clock

var newFakeClock = testutil.NewClock

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
