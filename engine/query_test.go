package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ebbdb/ebb/engine/query"
)

// The fixed dataset of the query table: every operator has items it
// matches and items it must not, including mixed types and missing
// properties.
var queryDocs = []string{
	`{"id":"a","n":1,"s":"apple","b":true,"tags":["x","y"],"o":{"x":1}}`,
	`{"id":"b","n":2,"s":"banana","b":false,"tags":["y"],"o":{"x":2}}`,
	`{"id":"c","n":3,"s":"apricot","tags":[],"o":{"x":"3"}}`,
	`{"id":"d","n":"3","s":"Apple","b":true,"o":{}}`,
	`{"id":"e","n":null,"s":"","tags":["x"]}`,
	`{"id":"f","n":2.5,"b":true,"tags":["z","x"],"o":{"x":2}}`,
	`{"id":"g","s":"cherry","n":10,"ttl":-1}`,
	`{"id":"h","n":-1,"s":"date","o":{"x":[1,2]}}`,
}

// queryCase is one query of the table and what it must return: ids for
// SELECT *, bodies (canonical JSON) otherwise.
type queryCase struct {
	sql    string
	params []Param
	want   string // ids joined by "," or canonical bodies joined by " "
}

var queryCases = []queryCase{
	{sql: `SELECT * FROM c`, want: "a,b,c,d,e,f,g,h"},
	{sql: `SELECT * FROM c WHERE c.n = 2`, want: "b"},
	{sql: `SELECT * FROM c WHERE c.n = 3`, want: "c"},
	{sql: `SELECT * FROM c WHERE c.n = '3'`, want: "d"},
	{sql: `SELECT * FROM c WHERE c.n != 2`, want: "a,c,f,g,h"},
	{sql: `SELECT * FROM c WHERE c.n > 2`, want: "c,f,g"},
	{sql: `SELECT * FROM c WHERE c.n >= 2 AND c.n < 10`, want: "b,c,f"},
	{sql: `SELECT * FROM c WHERE c.n <= 1`, want: "a,h"},
	{sql: `SELECT * FROM c WHERE c.s > 'b'`, want: "b,g,h"},
	{sql: `SELECT * FROM c WHERE c.n IN (1, 3, '3')`, want: "a,c,d"},
	{sql: `SELECT * FROM c WHERE c.b = true`, want: "a,d,f"},
	{sql: `SELECT * FROM c WHERE NOT (c.b = true)`, want: "b"},
	{sql: `SELECT * FROM c WHERE c.b = true OR c.n = 2`, want: "a,b,d,f"},
	{sql: `SELECT * FROM c WHERE IS_DEFINED(c.b)`, want: "a,b,d,f"},
	{sql: `SELECT * FROM c WHERE NOT IS_DEFINED(c.o)`, want: "e,g"},
	{sql: `SELECT * FROM c WHERE STARTSWITH(c.s, 'ap')`, want: "a,c"},
	{sql: `SELECT * FROM c WHERE STARTSWITH(c.s, 'ap', true)`, want: "a,c,d"},
	{sql: `SELECT * FROM c WHERE ARRAY_CONTAINS(c.tags, 'x')`, want: "a,e,f"},
	{sql: `SELECT * FROM c WHERE c.o.x = 2`, want: "b,f"},
	{sql: `SELECT * FROM c WHERE c.o.x > 1`, want: "b,f"},
	{sql: `SELECT * FROM c WHERE c.n = @n`, params: []Param{{"@n", 2.5}}, want: "f"},
	{sql: `SELECT * FROM c WHERE c.s = @s AND c.b = @b`, params: []Param{{"@s", "apple"}, {"@b", true}}, want: "a"},
	{sql: `SELECT * FROM c WHERE c.id = 'g'`, want: "g"},
	{sql: `SELECT * FROM c WHERE c.ttl = -1`, want: "g"},
	{sql: `SELECT * FROM c WHERE c.n = null`, want: "e"},
	{sql: `SELECT VALUE c.s FROM c WHERE c.n > 2`, want: `"apricot" "cherry"`},
	{sql: `SELECT c.n, c.s FROM c WHERE c.id IN ('a', 'g')`, want: `{"n":1,"s":"apple"} {"n":10,"s":"cherry"}`},
	{sql: `SELECT c.o.x AS ox FROM c WHERE c.id = 'b'`, want: `{"ox":2}`},
	{sql: `SELECT VALUE c.n FROM c ORDER BY c.n`, want: `null -1 1 2 2.5 3 10 "3"`},
	{sql: `SELECT VALUE c.id FROM c WHERE IS_DEFINED(c.n) ORDER BY c.n DESC`, want: `"d" "g" "c" "f" "b" "a" "h" "e"`},
	{sql: `SELECT TOP 2 VALUE c.id FROM c ORDER BY c.s`, want: `"f" "e"`}, // undefined sorts first
	{sql: `SELECT VALUE c.id FROM c ORDER BY c.id OFFSET 2 LIMIT 3`, want: `"c" "d" "e"`},
	{sql: `SELECT VALUE c.id FROM c OFFSET 6 LIMIT 10`, want: `"g" "h"`},
	{sql: `SELECT VALUE COUNT(1) FROM c`, want: `8`},
	{sql: `SELECT VALUE COUNT(1) FROM c WHERE c.n > 2`, want: `3`},
	{sql: `SELECT VALUE COUNT(1) FROM c WHERE c.nothing = 1`, want: `0`},
}

// resultString renders query results as queryCase.want does.
func resultString(t testing.TB, sql string, items []Item) string {
	t.Helper()
	var parts []string
	star := strings.HasPrefix(strings.ToUpper(strings.TrimSpace(sql)), "SELECT *")
	for _, it := range items {
		if star {
			parts = append(parts, it.ID)
		} else {
			parts = append(parts, canonicalJSON(t, it.Body))
		}
	}
	if star {
		return strings.Join(parts, ",")
	}
	return strings.Join(parts, " ")
}

// canonicalJSON re-encodes b with sorted keys, for comparisons.
func canonicalJSON(t testing.TB, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("result %s is not JSON: %v", b, err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func runQuery(t testing.TB, c *Container, sql string, params ...Param) []Item {
	t.Helper()
	var out []Item
	for it, err := range c.Query(context.Background(), sql, params...) {
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		out = append(out, it)
	}
	return out
}

// waitIndexed waits until c's secondary index is complete and the lazy
// queue is empty, starting the build Open puts off until the first query.
func waitIndexed(t testing.TB, c *Container) {
	t.Helper()
	if _, err := c.Explain("SELECT * FROM c"); err != nil && !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c.mu.RLock()
		done := !c.indexLaggingLocked()
		c.mu.RUnlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %q: index not built after 20 s", c.ID())
		}
		time.Sleep(time.Millisecond)
	}
}

var allModes = []IndexingMode{IndexingConsistent, IndexingLazy, IndexingNone}

func TestQueryTable(t *testing.T) {
	ctx := context.Background()
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			clk := newFakeClock(t0)
			db := openTest(t, t.TempDir(), clk)
			defer db.Close()
			c := mustCreateContainer(t, db, ContainerProperties{ID: "q", Indexing: mode})
			for _, d := range queryDocs {
				if _, err := c.Create(ctx, []byte(d)); err != nil {
					t.Fatal(err)
				}
			}
			waitIndexed(t, c)
			for _, tc := range queryCases {
				got := resultString(t, tc.sql, runQuery(t, c, tc.sql, tc.params...))
				if got != tc.want {
					t.Errorf("%s\n got %s\nwant %s", tc.sql, got, tc.want)
				}
			}
		})
	}
}

func TestQueryNeverReturnsExpired(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []IndexingMode{IndexingConsistent, IndexingLazy} {
		t.Run(mode.String(), func(t *testing.T) {
			clk := newFakeClock(t0)
			db := openTest(t, t.TempDir(), clk, func(o *Options) { o.CompactionInterval = -1 })
			defer db.Close()
			c := mustCreateContainer(t, db, ContainerProperties{ID: "q", DefaultTTL: TTL(100), Indexing: mode})
			for i := range 50 {
				doc := fmt.Sprintf(`{"id":"i%02d","k":1,"ttl":%d}`, i, 10+i) // i%02d expires at t0+10+i
				if _, err := c.Create(ctx, []byte(doc)); err != nil {
					t.Fatal(err)
				}
			}
			waitIndexed(t, c)
			clk.Advance(20) // i00..i10 have expired, not yet marked
			if got := resultString(t, "SELECT VALUE", runQuery(t, c, `SELECT VALUE COUNT(1) FROM c WHERE c.k = 1`)); got != "39" {
				t.Fatalf("COUNT after 20 s = %s, want 39", got)
			}
			// Expiry in the middle of a running query: items expire between
			// reads, and are not yielded once expired.
			var seen []string
			for it, err := range c.Query(ctx, `SELECT * FROM c WHERE c.k = 1`) {
				if err != nil {
					t.Fatal(err)
				}
				seen = append(seen, it.ID)
				if it.ID == "i20" {
					clk.Advance(20) // i11..i30 expire now; i21..i30 are not yet read
				}
			}
			want := []string{}
			for i := 11; i <= 20; i++ {
				want = append(want, fmt.Sprintf("i%02d", i))
			}
			for i := 31; i < 50; i++ {
				want = append(want, fmt.Sprintf("i%02d", i))
			}
			if !slices.Equal(seen, want) {
				t.Fatalf("query across expiry yielded %v, want %v", seen, want)
			}
			if st := c.Stats(); st.Items != 19 {
				t.Fatalf("Stats.Items = %d, want 19", st.Items)
			}
		})
	}
}

func TestQueryErrors(t *testing.T) {
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk)
	defer db.Close()
	c := mustCreateContainer(t, db, ContainerProperties{ID: "q"})
	cases := []struct {
		sql    string
		params []Param
		is     error
		says   string
	}{
		{sql: `SELECT * FORM c`, is: query.ErrSyntax, says: `"FORM"`},
		{sql: `SELECT * FROM c WHERE c.n = @missing`, is: query.ErrInvalidQuery, says: "@missing"},
		{sql: `SELECT * FROM c WHERE c.n = 1`, params: []Param{{"@x", make(chan int)}}, is: query.ErrInvalidQuery, says: "@x"},
	}
	for _, tc := range cases {
		var err error
		for _, e := range c.Query(context.Background(), tc.sql, tc.params...) {
			err = e
		}
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: error %v, want %v naming %s", tc.sql, err, tc.is, tc.says)
		}
	}
}

// TestQueryOrderByWalkRunsDry: an ORDER BY ... TOP over an index walk
// reads only the window's worth of candidates; when those expire while the
// query runs, it walks again and still yields the right items in order.
func TestQueryOrderByWalkRunsDry(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk, func(o *Options) { o.CompactionInterval = -1 })
	defer db.Close()
	c := mustCreateContainer(t, db, ContainerProperties{ID: "q", DefaultTTL: TTL(-1)})
	for i := range 40 {
		ttl := -1
		if i >= 1 && i <= 30 {
			ttl = 10
		}
		if _, err := c.Create(ctx, fmt.Appendf(nil, `{"id":"i%02d","n":%d,"ttl":%d}`, i, i, ttl)); err != nil {
			t.Fatal(err)
		}
	}
	if s, _ := c.Explain(`SELECT TOP 5 VALUE c.n FROM c ORDER BY c.n`); !strings.Contains(s, "(index)") {
		t.Fatalf("ORDER BY does not walk the index:\n%s", s)
	}
	var got []string
	for it, err := range c.Query(ctx, `SELECT TOP 5 VALUE c.n FROM c ORDER BY c.n`) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(it.Body))
		if len(got) == 1 {
			clk.Advance(10) // i01..i30 expire before they are read
		}
	}
	if want := []string{"0", "31", "32", "33", "34"}; !slices.Equal(got, want) {
		t.Fatalf("TOP 5 across expiry = %v, want %v", got, want)
	}
}

// TestQueryLazyNeverWrong: with lazy indexing a query may miss the newest
// writes for a moment, but a stale index entry never makes it return an
// item that does not match, and the index catches up.
func TestQueryLazyNeverWrong(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk)
	defer db.Close()
	c := mustCreateContainer(t, db, ContainerProperties{ID: "q", Indexing: IndexingLazy})
	for i := range 200 {
		if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"i%03d","n":1}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	waitIndexed(t, c)
	for round := range 20 {
		// Move every item from n=1 to n=2 (or back) while querying for the
		// old value: whatever the index says, no item with the new value
		// may come back.
		from, to := 1+round%2, 2-round%2
		done := make(chan error, 1)
		go func() {
			for i := range 200 {
				if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"i%03d","n":%d}`, i, to)); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		for range 5 {
			for it, err := range c.Query(ctx, fmt.Sprintf(`SELECT * FROM c WHERE c.n = %d`, from)) {
				if err != nil {
					t.Fatal(err)
				}
				if n := bodyField(t, it, "n"); n != float64(from) {
					t.Fatalf("round %d: query for n = %d returned %s", round, from, it.Body)
				}
			}
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		waitIndexed(t, c)
		if got := runQuery(t, c, fmt.Sprintf(`SELECT VALUE COUNT(1) FROM c WHERE c.n = %d`, to)); string(got[0].Body) != "200" {
			t.Fatalf("round %d: once caught up, COUNT(n = %d) = %s, want 200", round, to, got[0].Body)
		}
	}
}

// TestQueryLazyCountNeverWrong: a lazy index is never trusted alone, so a
// COUNT re-checks what a stale entry names.
func TestQueryLazyCountNeverWrong(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk)
	defer db.Close()
	c := mustCreateContainer(t, db, ContainerProperties{ID: "q", Indexing: IndexingLazy})
	if _, err := c.Upsert(ctx, []byte(`{"id":"a","n":1}`)); err != nil {
		t.Fatal(err)
	}
	waitIndexed(t, c)
	// Keep the index loop from setting a's new terms until the checks ran.
	db.indexHold.Lock()
	defer db.indexHold.Unlock()
	if _, err := c.Upsert(ctx, []byte(`{"id":"a","n":2}`)); err != nil {
		t.Fatal(err)
	}
	if n := c.ix.queued.Load(); n != 1 {
		t.Fatalf("%d puts queued for their terms, want a's", n)
	}
	for _, q := range []string{`SELECT VALUE COUNT(1) FROM c WHERE c.n = 1`, `SELECT * FROM c WHERE c.n = 1`} {
		for it, err := range c.Query(ctx, q) {
			if err != nil {
				t.Fatal(err)
			}
			if string(it.Body) == "1" || it.ID == "a" {
				t.Fatalf("%s answered from a's stale index entry: %s", q, it.Body)
			}
		}
	}
	if n := c.ix.queued.Load(); n != 1 {
		t.Fatalf("after lazy queries, %d puts queued, want a's still: a lazy query does not wait for the index", n)
	}
}

// TestIndexBuildWaitsForFirstQuery: after Open, the secondary index of a
// container with indexed paths is not rebuilt until the container is first
// queried (reads and writes meanwhile leave it alone, and a query answers
// exactly by scanning); the first query starts the build, after which
// queries use the index again.
func TestIndexBuildWaitsForFirstQuery(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := newFakeClock(t0)
	db := openTest(t, dir, clk)
	c := mustCreateContainer(t, db, ContainerProperties{ID: "c"})
	for i := range 300 {
		if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"k%03d","n":%d}`, i, i%7)); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	db = openTest(t, dir, clk)
	defer db.Close()
	c, err := db.Container("c")
	if err != nil {
		t.Fatal(err)
	}
	// With the index loop held, only the writes could have emptied the
	// queue.
	db.indexHold.Lock()
	held := true
	defer func() {
		if held {
			db.indexHold.Unlock() // before Close, which waits for the loop
		}
	}()
	for i := range 50 {
		if _, err := c.Read(ctx, fmt.Sprintf("k%03d", i)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":"new%d","n":3}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond) // the index loop would have started by now
	c.mu.RLock()
	building, deferred, queued := c.ix.building, c.ix.deferred.Load(), len(c.ix.queue)
	c.mu.RUnlock()
	db.indexHold.Unlock()
	held = false
	if building || !deferred {
		t.Fatalf("after reads and writes alone: building %v, deferred %v; want the build put off", building, deferred)
	}
	if queued != 0 {
		t.Fatalf("%d writes queued for terms before the first query; the build indexes them", queued)
	}
	plan, err := c.Explain(`SELECT * FROM c WHERE c.n = 3`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "scan") {
		t.Fatalf("first Explain after Open, before the build:\n%s", plan)
	}
	waitIndexed(t, c)
	plan, err = c.Explain(`SELECT * FROM c WHERE c.n = 3`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "index") || strings.Contains(plan, "scan") {
		t.Fatalf("Explain once built:\n%s", plan)
	}
	var n int
	for _, err := range c.Query(ctx, `SELECT * FROM c WHERE c.n = 3`) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if want := 43 + 50; n != want { // 300 items with n = i%7 == 3, and the 50 new ones
		t.Fatalf("query found %d items, want %d", n, want)
	}
}

// TestQueryBodiesIndependent: the bodies a query returns share allocations
// (window.render), yet each is its own: appending to one never changes
// another, and each equals what Read returns.
func TestQueryBodiesIndependent(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), newFakeClock(t0))
	defer db.Close()
	c := mustCreateContainer(t, db, ContainerProperties{ID: "c"})
	for i := range 50 {
		if _, err := c.Upsert(ctx, []byte(fmt.Sprintf(`{"id":"k%02d","v":%q}`, i, strings.Repeat("v", i*10)))); err != nil {
			t.Fatal(err)
		}
	}
	for _, sql := range []string{`SELECT * FROM c`, `SELECT * FROM c ORDER BY c.v DESC`, `SELECT * FROM c WHERE c.v > "" ORDER BY c.id`} {
		var items []Item
		for it, err := range c.Query(ctx, sql) {
			if err != nil {
				t.Fatal(err)
			}
			items = append(items, it)
		}
		if len(items) != 49 && len(items) != 50 {
			t.Fatalf("%s: %d items", sql, len(items))
		}
		want := make([]string, len(items))
		for i, it := range items {
			want[i] = string(it.Body)
			if got, err := c.Read(ctx, it.ID); err != nil || string(got.Body) != want[i] {
				t.Fatalf("%s: item %s: query returned %s, Read %s, %v", sql, it.ID, it.Body, got.Body, err)
			}
		}
		for i := range items {
			_ = append(items[i].Body, "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"...)
		}
		for i, it := range items {
			if string(it.Body) != want[i] {
				t.Fatalf("%s: item %s changed by appending to another: %s", sql, it.ID, it.Body)
			}
		}
	}
}
