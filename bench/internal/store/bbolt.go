package store

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bbolt at its defaults but for durability (NoSync follows Options.NoSync).
// No native TTL: the emulation of sweep.go, with a bucket "d" for the data
// and a bucket "x" for the expiry index. Writes use Update; when writers
// overlap they use DB.Batch, bbolt's own group commit. bbolt reuses freed
// pages but never shrinks its file; the compaction after sweeps rewrites the
// file with bbolt.Compact once more than half of it is free pages (and it is
// at least 16 MiB), blocking writers (not readers) while it copies.

func init() {
	register(Spec{
		Name:      "bbolt",
		NativeTTL: false,
		How:       "no TTL: expiry stamp in the value + expiry-index bucket; swept every sweep interval; file rewritten (bbolt.Compact, writers blocked) when > 50% free",
		Open:      openBolt,
	})
}

var (
	boltData  = []byte("d")
	boltIndex = []byte("x")
)

const boltCompactMin = 16 << 20

type boltStore struct {
	path string
	opts *bolt.Options

	wmu      sync.RWMutex // writers hold it shared; compaction exclusively
	mu       sync.RWMutex // guards db (swapped by compaction)
	db       *bolt.DB
	inflight atomic.Int32

	sw *sweeper
}

func openBolt(dir string, o Options) (Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &boltStore{
		path: filepath.Join(dir, "data.db"),
		opts: &bolt.Options{NoSync: o.NoSync, Timeout: 5 * time.Second},
	}
	db, err := s.openDB(s.path)
	if err != nil {
		return nil, err
	}
	s.db = db
	s.sw = &sweeper{interval: o.SweepInterval, compactEvery: o.CompactInterval, sweep: s.sweep, compact: s.compact}
	s.sw.start()
	return s, nil
}

func (s *boltStore) openDB(path string) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, s.opts)
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(boltData); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists(boltIndex)
		return err
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func (s *boltStore) Put(ctx context.Context, items []Item) error {
	s.wmu.RLock()
	defer s.wmu.RUnlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	now := time.Now()
	type kv struct{ k, v, x []byte }
	rows := make([]kv, len(items))
	for i, it := range items {
		exp := expiry(now, it.TTL)
		rows[i] = kv{k: []byte(it.Key), v: stamp(exp, it.Value)}
		if exp > 0 {
			rows[i].x = indexKey(nil, exp, it.Key)
		}
	}
	fn := func(tx *bolt.Tx) error {
		d, x := tx.Bucket(boltData), tx.Bucket(boltIndex)
		for _, r := range rows {
			if err := d.Put(r.k, r.v); err != nil {
				return err
			}
			if r.x != nil {
				if err := x.Put(r.x, nil); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if s.inflight.Add(1) > 1 {
		defer s.inflight.Add(-1)
		return s.db.Batch(fn)
	}
	defer s.inflight.Add(-1)
	return s.db.Update(fn)
}

func (s *boltStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	return s.GetInto(ctx, key, nil)
}

// GetInto copies the value out of the read transaction into dst.
func (s *boltStore) GetInto(ctx context.Context, key string, dst []byte) ([]byte, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	now := time.Now().Unix()
	var out []byte
	var found bool
	err := s.db.View(func(tx *bolt.Tx) error {
		raw := tx.Bucket(boltData).Get([]byte(key))
		if raw == nil {
			return nil
		}
		if _, v, ok := unstamp(raw, now); ok {
			out, found = append(dst[:0], v...), true
		}
		return nil
	})
	return out, found, err
}

// sweep deletes the items expired at now, sweepChunk per transaction.
func (s *boltStore) sweep(now int64) (int, error) {
	total := 0
	for {
		n, err := s.sweepChunk(now)
		total += n
		if err != nil || n < sweepChunk {
			return total, err
		}
	}
}

func (s *boltStore) sweepChunk(now int64) (int, error) {
	s.wmu.RLock()
	defer s.wmu.RUnlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	limit := indexKey(nil, now+1, "")
	n := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		d, x := tx.Bucket(boltData), tx.Bucket(boltIndex)
		c := x.Cursor()
		for k, _ := c.First(); k != nil && string(k) < string(limit) && n < sweepChunk; k, _ = c.First() {
			exp, key := k[:8], k[8:]
			// The item may have been rewritten with another expiry since.
			if raw := d.Get(key); raw != nil && string(raw[:8]) == string(exp) {
				if err := d.Delete(key); err != nil {
					return err
				}
			}
			if err := c.Delete(); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// compact rewrites the file when more than half of it is free pages.
func (s *boltStore) compact() error {
	s.mu.RLock()
	st := s.db.Stats()
	info, err := os.Stat(s.path)
	s.mu.RUnlock()
	if err != nil {
		return err
	}
	free := int64(st.FreePageN+st.PendingPageN) * int64(os.Getpagesize())
	if info.Size() < boltCompactMin || 2*free < info.Size() {
		return nil
	}
	s.wmu.Lock() // no writes while copying; reads go on from the old file
	defer s.wmu.Unlock()
	tmp := s.path + ".compact"
	os.Remove(tmp)
	dst, err := bolt.Open(tmp, 0o600, s.opts)
	if err != nil {
		return err
	}
	if err := bolt.Compact(dst, s.db, 64<<20); err != nil {
		dst.Close()
		os.Remove(tmp)
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.db.Close(); err != nil {
		dst.Close()
		return err
	}
	if err := os.Rename(tmp, s.path); err != nil {
		dst.Close()
		return err
	}
	if d, err := os.Open(filepath.Dir(s.path)); err == nil {
		d.Sync()
		d.Close()
	}
	s.db = dst
	return nil
}

func (s *boltStore) Report() map[string]float64 { return s.sw.report() }

func (s *boltStore) Close() error {
	s.sw.halt()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return errClosed
	}
	err := s.db.Close()
	s.db = nil
	return err
}
