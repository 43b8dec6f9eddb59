package engine

import (
	"context"
	"fmt"
	"testing"
)

// TestWriteTermsOnlyForIndexedPaths: a write queues its document for
// secondary-index terms, which are then set, exactly when its container's
// policy can index some path; a policy that excludes every path (as a
// key-value container does) costs writes nothing, and queries still answer
// from the documents.
func TestWriteTermsOnlyForIndexedPaths(t *testing.T) {
	cases := []struct {
		name      string
		props     ContainerProperties
		wantTerms bool
	}{
		{"default policy", ContainerProperties{}, true},
		{"one path included", ContainerProperties{IncludedPaths: []string{"/a/?"}}, true},
		{"every path excluded", ContainerProperties{ExcludedPaths: []string{"/*"}}, false},
		{"excluded but _ts included", ContainerProperties{IncludedPaths: []string{"/_ts/?"}, ExcludedPaths: []string{"/*"}}, true},
		{"lazy, every path excluded", ContainerProperties{Indexing: IndexingLazy, ExcludedPaths: []string{"/*"}}, false},
		{"indexing none", ContainerProperties{Indexing: IndexingNone}, false},
	}
	ctx := context.Background()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := openTest(t, t.TempDir(), newFakeClock(1_000_000))
			defer db.Close()
			tc.props.ID = fmt.Sprintf("c%d", i)
			c := mustCreateContainer(t, db, tc.props)

			db.indexHold.Lock() // the index loop sets nothing meanwhile
			_, err := c.Upsert(ctx, []byte(`{"id":"x","a":"one","b":{"c":"d"}}`))
			queued := c.ix.queued.Load()
			db.indexHold.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			if queued != 0 != tc.wantTerms {
				t.Errorf("%d puts queued for terms; want some: %v", queued, tc.wantTerms)
			}

			for n := range 20 {
				if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"i%d","a":%d}`, n, n%3)); err != nil {
					t.Fatal(err)
				}
			}
			waitIndexed(t, c)
			c.mu.RLock()
			_, hasTerms := c.idx.TermsSeq("i0")
			c.mu.RUnlock()
			if hasTerms != tc.wantTerms {
				t.Errorf("item i0 has terms in the index: %v, want %v", hasTerms, tc.wantTerms)
			}
			found := 0
			for _, err := range c.Query(ctx, "SELECT * FROM c WHERE c.a = 1") {
				if err != nil {
					t.Fatal(err)
				}
				found++
			}
			if found != 7 {
				t.Errorf("query found %d items, want 7", found)
			}
		})
	}
}
