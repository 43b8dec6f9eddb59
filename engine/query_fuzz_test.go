package engine

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/ebbdb/ebb/engine/query"
)

// fuzzQueryDB is the database FuzzQuery runs against: opened once per
// process, the table's documents in a consistent-indexing container.
var fuzzQueryDB struct {
	once sync.Once
	c    *Container
	err  error
}

func fuzzQueryContainer(t *testing.T) *Container {
	fuzzQueryDB.once.Do(func() {
		dir, err := os.MkdirTemp("", "ebb-fuzz-query-")
		if err != nil {
			fuzzQueryDB.err = err
			return
		}
		// Nothing is ever sealed or compacted here, and the directory is
		// removed once loaded (the process never closes the DB): the
		// journal's open file holds the items; background writes of the
		// CLOCK file fail, logged to the default discarding logger.
		db, err := Open(dir, &Options{Clock: newFakeClock(t0).Now, NoSync: true, CompactionInterval: -1})
		if err != nil {
			fuzzQueryDB.err = err
			return
		}
		c, err := db.CreateContainer(context.Background(), ContainerProperties{ID: "q"})
		if err != nil {
			fuzzQueryDB.err = err
			return
		}
		for _, d := range queryDocs {
			if _, err := c.Create(context.Background(), []byte(d)); err != nil {
				fuzzQueryDB.err = err
				return
			}
		}
		fuzzQueryDB.c = c
		os.RemoveAll(dir)
	})
	if fuzzQueryDB.err != nil {
		t.Fatal(fuzzQueryDB.err)
	}
	waitIndexed(t, fuzzQueryDB.c)
	return fuzzQueryDB.c
}

// FuzzQuery runs arbitrary query text through the engine: it never panics,
// a refused query's error wraps query.ErrInvalidQuery, and an accepted
// one returns exactly what the brute-force evaluator returns, whatever
// access path the planner chose.
func FuzzQuery(f *testing.F) {
	for _, tc := range queryCases {
		if len(tc.params) == 0 {
			f.Add(tc.sql)
		}
	}
	f.Add(`SELECT TOP 3 c.o.x AS v FROM c WHERE c.o.x >= 1 OR STARTSWITH(c.s, 'b') ORDER BY c.o.x DESC`)
	f.Add(`SELECT VALUE c.tags[0] FROM c WHERE ARRAY_CONTAINS(c.tags, 'y') AND NOT IS_DEFINED(c.b)`)
	f.Fuzz(func(t *testing.T, sql string) {
		c := fuzzQueryContainer(t)
		var got []string
		var err error
		for it, e := range c.Query(context.Background(), sql) {
			if e != nil {
				err = e
				break
			}
			got = append(got, canonicalJSON(t, it.Body))
		}
		if err != nil {
			if !errors.Is(err, query.ErrInvalidQuery) {
				t.Fatalf("%q: error %v does not wrap ErrInvalidQuery", sql, err)
			}
			return
		}
		if want := bruteQuery(t, c, sql, nil); !slices.Equal(got, want) {
			plan, _ := c.Explain(sql)
			t.Fatalf("%q\nplan:\n%s\n got %v\nwant %v", sql, plan, got, want)
		}
	})
}
