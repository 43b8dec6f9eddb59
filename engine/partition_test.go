package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ebbdb/ebb/engine"
)

// keyed creates a container "k" with partition key path path.
func keyed(t *testing.T, db *engine.DB, path string) *engine.Container {
	t.Helper()
	return mustCreateContainer(t, db, engine.ContainerProperties{ID: "k", PartitionKeyPath: path, DefaultTTL: engine.TTL(-1)})
}

// itemNames lists items as "key/id".
func itemNames(t *testing.T, seq func(func(engine.Item, error) bool)) []string {
	t.Helper()
	var out []string
	for it, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, it.PartitionKey.String()+"/"+it.ID)
	}
	return out
}

func TestPartitionSameIDTwoPartitions(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), newFakeClock(t0))
	defer db.Close()
	c := keyed(t, db, "/tenant")
	a, b := c.Partition(engine.StringKey("a")), c.Partition(engine.StringKey("b"))
	ia, err := a.Create(ctx, []byte(`{"id":"x","tenant":"a","n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if ia.ID != "x" || ia.PartitionKey != engine.StringKey("a") {
		t.Fatalf("created %q %v", ia.ID, ia.PartitionKey)
	}
	if _, err := b.Create(ctx, []byte(`{"id":"x","tenant":"b","n":2}`)); err != nil {
		t.Fatalf("same id in another partition: %v", err)
	}
	// Conflicts are per partition.
	if _, err := a.Create(ctx, []byte(`{"id":"x","tenant":"a"}`)); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("second create in a: %v, want ErrConflict", err)
	}
	// Container.Create takes the key from the document.
	if _, err := c.Create(ctx, []byte(`{"id":"x","tenant":"b"}`)); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("Container.Create in b: %v, want ErrConflict", err)
	}
	if _, err := c.Create(ctx, []byte(`{"id":"x","tenant":"c","n":3}`)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p    *engine.Partition
		want float64
	}{{a, 1}, {b, 2}, {c.Partition(engine.StringKey("c")), 3}} {
		it, err := tc.p.Read(ctx, "x")
		if err != nil {
			t.Fatal(err)
		}
		if n := bodyField(t, it, "n"); n != tc.want || it.PartitionKey != tc.p.Key() {
			t.Errorf("Read in %v: n %v key %v, want %v", tc.p.Key(), n, it.PartitionKey, tc.want)
		}
	}
	if _, err := c.Partition(engine.StringKey("d")).Read(ctx, "x"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Read in empty partition: %v", err)
	} else if !strings.Contains(err.Error(), `"x" (partition key ["d"])`) {
		t.Errorf("not found error %q does not name the key", err)
	}
	// IfMatch is per partition: a's etag does not match b's item.
	if _, err := b.Replace(ctx, []byte(`{"id":"x","tenant":"b"}`), engine.IfMatch(ia.ETag)); !errors.Is(err, engine.ErrPreconditionFailed) {
		t.Errorf("Replace in b with a's etag: %v", err)
	}
	if _, err := a.Replace(ctx, []byte(`{"id":"x","tenant":"a","n":10}`), engine.IfMatch(ia.ETag)); err != nil {
		t.Errorf("Replace in a with a's etag: %v", err)
	}
	if err := b.Delete(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Read(ctx, "x"); err != nil {
		t.Errorf("delete in b removed a's item: %v", err)
	}
	if got, want := itemNames(t, c.Items(ctx)), []string{`["a"]/x`, `["c"]/x`}; !slices.Equal(got, want) {
		t.Errorf("Items = %v, want %v", got, want)
	}
	if got, want := itemNames(t, a.Items(ctx)), []string{`["a"]/x`}; !slices.Equal(got, want) {
		t.Errorf("a.Items = %v, want %v", got, want)
	}
	if st := c.Stats(); st.Items != 2 {
		t.Errorf("Stats.Items = %d, want 2", st.Items)
	}
}

func TestPartitionRules(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), newFakeClock(t0))
	defer db.Close()
	c := keyed(t, db, "/address/city")
	plain := mustCreateContainer(t, db, engine.ContainerProperties{ID: "plain"})
	if _, err := plain.Create(ctx, []byte(`{"id":"p"}`)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		do   func() error
		want error // nil: success
		msg  string
	}{
		{"Read without key", func() error { _, err := c.Read(ctx, "a"); return err }, engine.ErrInvalidPartitionKey, "Container.Partition(key).Read"},
		{"Delete without key", func() error { return c.Delete(ctx, "a") }, engine.ErrInvalidPartitionKey, "Partition"},
		{"NewBatch without key", func() error {
			_, err := c.ExecuteBatch(ctx, c.NewBatch().Upsert([]byte(`{"id":"a"}`)))
			return err
		}, engine.ErrInvalidPartitionKey, "Partition"},
		{"zero batch", func() error {
			var b engine.Batch
			_, err := c.ExecuteBatch(ctx, b.Upsert([]byte(`{"id":"a"}`)))
			return err
		}, engine.ErrInvalidPartitionKey, "Partition"},
		{"mismatch", func() error {
			_, err := c.Partition(engine.StringKey("y")).Create(ctx, []byte(`{"id":"a","address":{"city":"x"}}`))
			return err
		}, engine.ErrInvalidPartitionKey, `item "a": partition key ["x"] in the document differs from ["y"] named`},
		{"absent is None, not null", func() error {
			_, err := c.Partition(engine.NullKey()).Create(ctx, []byte(`{"id":"a"}`))
			return err
		}, engine.ErrInvalidPartitionKey, `[{}] in the document differs from [null]`},
		{"object at key path", func() error {
			_, err := c.Create(ctx, []byte(`{"id":"a","address":{"city":{"n":1}}}`))
			return err
		}, engine.ErrInvalidPartitionKey, "object"},
		{"array at key path", func() error {
			_, err := c.Create(ctx, []byte(`{"id":"a","address":{"city":[1]}}`))
			return err
		}, engine.ErrInvalidPartitionKey, "array"},
		{"long string key", func() error {
			_, err := c.Create(ctx, fmt.Appendf(nil, `{"id":"a","address":{"city":"%s"}}`, strings.Repeat("x", 3000)))
			return err
		}, engine.ErrInvalidPartitionKey, "longer than"},
		{"None key, no address", func() error {
			_, err := c.Partition(engine.NoneKey()).Create(ctx, []byte(`{"id":"none"}`))
			return err
		}, nil, ""},
		{"None key, address not an object", func() error {
			_, err := c.Partition(engine.NoneKey()).Create(ctx, []byte(`{"id":"none2","address":5}`))
			return err
		}, nil, ""},
		{"null key", func() error {
			_, err := c.Partition(engine.NullKey()).Create(ctx, []byte(`{"id":"null","address":{"city":null}}`))
			return err
		}, nil, ""},
		{"number 5.0 is 5", func() error {
			if _, err := c.Create(ctx, []byte(`{"id":"five","address":{"city":5.0}}`)); err != nil {
				return err
			}
			it, err := c.Partition(engine.NumberKey(5)).Read(ctx, "five")
			if err == nil && it.PartitionKey.Value() != 5.0 {
				return fmt.Errorf("key %v", it.PartitionKey)
			}
			return err
		}, nil, ""},
		{"5e0 conflicts with 5", func() error {
			_, err := c.Partition(engine.NumberKey(5)).Create(ctx, []byte(`{"id":"five","address":{"city":5e0}}`))
			return err
		}, engine.ErrConflict, `"five" (partition key [5])`},
		{"bool key", func() error {
			_, err := c.Partition(engine.BoolKey(true)).Upsert(ctx, []byte(`{"id":"t","address":{"city":true}}`))
			return err
		}, nil, ""},
		{"NaN key", func() error {
			_, err := c.Partition(engine.NumberKey(nan())).Read(ctx, "a")
			return err
		}, engine.ErrInvalidPartitionKey, "not finite"},
		{"plain container, None partition", func() error {
			it, err := plain.Partition(engine.NoneKey()).Read(ctx, "p")
			if err == nil && (it.ID != "p" || !it.PartitionKey.IsNone()) {
				return fmt.Errorf("read %q %v", it.ID, it.PartitionKey)
			}
			return err
		}, nil, ""},
		{"plain container, other partition", func() error {
			_, err := plain.Partition(engine.StringKey("p")).Read(ctx, "p")
			return err
		}, engine.ErrInvalidPartitionKey, "no partition key path"},
		{"batch of another container", func() error {
			_, err := plain.ExecuteBatch(ctx, c.Partition(engine.StringKey("x")).NewBatch().Delete("a"))
			return err
		}, engine.ErrInvalidPartitionKey, "a partition of container \"k\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("error %v", err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("error %v, want %v", err, tc.want)
			case tc.want != nil && !strings.Contains(err.Error(), tc.msg):
				t.Fatalf("error %q does not say %q", err, tc.msg)
			}
		})
	}
	got := itemNames(t, c.Items(ctx))
	want := []string{"[{}]/none", "[{}]/none2", "[null]/null", "[true]/t", "[5]/five"}
	if !slices.Equal(got, want) {
		t.Errorf("Items = %v, want %v (key order None, null, false, true, numbers, strings)", got, want)
	}
}

func nan() float64 {
	var z float64
	return z / z
}

func TestPartitionKeyPathProperties(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openTest(t, dir, newFakeClock(t0))
	for _, bad := range []struct{ path, msg string }{
		{"tenant", `must start with "/"`},
		{"/", "empty segment"},
		{"/a//b", "empty segment"},
		{"/a,/b", "hierarchical"},
		{"/a/*", "wildcards"},
		{"/tags/[]", "brackets"},
		{"/_ts", "system property"},
		{"/_etag", "system property"},
	} {
		_, err := db.CreateContainer(ctx, engine.ContainerProperties{ID: "bad", PartitionKeyPath: bad.path})
		if !errors.Is(err, engine.ErrInvalidProperties) || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("path %q: %v, want ErrInvalidProperties saying %q", bad.path, err, bad.msg)
		}
	}
	c := keyed(t, db, "/tenant")
	p := c.Properties()
	p.PartitionKeyPath = "/other"
	if err := c.SetProperties(ctx, p); !errors.Is(err, engine.ErrInvalidProperties) || !strings.Contains(err.Error(), "partition key path") {
		t.Errorf("SetProperties changing the path: %v", err)
	}
	p.PartitionKeyPath = ""
	if err := c.SetProperties(ctx, p); !errors.Is(err, engine.ErrInvalidProperties) {
		t.Errorf("SetProperties dropping the path: %v", err)
	}
	p.PartitionKeyPath = "/tenant"
	p.DefaultTTL = engine.TTL(60)
	if err := c.SetProperties(ctx, p); err != nil {
		t.Errorf("SetProperties keeping the path: %v", err)
	}
	if _, err := c.Create(ctx, []byte(`{"id":"a","tenant":"t"}`)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = openTest(t, dir, newFakeClock(t0))
	defer db.Close()
	c, err := db.Container("k")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Properties().PartitionKeyPath; got != "/tenant" {
		t.Fatalf("after reopen PartitionKeyPath = %q", got)
	}
	if _, err := c.Partition(engine.StringKey("t")).Read(ctx, "a"); err != nil {
		t.Fatalf("read after reopen: %v", err)
	}
	if _, err := c.Read(ctx, "a"); !errors.Is(err, engine.ErrInvalidPartitionKey) {
		t.Fatalf("Read without key after reopen: %v", err)
	}

	// The Cosmos JSON shape.
	b, err := c.Properties().MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"partitionKey":{"paths":["/tenant"],"kind":"Hash","version":2}`) {
		t.Errorf("MarshalJSON = %s", b)
	}
	var back engine.ContainerProperties
	if err := back.UnmarshalJSON(b); err != nil || back.PartitionKeyPath != "/tenant" {
		t.Errorf("UnmarshalJSON: %v %q", err, back.PartitionKeyPath)
	}
	for _, bad := range []string{
		`{"id":"c","partitionKey":{"paths":["/a","/b"],"kind":"MultiHash","version":2}}`,
		`{"id":"c","partitionKey":{"paths":["/a"],"kind":"MultiHash","version":2}}`,
		`{"id":"c","partitionKey":{"paths":["/a"],"kind":"Range"}}`,
		`{"id":"c","partitionKey":{"paths":["a"]}}`,
	} {
		var p engine.ContainerProperties
		if err := p.UnmarshalJSON([]byte(bad)); !errors.Is(err, engine.ErrInvalidProperties) {
			t.Errorf("UnmarshalJSON(%s) = %v, want ErrInvalidProperties", bad, err)
		}
	}
}

func TestParsePartitionKey(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want engine.PartitionKey
		str  string
	}{
		{`["a"]`, engine.StringKey("a"), `["a"]`},
		{` [ "a\u00e9<" ] `, engine.StringKey("aé<"), `["aé<"]`},
		{`[5]`, engine.NumberKey(5), `[5]`},
		{`[5.0]`, engine.NumberKey(5), `[5]`},
		{`[-0]`, engine.NumberKey(0), `[0]`},
		{`[1.5e300]`, engine.NumberKey(1.5e300), `[1.5e+300]`},
		{`[true]`, engine.BoolKey(true), `[true]`},
		{`[false]`, engine.BoolKey(false), `[false]`},
		{`[null]`, engine.NullKey(), `[null]`},
		{`[{}]`, engine.NoneKey(), `[{}]`},
		{`[]`, engine.NoneKey(), `[{}]`},
	} {
		k, err := engine.ParsePartitionKey([]byte(tc.in))
		if err != nil {
			t.Errorf("ParsePartitionKey(%s): %v", tc.in, err)
			continue
		}
		if k != tc.want || k.String() != tc.str {
			t.Errorf("ParsePartitionKey(%s) = %v, want %v", tc.in, k, tc.str)
		}
	}
	for _, bad := range []string{``, `"a"`, `["a","b"]`, `[{"a":1}]`, `[[1]]`, `[1e400]`, `{}`, `[nul]`, "[\"\xff\"]"} {
		if _, err := engine.ParsePartitionKey([]byte(bad)); !errors.Is(err, engine.ErrInvalidPartitionKey) {
			t.Errorf("ParsePartitionKey(%q) = %v, want ErrInvalidPartitionKey", bad, err)
		}
	}
	if v := engine.NoneKey().Value(); v != nil || !engine.NoneKey().IsNone() || engine.NullKey().IsNone() {
		t.Errorf("None: Value %v", v)
	}
}

// TestPartitionKeyPathSpellings: the key may be the id itself (/id), and
// the document may spell the key path's names with escapes.
func TestPartitionKeyPathSpellings(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), newFakeClock(t0))
	defer db.Close()
	byID := mustCreateContainer(t, db, engine.ContainerProperties{ID: "byid", PartitionKeyPath: "/id"})
	if _, err := byID.Create(ctx, []byte(`{"id":"a"}`)); err != nil {
		t.Fatal(err)
	}
	if it, err := byID.Partition(engine.StringKey("a")).Read(ctx, "a"); err != nil || it.PartitionKey != engine.StringKey("a") {
		t.Errorf("/id: %v %v", it.PartitionKey, err)
	}
	if _, err := byID.Partition(engine.StringKey("b")).Create(ctx, []byte(`{"id":"a"}`)); !errors.Is(err, engine.ErrInvalidPartitionKey) {
		t.Errorf("/id with another key: %v", err)
	}
	nested := mustCreateContainer(t, db, engine.ContainerProperties{ID: "nested", PartitionKeyPath: "/a b/c"})
	if _, err := nested.Create(ctx, []byte(`{"id":"x","a\u0020b":{"\u0063":"v","d":1}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := nested.Partition(engine.StringKey("v")).Read(ctx, "x"); err != nil {
		t.Errorf("escaped names: %v", err)
	}
}
