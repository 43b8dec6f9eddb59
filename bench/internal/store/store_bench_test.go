package store

// Benchmarks of each adapter's hot paths, for profiling a comparison the
// harness reports, e.g.:
//
//	go test ./internal/store -run '^$' -bench 'PutBatch/ebb' -cpuprofile cpu.out
//	go tool pprof -top internal/store.test cpu.out

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ebbdb/ebb/bench/internal/gen"
)

func benchStores(b *testing.B, f func(b *testing.B, name string)) {
	for _, name := range Names() {
		b.Run(name, func(b *testing.B) { f(b, name) })
	}
}

func fillN(b *testing.B, s Store, g *gen.Generator, from, n, batch int) {
	b.Helper()
	ctx := context.Background()
	items := make([]Item, 0, batch)
	for i := from; i < from+n; i += batch {
		items = items[:0]
		for j := i; j < min(i+batch, from+n); j++ {
			k := gen.Key("doc-", uint64(j))
			items = append(items, Item{Key: k, Value: g.Doc(k, 3600, uint64(j)), TTL: 3600})
		}
		if err := s.Put(ctx, items); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPutBatch: batches of 100 1-KiB documents, fsynced, one writer;
// one op is one item.
func BenchmarkPutBatch(b *testing.B) {
	g := gen.Shared(1024)
	benchStores(b, func(b *testing.B, name string) {
		s, err := Open(name, b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		b.SetBytes(1024)
		b.ResetTimer()
		fillN(b, s, g, 0, b.N, 100)
	})
}

// BenchmarkGet: random hits among 100k items after a reopen.
func BenchmarkGet(b *testing.B) {
	g := gen.Shared(1024)
	const n = 100000
	benchStores(b, func(b *testing.B, name string) {
		dir := b.TempDir()
		s, err := Open(name, dir, Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		fillN(b, s, g, 0, n, 1000)
		s.Close()
		if s, err = Open(name, dir, Options{}); err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(1, 2))
		b.ResetTimer()
		for b.Loop() {
			if _, ok, err := s.Get(ctx, gen.Key("doc-", rng.Uint64N(n))); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
}

// BenchmarkOpen: Open plus one read of a store holding 100k items.
func BenchmarkOpen(b *testing.B) {
	g := gen.Shared(1024)
	const n = 100000
	benchStores(b, func(b *testing.B, name string) {
		dir := b.TempDir()
		s, err := Open(name, dir, Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		fillN(b, s, g, 0, n, 1000)
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		b.ResetTimer()
		for b.Loop() {
			s, err := Open(name, dir, Options{})
			if err != nil {
				b.Fatal(err)
			}
			if _, ok, err := s.Get(ctx, gen.Key("doc-", n/2)); !ok || err != nil {
				b.Fatal(fmt.Sprint(ok, err))
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPutSingle: single 1-KiB documents, fsynced, one writer.
func BenchmarkPutSingle(b *testing.B) {
	g := gen.Shared(1024)
	benchStores(b, func(b *testing.B, name string) {
		s, err := Open(name, b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		b.SetBytes(1024)
		b.ResetTimer()
		fillN(b, s, g, 0, b.N, 1)
	})
}
