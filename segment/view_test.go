package segment

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestView reads every record of a file through View, without a cache,
// with one cold and with one warm: fn sees each record as Get returns it,
// View reports whether its block was cached, and afterwards rec.Body is
// nil unless fn pointed it at a copy of its own. A handle past the last
// block fails without calling fn.
func TestView(t *testing.T) {
	recs := genRecords(rand.New(rand.NewPCG(21, 22)), 300, 0)
	const block = 2048
	path, hs, _ := writeSegment(t, t.TempDir(), recs, WriterOptions{BlockSize: block, Compression: CompressionS2})
	for _, tc := range []struct {
		name  string
		cache *Cache
		warm  bool
	}{{"no cache", nil, false}, {"cold", NewCache(64<<20, block), false}, {"warm", NewCache(64<<20, block), true}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cache != nil {
				defer tc.cache.Close()
			}
			r, err := Open(path, ReaderOptions{Cache: tc.cache, FileNum: 3})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if tc.warm {
				for _, h := range hs {
					if err := r.Prefetch(h.Block); err != nil {
						t.Fatal(err)
					}
				}
			}
			for i, h := range hs {
				var rec Record
				keep := i%2 == 0
				var seen []byte
				cached, err := r.View(h, &rec, func(rec *Record) {
					seen = bytes.Clone(rec.Body)
					if keep {
						rec.Body = seen
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				if tc.warm && !cached || tc.cache == nil && cached {
					t.Fatalf("record %d: cached = %v", i, cached)
				}
				if !bytes.Equal(seen, recs[i].Body) || rec.ID != recs[i].ID || rec.Seq != recs[i].Seq {
					t.Fatalf("record %d: fn saw %s %q, want %s %q", i, rec.ID, seen, recs[i].ID, recs[i].Body)
				}
				if len(seen) == 0 {
					continue // nothing to alias
				}
				if keep && &rec.Body[0] != &seen[0] || !keep && rec.Body != nil {
					t.Fatalf("record %d (fn kept a copy: %v): Body left at %p", i, keep, rec.Body)
				}
			}
			called := false
			if _, err := r.View(Handle{Block: uint32(r.Stats().Blocks)}, new(Record), func(*Record) { called = true }); err == nil || called {
				t.Fatalf("View past the last block: err %v, fn called %v", err, called)
			}
		})
	}
}
