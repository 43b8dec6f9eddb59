package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ebbdb/ebb/engine"
)

// TestReadMissMessage checks the error of a read that misses: ErrNotFound,
// and a message naming the item and the container.
func TestReadMissMessage(t *testing.T) {
	db := openTest(t, t.TempDir(), newFakeClock(t0))
	defer db.Close()
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "orders"})
	_, err := c.Read(context.Background(), "nope")
	if want := `ebb: not found: item "nope" in container "orders"`; !errors.Is(err, engine.ErrNotFound) || err.Error() != want {
		t.Fatalf("Read of a missing item = %v, want %s", err, want)
	}
}
