package store

import (
	"context"
	"errors"

	"github.com/ebbdb/ebb/engine"
)

// ebb: one container with DefaultTTL -1 (TTL on, each item's own "ttl"
// property decides), Upsert for single writes, ExecuteBatch for batches
// (one journal entry, one fsync shared by group commit), both with
// OmitBody (like the peers, a put returns no copy of the value), Read for
// gets.
// Everything else at its default: the background compactor every second.

func init() {
	register(Spec{
		Name:      "ebb",
		NativeTTL: true,
		How:       "native TTL (container DefaultTTL -1, item ttl); expired segment files dropped whole, mostly-dead ones rewritten, every 1 s",
		Open:      openEbb,
	})
}

const ebbContainer = "bench"

type ebbStore struct {
	db *engine.DB
	c  *engine.Container
}

func openEbb(dir string, o Options) (Store, error) {
	// The workloads batch up to 1000 writes, as they do for every peer;
	// ebb's batch limits (100 operations, 2 MiB by default, as in Cosmos
	// DB) are raised so that it commits the same batches.
	db, err := engine.Open(dir, &engine.Options{NoSync: o.NoSync, MaxBatchOperations: 10_000, MaxBatchBytes: 256 << 20})
	if err != nil {
		return nil, err
	}
	c, err := db.Container(ebbContainer)
	if errors.Is(err, engine.ErrNotFound) {
		// The peers are key-value stores with no secondary indexes, so ebb
		// indexes no path either. (IndexingNone would say the same, but
		// TTL needs indexing consistent or lazy, as in Cosmos DB.)
		c, err = db.CreateContainer(context.Background(), engine.ContainerProperties{
			ID: ebbContainer, DefaultTTL: engine.TTL(-1), ExcludedPaths: []string{"/*"},
		})
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return &ebbStore{db: db, c: c}, nil
}

func (s *ebbStore) Put(ctx context.Context, items []Item) error {
	if len(items) == 1 {
		_, err := s.c.Upsert(ctx, items[0].Value, engine.OmitBody())
		return err
	}
	b := s.c.NewBatch()
	for _, it := range items {
		b.Upsert(it.Value, engine.OmitBody())
	}
	_, err := s.c.ExecuteBatch(ctx, b)
	return err
}

func (s *ebbStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	return s.GetInto(ctx, key, nil)
}

// GetInto reads with Container.ReadInto, which renders the body into dst
// (a nil dst: a body of its own, as Read).
func (s *ebbStore) GetInto(ctx context.Context, key string, dst []byte) ([]byte, bool, error) {
	it, err := s.c.ReadInto(ctx, key, dst)
	if errors.Is(err, engine.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return it.Body, true, nil
}

func (s *ebbStore) Close() error { return s.db.Close() }

// Compact runs the container's complete physical-deletion pass now.
func (s *ebbStore) Compact(ctx context.Context) error { return s.c.Compact(ctx) }

// Metrics returns the container's own metrics.
func (s *ebbStore) Metrics() engine.Metrics { return s.c.Metrics() }

func (s *ebbStore) Report() map[string]float64 {
	m := s.c.Metrics()
	return map[string]float64{
		"items":               float64(m.Items),
		"live_bytes":          float64(m.LiveBytes),
		"live_disk_bytes":     float64(m.LiveDiskBytes),
		"disk_bytes":          float64(m.DiskBytes),
		"expired_pending":     float64(m.ExpiredPending),
		"space_amplification": m.SpaceAmplification,
		"segments":            float64(m.Segments),
		"journal_bytes":       float64(m.JournalBytes),
		"sealed_bytes":        float64(m.SealedBytes),
		"compacted_read":      float64(m.CompactedReadBytes),
		"compacted_written":   float64(m.CompactedWrittenBytes),
		"files_dropped":       float64(m.FilesDropped),
		"bytes_dropped":       float64(m.BytesDropped),
		"files_rewritten":     float64(m.FilesRewritten),
		"reclaim_lag_s":       m.ReclaimLag.Seconds(),
	}
}
