package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ebbdb/ebb/segment"
)

// TestDefaultCodecBySource checks which codec each new segment file gets:
// by default s2 for files sealed from the memtable (fast point reads) and
// zstd for files compaction rewrites (smaller); an explicit codec is used
// for both. Every item stays readable across the codecs and a reopen.
func TestDefaultCodecBySource(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		opt           Compression
		sealed, compd segment.Compression
	}{
		{CompressionDefault, segment.CompressionS2, segment.CompressionZstd},
		{CompressionZstd, segment.CompressionZstd, segment.CompressionZstd},
		{CompressionS2, segment.CompressionS2, segment.CompressionS2},
		{CompressionNone, segment.CompressionNone, segment.CompressionNone},
	} {
		t.Run(tc.sealed.String()+"-"+tc.compd.String(), func(t *testing.T) {
			dir := t.TempDir()
			clk := newFakeClock(1_700_000_000)
			mod := func(o *Options) { o.CompactionInterval = -1; o.NoSync = true; o.Compression = tc.opt }
			db := openTest(t, dir, clk, mod)
			defer func() { db.Close() }()
			c, err := db.CreateContainer(ctx, ContainerProperties{ID: "c"})
			if err != nil {
				t.Fatal(err)
			}
			const n = 300
			doc := func(i, v int) []byte {
				return fmt.Appendf(nil, `{"id":"item%03d","v":%d,"text":"some words that repeat, some words that repeat %d"}`, i, v, i)
			}
			for i := range n {
				if _, err := c.Upsert(ctx, doc(i, 0)); err != nil {
					t.Fatal(err)
				}
			}
			forceSeal(t, db)
			codecs := func() map[segment.Compression]int {
				c.mu.RLock()
				defer c.mu.RUnlock()
				m := map[segment.Compression]int{}
				for _, f := range c.files {
					m[f.r.Stats().Compression]++
				}
				return m
			}
			if got := codecs(); len(got) != 1 || got[tc.sealed] == 0 {
				t.Fatalf("sealed files' codecs %v, want only %s", got, tc.sealed)
			}
			// Supersede half the items, so that compaction rewrites the
			// first file with the other half.
			for i := 0; i < n; i += 2 {
				if _, err := c.Upsert(ctx, doc(i, 1)); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Compact(ctx); err != nil {
				t.Fatal(err)
			}
			if got := codecs(); got[tc.compd] == 0 {
				t.Fatalf("after compaction codecs %v, want a %s file", got, tc.compd)
			}
			db.Close()
			db = openTest(t, dir, clk, mod)
			c, _ = db.Container("c")
			for i := range n {
				it, err := c.Read(ctx, fmt.Sprintf("item%03d", i))
				if err != nil {
					t.Fatal(err)
				}
				if want := fmt.Sprintf(`"v":%d`, 1-i%2); !strings.Contains(string(it.Body), want) {
					t.Fatalf("item %d: %s, want %s", i, it.Body, want)
				}
			}
		})
	}
}
