package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/tidwall/buntdb"
)

// BuntDB at its defaults but for durability: SyncPolicy Always (an fsync on
// every commit), Never with NoSync. Native TTL: SetOptions{Expires, TTL};
// expired items are invisible to Get and deleted by BuntDB's own sweep every
// second; the append-only file shrinks by BuntDB's auto-shrink (once it is
// 100% larger than after the last shrink and at least 32 MiB). Every item
// lives in memory.

func init() {
	register(Spec{
		Name:      "buntdb",
		NativeTTL: true,
		How:       "native TTL (SetOptions TTL); swept every 1 s by BuntDB; file shrinks by auto-shrink (100%, 32 MiB min); all items in memory",
		Open:      openBunt,
	})
}

type buntStore struct {
	db *buntdb.DB
}

func openBunt(dir string, o Options) (Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	db, err := buntdb.Open(filepath.Join(dir, "data.db"))
	if err != nil {
		return nil, err
	}
	var cfg buntdb.Config
	if err := db.ReadConfig(&cfg); err != nil {
		db.Close()
		return nil, err
	}
	cfg.SyncPolicy = buntdb.Always
	if o.NoSync {
		cfg.SyncPolicy = buntdb.Never
	}
	if err := db.SetConfig(cfg); err != nil {
		db.Close()
		return nil, err
	}
	return &buntStore{db: db}, nil
}

// Put writes items with one commit. An item expires at second s+ttl, s the
// second Put was called in; BuntDB counts SetOptions.TTL from its own clock
// reading inside each Set, so the TTL is measured from a clock reading
// taken just before that Set: measured from Put's start, it would leave the
// item alive for as long past its second as the wait for the lock and the
// Sets before it took (milliseconds, during which queries returned it).
func (s *buntStore) Put(ctx context.Context, items []Item) error {
	now := time.Now()
	return s.db.Update(func(tx *buntdb.Tx) error {
		for _, it := range items {
			var opts *buntdb.SetOptions
			if exp := expiry(now, it.TTL); exp > 0 {
				opts = &buntdb.SetOptions{Expires: true, TTL: time.Until(time.Unix(exp, 0))}
			}
			if _, _, err := tx.Set(it.Key, string(it.Value), opts); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *buntStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	return s.GetInto(ctx, key, nil)
}

// GetInto copies the stored string (which Tx.Get returns without a copy)
// into dst.
func (s *buntStore) GetInto(ctx context.Context, key string, dst []byte) ([]byte, bool, error) {
	var v string
	err := s.db.View(func(tx *buntdb.Tx) error {
		var err error
		v, err = tx.Get(key)
		return err
	})
	if errors.Is(err, buntdb.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return append(dst[:0], v...), true, nil
}

func (s *buntStore) Close() error { return s.db.Close() }
