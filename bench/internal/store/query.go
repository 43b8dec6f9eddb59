package store

import (
	"context"
	"fmt"
	"sort"
)

// The query workload compares the stores that can answer queries from
// secondary indexes on document properties: ebb (Container.Query over an
// indexing policy) and BuntDB (IndexJSON indexes and its Ascend/Descend
// iterators). Badger, bbolt and Pebble have no secondary indexes; an
// application would build and maintain them itself, which is not what this
// workload measures.

// QueryKind is the shape of a query.
type QueryKind int

const (
	// QueryEqual: every live document whose Prop equals Value (a string).
	QueryEqual QueryKind = iota
	// QueryRange: every live document whose Prop (a number) is in [Lo, Hi).
	QueryRange
	// QueryTop: the K live documents with the highest Prop, highest first.
	QueryTop
	// QueryCount: how many live documents have Prop equal to Value.
	QueryCount
)

// Query is one query with its parameters.
type Query struct {
	Kind  QueryKind
	Prop  string
	Value string // QueryEqual, QueryCount
	Lo    int64  // QueryRange
	Hi    int64  // QueryRange
	K     int    // QueryTop
}

// QueryStore is a store opened with secondary indexes on some top-level
// properties of its documents. It is safe for concurrent use.
type QueryStore interface {
	// Put commits items atomically with one durable commit, as Store.Put.
	Put(ctx context.Context, items []Item) error
	// Query runs q. For QueryCount it returns the count and calls no fn;
	// otherwise it calls fn with each document of the result, in the
	// store's order, and returns how many it passed. fn must neither
	// modify nor keep doc after it returns; an error from fn stops the
	// query and is returned.
	Query(ctx context.Context, q Query, fn func(doc []byte) error) (int, error)
	// Describe says how the store is asked q, in its own terms (ebb's SQL,
	// BuntDB's iterator call), for reports.
	Describe(q Query) string
	// Close releases the store.
	Close() error
}

// Explainer is implemented by query stores that can say how they will run
// a query (ebb's Container.Explain).
type Explainer interface {
	Explain(q Query) (string, error)
}

// Housekeeper is implemented by query stores that delete expired items in
// the background. Backlog is a figure that stops changing once that work
// is done for every item expired so far (BuntDB: the items it holds, swept
// every second under its write lock; ebb: the expired records compaction
// has not reclaimed), so that a measurement can wait for it rather than
// measure it.
type Housekeeper interface {
	Backlog(ctx context.Context) (int64, error)
}

// QuerySpec describes one kind of query store.
type QuerySpec struct {
	Name string
	// How says in a line how the store indexes and expires.
	How string
	// Open opens the store in dir with indexes on the top-level properties
	// props.
	Open func(dir string, o Options, props []string) (QueryStore, error)
}

var querySpecs = map[string]QuerySpec{}

func registerQuery(s QuerySpec) { querySpecs[s.Name] = s }

// QueryNames lists the stores that can run the query workload, ebb first.
func QueryNames() []string {
	var out []string
	for n := range querySpecs {
		if n != "ebb" {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	if _, ok := querySpecs["ebb"]; ok {
		out = append([]string{"ebb"}, out...)
	}
	return out
}

// CanQuery says whether the store name can run the query workload.
func CanQuery(name string) bool {
	_, ok := querySpecs[name]
	return ok
}

// LookupQuery returns the spec of a query store by name.
func LookupQuery(name string) (QuerySpec, error) {
	s, ok := querySpecs[name]
	if !ok {
		return QuerySpec{}, fmt.Errorf("store %q has no secondary indexes to query (have %v)", name, QueryNames())
	}
	return s, nil
}

// OpenQuery opens the query store name in dir, creating it if needed, with
// indexes on the top-level properties props.
func OpenQuery(name, dir string, o Options, props []string) (QueryStore, error) {
	s, err := LookupQuery(name)
	if err != nil {
		return nil, err
	}
	st, err := s.Open(dir, o.withDefaults(), props)
	if err != nil {
		return nil, fmt.Errorf("open %s for queries: %w", name, err)
	}
	return st, nil
}
