package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/ebbdb/ebb/engine"
)

// ebb for queries: one container with DefaultTTL -1, consistent indexing
// and an indexing policy that keeps only the queried properties
// (IncludedPaths "/<prop>/?", ExcludedPaths "/*"), asked in Cosmos DB SQL
// through Container.QueryInto: fn neither keeps nor modifies a document
// (QueryStore's contract, which BuntDB's adapter relies on too), so the
// rows are rendered into one reused buffer, as reads go through ReadInto.
// Writes go as in the key-value adapter.

func init() {
	registerQuery(QuerySpec{
		Name: "ebb",
		How:  "Container.QueryInto (Cosmos DB SQL, rows rendered into a reused buffer) over consistent indexes of the queried paths only; expired items dropped from every candidate set and re-checked on read",
		Open: openEbbQuery,
	})
}

type ebbQueryStore struct {
	*ebbStore
	bufs sync.Pool // *[]byte: QueryInto's buffers, one per query running
}

func openEbbQuery(dir string, o Options, props []string) (QueryStore, error) {
	db, err := engine.Open(dir, &engine.Options{NoSync: o.NoSync, MaxBatchOperations: 10_000, MaxBatchBytes: 256 << 20})
	if err != nil {
		return nil, err
	}
	c, err := db.Container(ebbContainer)
	if errors.Is(err, engine.ErrNotFound) {
		included := make([]string, len(props))
		for i, p := range props {
			included[i] = "/" + p + "/?"
		}
		c, err = db.CreateContainer(context.Background(), engine.ContainerProperties{
			ID: ebbContainer, DefaultTTL: engine.TTL(-1), Indexing: engine.IndexingConsistent,
			IncludedPaths: included, ExcludedPaths: []string{"/*"},
		})
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("container %s: %w", ebbContainer, err)
	}
	return &ebbQueryStore{ebbStore: &ebbStore{db: db, c: c}}, nil
}

// sql returns q as ebb's SQL and its parameters.
func (s *ebbQueryStore) sql(q Query) (string, []engine.Param) {
	switch q.Kind {
	case QueryEqual:
		return "SELECT * FROM c WHERE c." + q.Prop + " = @v", []engine.Param{{Name: "@v", Value: q.Value}}
	case QueryRange:
		return "SELECT * FROM c WHERE c." + q.Prop + " >= @lo AND c." + q.Prop + " < @hi",
			[]engine.Param{{Name: "@lo", Value: q.Lo}, {Name: "@hi", Value: q.Hi}}
	case QueryTop:
		return fmt.Sprintf("SELECT TOP %d * FROM c ORDER BY c.%s DESC", q.K, q.Prop), nil
	case QueryCount:
		return "SELECT VALUE COUNT(1) FROM c WHERE c." + q.Prop + " = @v", []engine.Param{{Name: "@v", Value: q.Value}}
	}
	return "", nil
}

func (s *ebbQueryStore) Query(ctx context.Context, q Query, fn func(doc []byte) error) (int, error) {
	text, params := s.sql(q)
	if text == "" {
		return 0, fmt.Errorf("unknown query kind %d", q.Kind)
	}
	bp, _ := s.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer s.bufs.Put(bp)
	n := 0
	for it, err := range s.c.QueryInto(ctx, text, *bp, params...) {
		if err != nil {
			return n, fmt.Errorf("%s: %w", text, err)
		}
		if q.Kind == QueryCount {
			count, err := strconv.Atoi(string(it.Body))
			if err != nil {
				return 0, fmt.Errorf("%s: count %q: %w", text, it.Body, err)
			}
			return count, nil
		}
		if cap(it.Body) > cap(*bp) {
			*bp = it.Body // grown: the next query starts with it
		}
		if err := fn(it.Body); err != nil {
			return n, err
		}
		n++
	}
	if q.Kind == QueryCount {
		return 0, fmt.Errorf("%s: no count returned", text)
	}
	return n, nil
}

func (s *ebbQueryStore) Describe(q Query) string {
	text, _ := s.sql(q)
	return text
}

// Explain says which indexes Container.Query uses for q.
func (s *ebbQueryStore) Explain(q Query) (string, error) {
	text, params := s.sql(q)
	return s.c.Explain(text, params...)
}

// Backlog is the number of expired records compaction has not reclaimed.
func (s *ebbQueryStore) Backlog(ctx context.Context) (int64, error) {
	return s.c.Metrics().ExpiredPending, nil
}
