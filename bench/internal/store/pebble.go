package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Pebble at its defaults but for durability (commits with pebble.Sync, or
// pebble.NoSync with Options.NoSync). No native TTL: the emulation of
// sweep.go, with data keys under "d" and expiry-index keys under "x". The
// compaction after sweeps is a manual Compact of the key ranges the sweeps
// deleted since the last one, so their tombstones and the values they hide
// leave the disk.

func init() {
	register(Spec{
		Name:      "pebble",
		NativeTTL: false,
		How:       "no TTL: expiry stamp in the value + expiry-index keys; swept every sweep interval; manual Compact of the swept ranges every compact interval",
		Open:      openPebble,
	})
}

var (
	pebbleData  = []byte("d")
	pebbleIndex = []byte("x")
)

type pebbleStore struct {
	db *pebble.DB
	wo *pebble.WriteOptions
	sw *sweeper

	// The smallest and largest key deleted since the last compaction, per
	// prefix; owned by the sweeper.
	ranges map[byte][2][]byte
}

func openPebble(dir string, o Options) (Store, error) {
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		return nil, err
	}
	s := &pebbleStore{db: db, wo: pebble.Sync}
	if o.NoSync {
		s.wo = pebble.NoSync
	}
	s.sw = &sweeper{interval: o.SweepInterval, compactEvery: o.CompactInterval, sweep: s.sweep, compact: s.compact}
	s.sw.start()
	return s, nil
}

// quietLogger drops Pebble's informational messages (WAL replay notes);
// errors go to stderr and fatal ones still stop the program.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}

func dataKey(key string) []byte {
	return append(append(make([]byte, 0, 1+len(key)), pebbleData...), key...)
}

func (s *pebbleStore) Put(ctx context.Context, items []Item) error {
	now := time.Now()
	b := s.db.NewBatch()
	defer b.Close()
	for _, it := range items {
		exp := expiry(now, it.TTL)
		if err := b.Set(dataKey(it.Key), stamp(exp, it.Value), nil); err != nil {
			return err
		}
		if exp > 0 {
			if err := b.Set(indexKey(pebbleIndex, exp, it.Key), nil, nil); err != nil {
				return err
			}
		}
	}
	return b.Commit(s.wo)
}

func (s *pebbleStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	return s.GetInto(ctx, key, nil)
}

// GetInto copies the value, valid until the closer is closed, into dst.
func (s *pebbleStore) GetInto(ctx context.Context, key string, dst []byte) ([]byte, bool, error) {
	raw, closer, err := s.db.Get(dataKey(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer closer.Close()
	_, v, ok := unstamp(raw, time.Now().Unix())
	if !ok {
		return nil, false, nil
	}
	return append(dst[:0], v...), true, nil
}

// sweep deletes the items expired at now, sweepChunk per batch.
func (s *pebbleStore) sweep(now int64) (int, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: pebbleIndex, UpperBound: indexKey(pebbleIndex, now+1, "")})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	total := 0
	b := s.db.NewBatch()
	flush := func() error {
		if b.Empty() {
			return nil
		}
		err := b.Commit(s.wo)
		b.Close()
		b = s.db.NewBatch()
		return err
	}
	defer func() { b.Close() }()
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		exp, key := k[1:9], string(k[9:])
		dk := dataKey(key)
		// The item may have been rewritten with another expiry since.
		if raw, closer, err := s.db.Get(dk); err == nil {
			if bytes.Equal(raw[:8], exp) {
				b.Delete(dk, nil)
				s.widen(dk)
			}
			closer.Close()
		} else if !errors.Is(err, pebble.ErrNotFound) {
			return total, err
		}
		ik := append([]byte(nil), k...)
		b.Delete(ik, nil)
		s.widen(ik)
		total++
		if total%sweepChunk == 0 {
			if err := flush(); err != nil {
				return total, err
			}
		}
	}
	return total, flush()
}

// widen notes a deleted key for the next compaction.
func (s *pebbleStore) widen(k []byte) {
	if s.ranges == nil {
		s.ranges = map[byte][2][]byte{}
	}
	r, ok := s.ranges[k[0]]
	if !ok || bytes.Compare(k, r[0]) < 0 {
		r[0] = append([]byte(nil), k...)
	}
	if !ok || bytes.Compare(k, r[1]) > 0 {
		r[1] = append([]byte(nil), k...)
	}
	s.ranges[k[0]] = r
}

// compact compacts the ranges the sweeps deleted since the last call.
func (s *pebbleStore) compact() error {
	var errs []error
	for p, r := range s.ranges {
		hi := append(r[1], 0) // Compact's end is exclusive
		errs = append(errs, s.db.Compact(context.Background(), r[0], hi, false))
		delete(s.ranges, p)
	}
	return errors.Join(errs...)
}

func (s *pebbleStore) Report() map[string]float64 { return s.sw.report() }

func (s *pebbleStore) Close() error {
	s.sw.halt()
	return s.db.Close()
}
