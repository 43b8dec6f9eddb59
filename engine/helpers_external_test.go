package engine_test

// The helpers of helpers_test.go, for the black-box tests.

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/internal/testutil"
)

// fakeClock is a wall clock that tests move by hand.
type fakeClock = testutil.Clock

var newFakeClock = testutil.NewClock

const t0 = 1_700_000_000

func openTest(t testing.TB, dir string, clk *fakeClock, mod ...func(*engine.Options)) *engine.DB {
	t.Helper()
	o := &engine.Options{Clock: clk.Now}
	for _, f := range mod {
		f(o)
	}
	db, err := engine.Open(dir, o)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return db
}

func mustCreateContainer(t testing.TB, db *engine.DB, props engine.ContainerProperties) *engine.Container {
	t.Helper()
	c, err := db.CreateContainer(context.Background(), props)
	if err != nil {
		t.Fatalf("CreateContainer(%+v): %v", props, err)
	}
	return c
}

// bodyField decodes an item's body and returns one property.
func bodyField(t testing.TB, it engine.Item, name string) any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(it.Body, &m); err != nil {
		t.Fatalf("item %q body %s: %v", it.ID, it.Body, err)
	}
	return m[name]
}

// waitIndexed waits until c's index has caught up with every write.
func waitIndexed(t testing.TB, c *engine.Container) {
	t.Helper()
	if _, err := c.Explain("SELECT * FROM c"); err != nil && !errors.Is(err, engine.ErrNotFound) {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !engine.IndexBuilt(c) {
		if time.Now().After(deadline) {
			t.Fatalf("container %q: index not built after 20 s", c.ID())
		}
		time.Sleep(time.Millisecond)
	}
}

// replayOnFailure makes a failing randomized test end with the command that
// runs it again with the same random choices: env=seed and the test's name.
func replayOnFailure(t *testing.T, env string, seed uint64) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay: %s=%d go test -race -count=1 -run '^%s$' ./engine", env, seed, t.Name())
		}
	})
}
