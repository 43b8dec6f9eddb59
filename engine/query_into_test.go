package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"unsafe"
)

// TestQueryInto runs every shape of query through Query and QueryInto, in a
// container where some items have expired, some are in the memtable and
// some in a segment: the rows must be the same, field for field and byte
// for byte. The whole-document rows of QueryInto share one buffer, and
// bodies larger than a query's slab go there too. Items written while an
// ordered QueryInto runs (placed anew, yielded between the rows rendered
// into the buffer) leave every row whole.
func TestQueryInto(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock(t0)
	db := openTest(t, t.TempDir(), clk, func(o *Options) { o.CompactionInterval = -1 })
	defer db.Close()
	c := mustCreateContainer(t, db, ContainerProperties{ID: "q", DefaultTTL: TTL(-1)})
	for i := range 300 {
		pad := 50
		if i%50 == 7 {
			pad = 2 * bodySlab // rendered on its own by Query
		}
		doc := fmt.Sprintf(`{"id":"i%03d","n":%d,"k":%d,"pad":"%0*d"}`, i, (i*37)%300, i%4, pad, i)
		switch {
		case i%5 == 0:
			doc = fmt.Sprintf(`{"id":"i%03d","n":%d,"k":%d,"ttl":10}`, i, (i*37)%300, i%4) // expires below
		case i%11 == 0:
			doc = fmt.Sprintf(`{"id":"i%03d","k":%d}`, i, i%4) // no n: ORDER BY places it
		}
		if _, err := c.Create(ctx, []byte(doc)); err != nil {
			t.Fatal(err)
		}
		if i == 150 {
			forceSeal(t, db)
		}
	}
	clk.Advance(20)
	waitIndexed(t, c)
	// inBuf: every row is a whole document the index alone decided, so
	// every body is rendered into the buffer. Other rows (ORDER BY's items
	// without the property, projections, counts) get bodies of their own.
	queries := []struct {
		sql   string
		inBuf bool
	}{
		{`SELECT * FROM c`, true},
		{`SELECT * FROM c WHERE c.k = 1`, true},
		{`SELECT * FROM c WHERE c.n >= 100 AND c.n < 200`, true},
		{`SELECT TOP 10 * FROM c ORDER BY c.n DESC`, true},
		{`SELECT * FROM c ORDER BY c.pad`, false},
		{`SELECT * FROM c WHERE c.k = 2 ORDER BY c.n`, false},
		{`SELECT * FROM c ORDER BY c.n OFFSET 5 LIMIT 40`, false},
		{`SELECT c.id, c.n FROM c WHERE c.n > 150`, false},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.k = 3`, false},
	}
	for _, q := range queries {
		sql := q.sql
		want := runQuery(t, c, sql)
		if len(want) == 0 {
			t.Fatalf("%s: no rows", sql)
		}
		var buf []byte
		var store unsafe.Pointer // the buffer's storage once grown to fit every row
		for round := range 2 {
			i := 0
			for it, err := range c.QueryInto(ctx, sql, buf) {
				if err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
				if i >= len(want) {
					t.Fatalf("%s: more rows than Query's %d", sql, len(want))
				}
				w := want[i]
				if it.ID != w.ID || it.ETag != w.ETag || it.TS != w.TS || it.ExpiresAt != w.ExpiresAt || !bytes.Equal(it.Body, w.Body) {
					t.Fatalf("%s: row %d: %+v, Query's %+v", sql, i, it, w)
				}
				if q.inBuf && round == 1 && unsafe.Pointer(unsafe.SliceData(it.Body)) != store {
					t.Fatalf("%s: row %d is not in the buffer passed back", sql, i)
				}
				if q.inBuf && cap(it.Body) > cap(buf) {
					buf = it.Body // the largest, for the next round
				}
				i++
			}
			if i != len(want) {
				t.Fatalf("%s: %d rows, Query's %d", sql, i, len(want))
			}
			if round == 0 && q.inBuf {
				store = unsafe.Pointer(unsafe.SliceData(buf))
			}
		}
	}

	const sql = `SELECT * FROM c ORDER BY c.n`
	rows := 0
	for it, err := range c.QueryInto(ctx, sql, nil) {
		if err != nil {
			t.Fatal(err)
		}
		var doc struct{ ID string }
		if err := json.Unmarshal(it.Body, &doc); err != nil || doc.ID != it.ID {
			t.Fatalf("row %d (%s): body %s, %v", rows, it.ID, it.Body, err)
		}
		if rows%3 == 0 {
			// Move an item not yet read to the front, and one read back.
			for _, id := range []string{fmt.Sprintf("i%03d", 299-rows), it.ID} {
				if _, err := c.Upsert(ctx, fmt.Appendf(nil, `{"id":%q,"n":%d}`, id, -rows)); err != nil {
					t.Fatal(err)
				}
			}
		}
		rows++
	}
	if rows < 100 {
		t.Fatalf("%s: %d rows", sql, rows)
	}
}

// TestPartitionQueryInto: a partition's QueryInto yields what its Query
// does, and that of a key the container cannot have fails.
func TestPartitionQueryInto(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), newFakeClock(t0))
	defer db.Close()
	c := mustCreateContainer(t, db, ContainerProperties{ID: "k", PartitionKeyPath: "/tenant"})
	for i := range 60 {
		doc := fmt.Appendf(nil, `{"id":"i%02d","tenant":"t%d","n":%d}`, i, i%3, i)
		if _, err := c.Partition(StringKey(fmt.Sprint("t", i%3))).Upsert(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}
	p := c.Partition(StringKey("t1"))
	const sql = `SELECT * FROM c WHERE c.n >= 10 ORDER BY c.n DESC`
	var want, got []string
	for it, err := range p.Query(ctx, sql) {
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, it.ID+" "+string(it.Body))
	}
	for it, err := range p.QueryInto(ctx, sql, nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, it.ID+" "+string(it.Body))
	}
	if len(want) != 17 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("QueryInto: %d rows %v\nQuery: %d rows %v", len(got), got, len(want), want)
	}
	plain := mustCreateContainer(t, db, ContainerProperties{ID: "plain"})
	for _, err := range plain.Partition(StringKey("t1")).QueryInto(ctx, sql, nil) {
		if !errors.Is(err, ErrInvalidPartitionKey) {
			t.Fatalf("QueryInto of an invalid partition: %v", err)
		}
	}
}
