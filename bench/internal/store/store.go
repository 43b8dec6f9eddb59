// Package store puts every store the benchmark compares behind one
// interface, with one adapter file per store. Every adapter gives the same
// durability (an fsync before a commit returns, unless Options.NoSync turns
// it off for all) and the same TTL semantics: an item written with ttl n at
// unix second s expires at second s+n, and from then on Get misses it.
//
// ebb, Badger and BuntDB expire items natively. bbolt and Pebble have no
// TTL: their adapters put an expiry stamp in front of the value, filter it
// on read, index keys by expiry, and run a periodic sweep that deletes the
// expired keys and then compacts (see sweep.go).
package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
)

// Item is one write: a key, its value (a JSON document whose "id" is Key
// and whose "ttl" property is TTL, for ebb's sake; other stores store it
// opaque), and its time to live in seconds (0: never expires).
type Item struct {
	Key   string
	Value []byte
	TTL   int32
}

// Store is an open store. It is safe for concurrent use.
type Store interface {
	// Put commits items atomically with one durable commit (one fsync
	// unless NoSync), overwriting existing keys.
	Put(ctx context.Context, items []Item) error
	// Get returns a copy of the value of key, or found == false when it
	// does not exist or has expired.
	Get(ctx context.Context, key string) (value []byte, found bool, err error)
	// GetInto is Get that copies the value into dst's storage (from
	// dst[:0], grown when too small) instead of a new allocation, so that a
	// reader passing back the value it got allocates nothing per read for
	// values: each store reads as its own API best allows, and the garbage
	// collector's share of a read's latency is not the harness's.
	GetInto(ctx context.Context, key string, dst []byte) (value []byte, found bool, err error)
	// Close releases the store; its directory stays for a later Open.
	Close() error
}

// Reporter is implemented by stores with figures of their own to report
// (ebb's Metrics; the sweeps of the TTL emulation).
type Reporter interface {
	Report() map[string]float64
}

// Compacter is implemented by stores with an explicit, synchronous
// compaction that an application may call (ebb's Container.Compact).
type Compacter interface {
	Compact(ctx context.Context) error
}

// Options configure every store alike.
type Options struct {
	// NoSync lets commits return before their fsync, for every store.
	NoSync bool
	// SweepInterval is how often stores without native TTL delete expired
	// keys. Default 1 s (BuntDB's own sweep runs every second; ebb's
	// compactor too).
	SweepInterval time.Duration
	// CompactInterval is the least time between two compactions that
	// follow sweeps (Pebble: a manual compaction of the swept range; bbolt:
	// a rewrite of the file once mostly free) and between two value-log GC
	// runs of Badger. Default 10 s.
	CompactInterval time.Duration
}

func (o Options) withDefaults() Options {
	if o.SweepInterval <= 0 {
		o.SweepInterval = time.Second
	}
	if o.CompactInterval <= 0 {
		o.CompactInterval = 10 * time.Second
	}
	return o
}

// Spec describes one kind of store.
type Spec struct {
	Name string
	// NativeTTL says whether the store expires items itself.
	NativeTTL bool
	// How says in a line how TTL and space reclamation work in the adapter.
	How  string
	Open func(dir string, o Options) (Store, error)
}

var specs = map[string]Spec{}

func register(s Spec) { specs[s.Name] = s }

// Names lists the registered stores, ebb first, then by name.
func Names() []string {
	var out []string
	for n := range specs {
		if n != "ebb" {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return append([]string{"ebb"}, out...)
}

// Lookup returns the spec of a store by name.
func Lookup(name string) (Spec, error) {
	s, ok := specs[name]
	if !ok {
		return Spec{}, fmt.Errorf("unknown store %q (have %v)", name, Names())
	}
	return s, nil
}

// Open opens the store name in dir, creating it if needed.
func Open(name, dir string, o Options) (Store, error) {
	s, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	st, err := s.Open(dir, o.withDefaults())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	return st, nil
}

// expiry is the unix second at which an item written now with ttl expires,
// or 0 for never: the same rule as ebb's (_ts + ttl, _ts in whole seconds).
func expiry(now time.Time, ttl int32) int64 {
	if ttl <= 0 {
		return 0
	}
	return now.Unix() + int64(ttl)
}

var errClosed = errors.New("store is closed")
