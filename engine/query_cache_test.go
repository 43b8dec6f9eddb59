package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ebbdb/ebb/engine/query"
)

// TestParseCache runs one query text with different parameters, and a text
// that does not parse: the good text is parsed once and each run binds its
// own parameters; the bad one fails each time and is not kept.
func TestParseCache(t *testing.T) {
	db := openTest(t, t.TempDir(), newFakeClock(t0))
	defer db.Close()
	c, err := db.CreateContainer(context.Background(), ContainerProperties{ID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 5 {
		if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"d%d","n":%d}`, i, i)); err != nil {
			t.Fatal(err)
		}
	}
	const text = "SELECT * FROM c WHERE c.n = @n"
	for i := range 5 {
		var ids []string
		for it, err := range c.Query(ctx, text, Param{Name: "@n", Value: i}) {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, it.ID)
		}
		if want := fmt.Sprintf("d%d", i); len(ids) != 1 || ids[0] != want {
			t.Fatalf("run %d: %q, want [%s]", i, ids, want)
		}
	}
	if db.parsed.Len() != 1 || !db.parsed.Contains(text) {
		t.Fatalf("parse cache holds %d texts after 5 runs of one", db.parsed.Len())
	}
	for range 2 {
		for _, err := range c.Query(ctx, "SELECT * FROM c WHERE") {
			if !errors.Is(err, query.ErrInvalidQuery) {
				t.Fatalf("bad text: %v, want ErrInvalidQuery", err)
			}
		}
	}
	if db.parsed.Len() != 1 {
		t.Fatal("a text that does not parse was kept")
	}
}
