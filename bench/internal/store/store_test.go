package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ebbdb/ebb/bench/internal/gen"
)

// TestConformance: every store keeps what it is given across a reopen, misses
// what it was never given, and stops returning an item at its expiry second;
// the stores without native TTL sweep it away.
func TestConformance(t *testing.T) {
	g := gen.New(1024)
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			o := Options{SweepInterval: 100 * time.Millisecond, CompactInterval: 200 * time.Millisecond}
			s, err := Open(name, dir, o)
			if err != nil {
				t.Fatal(err)
			}
			var batch []Item
			for i := range 20 {
				k := gen.Key("doc-", uint64(i))
				batch = append(batch, Item{Key: k, Value: g.Doc(k, 0, uint64(i))})
			}
			if err := s.Put(ctx, batch); err != nil {
				t.Fatalf("put batch: %v", err)
			}
			// Items that expire one second after the second of their write.
			var short []Item
			for i := 100; i < 105; i++ {
				k := gen.Key("doc-", uint64(i))
				short = append(short, Item{Key: k, Value: g.Doc(k, 1, uint64(i)), TTL: 1})
			}
			written := time.Now().Unix()
			if err := s.Put(ctx, short); err != nil {
				t.Fatalf("put short: %v", err)
			}
			one := Item{Key: "single", Value: g.Doc("single", 3600, 7), TTL: 3600}
			if err := s.Put(ctx, []Item{one}); err != nil {
				t.Fatalf("put single: %v", err)
			}
			v, ok, err := s.Get(ctx, batch[3].Key)
			if err != nil || !ok {
				t.Fatalf("get: %v %v", ok, err)
			}
			if name != "ebb" && !bytes.Equal(v, batch[3].Value) {
				t.Fatalf("get returned %q", v)
			}
			if name == "ebb" && !bytes.Contains(v, []byte(`"id":"doc-000000000003"`)) {
				t.Fatalf("ebb get returned %q", v)
			}
			// GetInto answers as Get, in the storage it is given.
			dst := make([]byte, 0, 64<<10)
			for _, it := range batch[:5] {
				want, _, _ := s.Get(ctx, it.Key)
				got, ok, err := s.GetInto(ctx, it.Key, dst)
				if err != nil || !ok || !bytes.Equal(got, want) {
					t.Fatalf("GetInto(%s) = %q, %v, %v; Get = %q", it.Key, got, ok, err, want)
				}
				if &got[:1][0] != &dst[:1][0] {
					t.Fatalf("GetInto(%s) did not copy into the 64 KiB buffer it was given", it.Key)
				}
			}
			if _, ok, err := s.GetInto(ctx, "doc-999999999999", dst); ok || err != nil {
				t.Fatalf("GetInto of a missing key: %v %v", ok, err)
			}
			if _, ok, err := s.Get(ctx, "doc-999999999999"); ok || err != nil {
				t.Fatalf("get of a missing key: %v %v", ok, err)
			}
			if time.Now().Unix() == written {
				if _, ok, _ := s.Get(ctx, short[0].Key); !ok {
					t.Fatalf("short item missing before its expiry")
				}
			}
			for time.Now().Unix() < written+2 {
				time.Sleep(50 * time.Millisecond)
			}
			for _, it := range short {
				if _, ok, err := s.Get(ctx, it.Key); ok || err != nil {
					t.Fatalf("expired item %s: found %v, err %v", it.Key, ok, err)
				}
			}
			if r, ok := s.(Reporter); ok && !specs[name].NativeTTL {
				deadline := time.Now().Add(5 * time.Second)
				for r.Report()["swept_keys"] < float64(len(short)) {
					if time.Now().After(deadline) {
						t.Fatalf("sweep did not delete the expired items: %v", r.Report())
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			s, err = Open(name, dir, o)
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			defer s.Close()
			for _, it := range append(batch, one) {
				if _, ok, err := s.Get(ctx, it.Key); !ok || err != nil {
					t.Fatalf("after reopen, %s: found %v, err %v", it.Key, ok, err)
				}
			}
			if _, ok, _ := s.Get(ctx, short[0].Key); ok {
				t.Fatalf("expired item back after reopen")
			}
			if r, ok := s.(Reporter); ok {
				t.Logf("%s report: %v", name, r.Report())
			}
		})
	}
}

// TestConcurrentPuts: 16 writers of single items at once (bbolt's Batch path).
func TestConcurrentPuts(t *testing.T) {
	g := gen.New(1024)
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, err := Open(name, t.TempDir(), Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			errs := make(chan error, 16)
			for w := range 16 {
				go func() {
					for i := range 20 {
						k := gen.Key(fmt.Sprintf("w%02d-", w), uint64(i))
						if err := s.Put(ctx, []Item{{Key: k, Value: g.Doc(k, 60, uint64(i)), TTL: 60}}); err != nil {
							errs <- err
							return
						}
					}
					errs <- nil
				}()
			}
			for range 16 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			for w := range 16 {
				k := gen.Key(fmt.Sprintf("w%02d-", w), 19)
				if _, ok, err := s.Get(ctx, k); !ok || err != nil {
					t.Fatalf("%s: %v %v", k, ok, err)
				}
			}
		})
	}
}

// TestBoltCompactShrinksFile: once the sweep has freed most of a bbolt file,
// the compaction rewrites it smaller, and what is live survives it.
func TestBoltCompactShrinksFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	g := gen.New(1024)
	s, err := Open("bbolt", dir, Options{NoSync: true, SweepInterval: time.Hour, CompactInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.(*boltStore)
	var items []Item
	for i := range 12000 {
		k := gen.Key("doc-", uint64(i))
		ttl := int32(1)
		if i%100 == 0 {
			ttl = 3600
		}
		items = append(items, Item{Key: k, Value: g.Doc(k, ttl, uint64(i)), TTL: ttl})
		if len(items) == 1000 {
			if err := s.Put(ctx, items); err != nil {
				t.Fatal(err)
			}
			items = nil
		}
	}
	before := time.Now().Unix()
	for time.Now().Unix() < before+2 {
		time.Sleep(50 * time.Millisecond)
	}
	n, err := b.sweep(time.Now().Unix())
	if err != nil || n < 11800 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	size := func() int64 {
		st, err := os.Stat(b.path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	big := size()
	if err := b.compact(); err != nil {
		t.Fatal(err)
	}
	small := size()
	t.Logf("file %d -> %d bytes", big, small)
	if small*3 > big {
		t.Fatalf("compaction left %d of %d bytes", small, big)
	}
	if _, ok, err := s.Get(ctx, gen.Key("doc-", 200)); !ok || err != nil {
		t.Fatalf("live item lost by compaction: %v %v", ok, err)
	}
	if err := s.Put(ctx, []Item{{Key: "after", Value: g.Doc("after", 0, 1)}}); err != nil {
		t.Fatalf("put after compaction: %v", err)
	}
}
