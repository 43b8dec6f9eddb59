package engine_test

import (
	"testing"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/internal/dbfile"
	"github.com/ebbdb/ebb/engine/internal/docfmt"
)

// TestSharedConstants checks that the engine's exported limits and modes
// are the values its internal packages write and check on their behalf.
func TestSharedConstants(t *testing.T) {
	if engine.MaxIDLength != docfmt.MaxIDLength {
		t.Errorf("MaxIDLength %d, docfmt.MaxIDLength %d", engine.MaxIDLength, docfmt.MaxIDLength)
	}
	for m, want := range map[engine.IndexingMode]uint8{
		engine.IndexingConsistent: dbfile.IndexingConsistent,
		engine.IndexingLazy:       dbfile.IndexingLazy,
		engine.IndexingNone:       dbfile.IndexingNone,
	} {
		if uint8(m) != want {
			t.Errorf("IndexingMode %s is %d, the MANIFEST's value is %d", m, m, want)
		}
	}
	if engine.ErrNoDatabase != dbfile.ErrNoDatabase {
		t.Error("engine.ErrNoDatabase is not the error the offline tools return")
	}
}
