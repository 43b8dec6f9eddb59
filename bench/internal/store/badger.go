package store

import (
	"context"
	"errors"
	"sync"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// Badger v4 at its defaults but for durability (SyncWrites follows
// Options.NoSync) and logging (off). Native TTL: Entry.ExpiresAt, checked on
// read; space comes back through LSM compactions, and through value-log GC,
// which the adapter runs every CompactInterval as Badger's documentation
// recommends (RunValueLogGC(0.5) until it has nothing to do). Values of
// 1 KiB are below the default ValueThreshold (1 MiB), so they live in the
// LSM tree itself.

func init() {
	register(Spec{
		Name:      "badger",
		NativeTTL: true,
		How:       "native TTL (ExpiresAt, checked on read); space back through LSM compaction, value-log GC run every compact interval",
		Open:      openBadger,
	})
}

type badgerStore struct {
	db   *badger.DB
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

func openBadger(dir string, o Options) (Store, error) {
	opts := badger.DefaultOptions(dir).WithSyncWrites(!o.NoSync).WithLogger(nil)
	db, err := badger.Open(opts)
	if err != nil {
		return nil, err
	}
	s := &badgerStore{db: db, stop: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(o.CompactInterval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
			for db.RunValueLogGC(0.5) == nil {
				select {
				case <-s.stop:
					return
				default:
				}
			}
		}
	}()
	return s, nil
}

func (s *badgerStore) Put(ctx context.Context, items []Item) error {
	now := time.Now()
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	for _, it := range items {
		e := badger.NewEntry([]byte(it.Key), it.Value)
		if exp := expiry(now, it.TTL); exp > 0 {
			e.ExpiresAt = uint64(exp)
		}
		if err := txn.SetEntry(e); errors.Is(err, badger.ErrTxnTooBig) {
			// Larger than one transaction may be: commit what fits.
			if err := txn.Commit(); err != nil {
				return err
			}
			txn = s.db.NewTransaction(true)
			if err := txn.SetEntry(e); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
	}
	return txn.Commit()
}

func (s *badgerStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	return s.GetInto(ctx, key, nil)
}

// GetInto copies the value into dst with Item.ValueCopy, which reuses dst's
// storage when it is large enough.
func (s *badgerStore) GetInto(ctx context.Context, key string, dst []byte) ([]byte, bool, error) {
	var v []byte
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get([]byte(key))
		if err != nil {
			return err
		}
		v, err = it.ValueCopy(dst[:0])
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

func (s *badgerStore) Close() error {
	s.once.Do(func() { close(s.stop) })
	s.wg.Wait()
	return s.db.Close()
}
