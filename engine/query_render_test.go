package engine

import (
	"bytes"
	"context"
	"fmt"
	"testing"
)

// TestQueryRowsAsRead checks the rows a query renders as it reads them
// (SELECT * over an exact index or none) against Read, body and etag byte
// for byte, and that OFFSET and LIMIT over an ORDER BY walk take the
// right rows when documents with no scalar at the ORDER BY path (kept
// pending while the walk runs, and offered while the window still skips)
// are among them: every window of the full order is the same slice of it.
func TestQueryRowsAsRead(t *testing.T) {
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk)
	c := mustCreateContainer(t, db, ContainerProperties{ID: "r"})
	ctx := context.Background()
	const n = 40
	for i := range n {
		var doc string
		switch i % 5 {
		case 0:
			doc = fmt.Sprintf(`{"id":"i%02d","k":%d}`, i, i%7) // no n: sorts first
		case 1:
			doc = fmt.Sprintf(`{"id":"i%02d","n":[%d],"k":%d}`, i, i, i%7) // an array: sorts after numbers
		default:
			doc = fmt.Sprintf(`{"id":"i%02d","n":%d,"k":%d,"pad":"%0*d"}`, i, (i*13)%17, i%7, i*10, 0)
		}
		if _, err := c.Upsert(ctx, []byte(doc)); err != nil {
			t.Fatal(err)
		}
		if i == n/2 {
			forceSeal(t, db) // half from segment files, half from the memtable
		}
	}
	waitIndexed(t, c)
	check := func(sql string, rows []Item) {
		t.Helper()
		for _, it := range rows {
			want, err := c.Read(ctx, it.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(it.Body, want.Body) || it.ETag != want.ETag || it.TS != want.TS || it.ExpiresAt != want.ExpiresAt {
				t.Fatalf("%s: row %s = %s etag %s, Read gives %s etag %s", sql, it.ID, it.Body, it.ETag, want.Body, want.ETag)
			}
		}
	}
	for _, order := range []string{"", " ORDER BY c.n", " ORDER BY c.n DESC", " ORDER BY c.k DESC"} {
		for _, where := range []string{"", " WHERE c.k = 3", " WHERE c.k > 2"} {
			base := "SELECT * FROM c" + where + order
			all := runQuery(t, c, base)
			check(base, all)
			for skip := 0; skip <= len(all)+1; skip += 3 {
				for _, limit := range []int{0, 1, 4, len(all)} {
					sql := fmt.Sprintf("%s OFFSET %d LIMIT %d", base, skip, limit)
					got := runQuery(t, c, sql)
					want := all[min(skip, len(all)):min(skip+limit, len(all))]
					if len(got) != len(want) {
						t.Fatalf("%s: %d rows, want %d", sql, len(got), len(want))
					}
					for i := range got {
						if got[i].ID != want[i].ID {
							t.Fatalf("%s: row %d is %s, want %s", sql, i, got[i].ID, want[i].ID)
						}
					}
					check(sql, got)
				}
			}
			if order != "" {
				top := runQuery(t, c, "SELECT TOP 3 * FROM c"+where+order)
				for i := range top {
					if top[i].ID != all[i].ID {
						t.Fatalf("TOP 3%s%s: row %d is %s, want %s", where, order, i, top[i].ID, all[i].ID)
					}
				}
			}
		}
	}
}

// TestSeenIDs checks the set an ordered walk keeps of the ids it took,
// across its switch from a list to a map.
func TestSeenIDs(t *testing.T) {
	var s seenIDs
	for i := range 3 * seenFew {
		id := fmt.Sprint("id", i)
		if s.add(id) {
			t.Fatalf("%s was seen before it was added", id)
		}
		for j := 0; j <= i; j += 7 {
			if !s.add(fmt.Sprint("id", j)) {
				t.Fatalf("after %d adds: id%d not seen", i+1, j)
			}
		}
	}
}
