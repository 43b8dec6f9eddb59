package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	"github.com/tidwall/buntdb"
)

// BuntDB for queries: the key-value adapter's database with one index per
// queried property, CreateIndex(prop, "*", IndexJSON(prop)), asked through
// its iterators: AscendEqual, AscendRange, Descend. Its iterators skip
// expired items themselves (Tx.scan checks every item's expiry before the
// callback, buntdb v1.3.2), so the adapter filters nothing; the background
// sweep deletes expired items every second under the write lock.
//
// The documents are collected under the read lock and passed to fn after
// it is released, without a copy (the strings BuntDB returns are
// immutable), so fn's work does not hold the lock.

func init() {
	registerQuery(QuerySpec{
		Name: "buntdb",
		How:  "IndexJSON index per queried property (in memory, every item); Ascend/Descend iterators skip expired items; swept every 1 s",
		Open: openBuntQuery,
	})
}

type buntQueryStore struct {
	*buntStore
}

func openBuntQuery(dir string, o Options, props []string) (QueryStore, error) {
	s, err := openBunt(dir, o)
	if err != nil {
		return nil, err
	}
	b := s.(*buntStore)
	for _, p := range props {
		if err := b.db.CreateIndex(p, "*", buntdb.IndexJSON(p)); err != nil && !errors.Is(err, buntdb.ErrIndexExists) {
			b.Close()
			return nil, fmt.Errorf("index %s: %w", p, err)
		}
	}
	return &buntQueryStore{b}, nil
}

// pivot is a document holding only prop = value (value in JSON), for the
// IndexJSON comparisons of the iterators.
func pivot(prop, value string) string { return `{"` + prop + `":` + value + `}` }

func (s *buntQueryStore) Query(ctx context.Context, q Query, fn func(doc []byte) error) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var vals []string
	collect := func(_, v string) bool {
		vals = append(vals, v)
		return true
	}
	count := 0
	err := s.db.View(func(tx *buntdb.Tx) error {
		switch q.Kind {
		case QueryEqual:
			return tx.AscendEqual(q.Prop, pivot(q.Prop, strconv.Quote(q.Value)), collect)
		case QueryRange:
			return tx.AscendRange(q.Prop, pivot(q.Prop, strconv.FormatInt(q.Lo, 10)),
				pivot(q.Prop, strconv.FormatInt(q.Hi, 10)), collect)
		case QueryTop:
			if q.K <= 0 {
				return nil
			}
			return tx.Descend(q.Prop, func(_, v string) bool {
				vals = append(vals, v)
				return len(vals) < q.K
			})
		case QueryCount:
			return tx.AscendEqual(q.Prop, pivot(q.Prop, strconv.Quote(q.Value)), func(_, _ string) bool {
				count++
				return true
			})
		}
		return fmt.Errorf("unknown query kind %d", q.Kind)
	})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", s.Describe(q), err)
	}
	if q.Kind == QueryCount {
		return count, nil
	}
	for i, v := range vals {
		if err := fn(unsafe.Slice(unsafe.StringData(v), len(v))); err != nil {
			return i, err
		}
	}
	return len(vals), nil
}

func (s *buntQueryStore) Describe(q Query) string {
	switch q.Kind {
	case QueryEqual:
		return fmt.Sprintf("AscendEqual(%q, {%q: @v})", q.Prop, q.Prop)
	case QueryRange:
		return fmt.Sprintf("AscendRange(%q, {%q: @lo}, {%q: @hi})", q.Prop, q.Prop, q.Prop)
	case QueryTop:
		return fmt.Sprintf("Descend(%q), first %d", q.Prop, q.K)
	case QueryCount:
		return fmt.Sprintf("AscendEqual(%q, {%q: @v}), counted", q.Prop, q.Prop)
	}
	return ""
}

// Backlog is the number of items BuntDB holds, expired or not: it drops
// when the sweep has deleted the expired ones (a read waits for a sweep in
// progress).
func (s *buntQueryStore) Backlog(ctx context.Context) (int64, error) {
	var n int
	err := s.db.View(func(tx *buntdb.Tx) error {
		var err error
		n, err = tx.Len()
		return err
	})
	return int64(n), err
}
