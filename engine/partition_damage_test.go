package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/tool"
)

// TestItemKeyDamage: an item key that does not fit its container (a
// composite in a container without a partition key, a plain id or a
// malformed composite in one with a key), which no write can make, is
// damage: Verify reports it, in the journal and in a segment, and Open
// refuses the directory with ErrCorrupt rather than serve it.
func TestItemKeyDamage(t *testing.T) {
	for _, tc := range []struct {
		name, path, key string
	}{
		{"composite without a key path", "", "\x015a\x00x"},
		{"plain id with a key path", "/pk", "x"},
		{"malformed composite", "/pk", "\x019x"},
		{"composite without an id", "/pk", "\x015a\x00"},
	} {
		for _, sealed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/sealed=%v", tc.name, sealed), func(t *testing.T) {
				ctx := context.Background()
				dir := t.TempDir()
				clk := newFakeClock(t0)
				db := openTest(t, dir, clk)
				c := mustCreateContainer(t, db, ContainerProperties{ID: "c", PartitionKeyPath: tc.path})
				bad := op{kind: opUpsert, id: tc.key, body: []byte(`{"id":"x","pk":"a"}`)}
				if _, err := c.commit(ctx, []op{bad}, false); err != nil {
					t.Fatal(err)
				}
				verify := func(file string) {
					t.Helper()
					rep, err := tool.Verify(dir)
					if err != nil {
						t.Fatalf("Verify: %v", err)
					}
					for _, p := range rep.Problems {
						if strings.HasPrefix(p.File, file) && strings.Contains(p.What, "partition item key") {
							return
						}
					}
					t.Errorf("Verify did not report the item key in %s: %v", file, rep.Problems)
				}
				verify(dbfile.JournalDir)
				where := "journal"
				if sealed {
					if err := c.Compact(ctx); err != nil {
						t.Fatal(err)
					}
					verify(dbfile.SegmentDir)
					where = "a segment"
				}
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				if db, err := Open(dir, &Options{Clock: clk.Now}); !errors.Is(err, ErrCorrupt) {
					if err == nil {
						db.Close()
					}
					t.Fatalf("Open with the key in %s: %v, want ErrCorrupt", where, err)
				}
			})
		}
	}
}
