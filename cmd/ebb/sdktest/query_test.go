package sdktest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// queryAll runs a query to the end and returns its items and page count,
// checking the headers every page must carry.
func queryAll(t testing.TB, c *azcosmos.ContainerClient, q string, pk azcosmos.PartitionKey, o *azcosmos.QueryOptions) ([]json.RawMessage, int) {
	t.Helper()
	var items []json.RawMessage
	pages := 0
	pager := c.NewQueryItemsPager(q, pk, o)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatalf("query %q page %d: %v", q, pages+1, err)
		}
		pages++
		if page.ActivityID == "" || page.RequestCharge == 0 || page.QueryMetrics == nil {
			t.Errorf("query %q page %d: activity id %q, request charge %v, query metrics %v; want all set", q, pages, page.ActivityID, page.RequestCharge, page.QueryMetrics)
		}
		if o != nil && o.PageSizeHint > 0 && len(page.Items) > int(o.PageSizeHint) {
			t.Errorf("query %q page %d: %d items, more than the page size %d", q, pages, len(page.Items), o.PageSizeHint)
		}
		for _, it := range page.Items {
			items = append(items, json.RawMessage(it))
		}
		if pages > 1000 {
			t.Fatalf("query %q: more than 1000 pages", q)
		}
	}
	return items, pages
}

func idsOf(t testing.TB, items []json.RawMessage) []string {
	t.Helper()
	ids := make([]string, 0, len(items))
	for _, raw := range items {
		var d struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatalf("query item %s: %v", raw, err)
		}
		ids = append(ids, d.ID)
	}
	return ids
}

// TestQueries: parameters, projections, ORDER BY within a partition, paging
// with continuations, partition scoping and cross-partition reads.
func TestQueries(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	db := newDatabase(t, s.client(t), "queries")
	c := newContainer(t, db, "items", "/pk", nil)
	ctx := context.Background()
	// 7 items in each of two partitions; n runs 0..6 in both.
	for _, pk := range []string{"p1", "p2"} {
		for n := 0; n < 7; n++ {
			body := fmt.Sprintf(`{"id":"%s-%d","pk":%q,"n":%d,"tags":["t%d"],"nested":{"even":%t}}`, pk, n, pk, n, n%3, n%2 == 0)
			if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString(pk), []byte(body), nil); err != nil {
				t.Fatalf("create %s: %v", body, err)
			}
		}
	}
	p1 := azcosmos.NewPartitionKeyString("p1")

	t.Run("parameters", func(t *testing.T) {
		items, _ := queryAll(t, c, "SELECT * FROM c WHERE c.n >= @lo AND c.nested.even = @even ORDER BY c.n", p1,
			&azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@lo", Value: 2}, {Name: "@even", Value: true}}})
		if got, want := idsOf(t, items), []string{"p1-2", "p1-4", "p1-6"}; !reflect.DeepEqual(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
	t.Run("projection and order", func(t *testing.T) {
		items, _ := queryAll(t, c, "SELECT VALUE c.n FROM c ORDER BY c.n DESC", p1, nil)
		var got []int
		for _, raw := range items {
			var n int
			if err := json.Unmarshal(raw, &n); err != nil {
				t.Fatalf("item %s: %v", raw, err)
			}
			got = append(got, n)
		}
		if want := []int{6, 5, 4, 3, 2, 1, 0}; !reflect.DeepEqual(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
		items, _ = queryAll(t, c, "SELECT c.id, c.nested.even AS e FROM c WHERE c.n = 3", p1, nil)
		if len(items) != 1 || string(items[0]) != `{"id":"p1-3","e":false}` {
			t.Errorf("projection: got %s, want one {\"id\":\"p1-3\",\"e\":false}", items)
		}
	})
	t.Run("paging", func(t *testing.T) {
		o := &azcosmos.QueryOptions{PageSizeHint: 3}
		items, pages := queryAll(t, c, "SELECT * FROM c ORDER BY c.n", p1, o)
		if got, want := idsOf(t, items), []string{"p1-0", "p1-1", "p1-2", "p1-3", "p1-4", "p1-5", "p1-6"}; !reflect.DeepEqual(got, want) {
			t.Errorf("paged ids %v, want %v", got, want)
		}
		if pages != 3 {
			t.Errorf("7 items at 3 a page came in %d pages, want 3", pages)
		}
		if o.ContinuationToken != nil {
			t.Errorf("the caller's options were changed: continuation %q", *o.ContinuationToken)
		}
		// Resume from a continuation token taken from the first page.
		pager := c.NewQueryItemsPager("SELECT * FROM c ORDER BY c.n", p1, &azcosmos.QueryOptions{PageSizeHint: 3})
		first, err := pager.NextPage(ctx)
		if err != nil || first.ContinuationToken == nil {
			t.Fatalf("first page: %v, continuation %v", err, first.ContinuationToken)
		}
		rest, _ := queryAll(t, c, "SELECT * FROM c ORDER BY c.n", p1, &azcosmos.QueryOptions{PageSizeHint: 3, ContinuationToken: first.ContinuationToken})
		if got, want := idsOf(t, rest), []string{"p1-3", "p1-4", "p1-5", "p1-6"}; !reflect.DeepEqual(got, want) {
			t.Errorf("resumed ids %v, want %v", got, want)
		}
	})
	t.Run("partition scope", func(t *testing.T) {
		items, _ := queryAll(t, c, "SELECT * FROM c WHERE c.n = 1", azcosmos.NewPartitionKeyString("p2"), nil)
		if got := idsOf(t, items); !reflect.DeepEqual(got, []string{"p2-1"}) {
			t.Errorf("got %v, want [p2-1]", got)
		}
		items, _ = queryAll(t, c, "SELECT * FROM c", azcosmos.NewPartitionKeyString("p9"), nil)
		if len(items) != 0 {
			t.Errorf("query of an empty partition returned %s", items)
		}
	})
	t.Run("cross partition", func(t *testing.T) {
		items, pages := queryAll(t, c, "SELECT * FROM c WHERE c.n < 2", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: 2})
		got := idsOf(t, items)
		sort.Strings(got)
		if want := []string{"p1-0", "p1-1", "p2-0", "p2-1"}; !reflect.DeepEqual(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
		if pages < 2 {
			t.Errorf("4 items at 2 a page came in %d pages", pages)
		}
	})
	t.Run("bad query", func(t *testing.T) {
		pager := c.NewQueryItemsPager("SELEC * FROM c", p1, nil)
		_, err := pager.NextPage(ctx)
		wantStatus(t, "query with a syntax error", err, 400)
	})
}
