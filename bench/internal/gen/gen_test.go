package gen

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"testing"
)

func TestDocExactSizeAndValidJSON(t *testing.T) {
	for _, size := range []int{MinSize, 1024, 4096} {
		g := New(size)
		for _, tc := range []struct {
			n   uint64
			ttl int32
		}{{0, 0}, {1, 3600}, {4095, -1}, {123456789, 2147483647}, {7, 1}} {
			key := Key("doc-", tc.n)
			d := g.Doc(key, tc.ttl, tc.n)
			if len(d) != size {
				t.Fatalf("size %d: doc %d is %d bytes: %s", size, tc.n, len(d), d)
			}
			var m map[string]any
			if err := json.Unmarshal(d, &m); err != nil {
				t.Fatalf("size %d doc %d: %v\n%s", size, tc.n, err, d)
			}
			if m["id"] != key {
				t.Errorf("id %v, want %q", m["id"], key)
			}
			ttl, has := m["ttl"]
			if tc.ttl == 0 && has {
				t.Errorf("ttl present for ttl 0: %v", ttl)
			}
			if tc.ttl != 0 && ttl != float64(tc.ttl) {
				t.Errorf("ttl %v, want %d", ttl, tc.ttl)
			}
			if _, ok := m["user"].(map[string]any); !ok {
				t.Errorf("no nested user object")
			}
		}
	}
}

func TestDocFreshSlice(t *testing.T) {
	g := New(1024)
	a := g.Doc("a", 0, 1)
	b := g.Doc("a", 0, 1)
	if !bytes.Equal(a, b) {
		t.Fatal("same inputs, different documents")
	}
	a[10] = 'X'
	if bytes.Equal(a, b) {
		t.Fatal("documents share memory")
	}
	if bytes.Equal(g.Doc("a", 0, 1), g.Doc("a", 0, 2)) {
		t.Fatal("different bodies are equal")
	}
}

func TestKey(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		n      uint64
		want   string
	}{{"doc-", 0, "doc-000000000000"}, {"doc-", 42, "doc-000000000042"}, {"x", 1234567890123456, "x1234567890123456"}} {
		if got := Key(tc.prefix, tc.n); got != tc.want {
			t.Errorf("Key(%q, %d) = %q, want %q", tc.prefix, tc.n, got, tc.want)
		}
	}
	if len(Key("doc-", 99)) != KeyLen {
		t.Errorf("key length %d", len(Key("doc-", 99)))
	}
}

// TestRealisticRedundancy: a block of documents compresses like real JSON
// (between 2x and 10x with DEFLATE), not like random bytes nor like copies.
func TestRealisticRedundancy(t *testing.T) {
	g := New(1024)
	var raw bytes.Buffer
	for n := uint64(0); n < 64; n++ {
		raw.Write(g.Doc(Key("doc-", n), 3600, n))
	}
	var z bytes.Buffer
	w, _ := flate.NewWriter(&z, flate.DefaultCompression)
	w.Write(raw.Bytes())
	w.Close()
	ratio := float64(raw.Len()) / float64(z.Len())
	t.Logf("64 docs: %d bytes, deflate %d (%.2fx)", raw.Len(), z.Len(), ratio)
	if ratio < 2 || ratio > 10 {
		t.Errorf("compression ratio %.2f outside [2, 10]", ratio)
	}
}

func BenchmarkDoc(b *testing.B) {
	g := New(1024)
	for i := 0; b.Loop(); i++ {
		g.Doc("doc-000000000001", 3600, uint64(i))
	}
}

func TestShared(t *testing.T) {
	if Shared(700) != Shared(700) || Shared(700) == Shared(701) || Shared(700).Size() != 700 {
		t.Fatal("Shared does not cache by size")
	}
}

func TestQueryDocExactSizeAndFields(t *testing.T) {
	for _, size := range []int{QueryMinSize, 750, 2048} {
		g := NewQueryDocs(size)
		for _, f := range []QueryFields{
			{ID: Key("q-", 0), User: "user-00000", N: 0, Cat: "cat-1"},
			{ID: Key("q-", 123456789), TTL: 2147483647, User: "user-99999", N: 1 << 40, Cat: "gone-4", Body: 4095},
			{ID: "x", TTL: -1, User: "u", N: -5, Cat: "c", Body: 7},
		} {
			d := g.Doc(f)
			if len(d) != size {
				t.Fatalf("size %d: doc is %d bytes: %s", size, len(d), d)
			}
			var m map[string]any
			if err := json.Unmarshal(d, &m); err != nil {
				t.Fatalf("size %d: %v\n%s", size, err, d)
			}
			if m["id"] != f.ID || m["user"] != f.User || m["n"] != float64(f.N) || m["cat"] != f.Cat {
				t.Errorf("fields %v, want %+v", m, f)
			}
			if ttl, has := m["ttl"]; (f.TTL == 0) == has || (has && ttl != float64(f.TTL)) {
				t.Errorf("ttl %v (present %v), want %d", ttl, has, f.TTL)
			}
			if _, ok := m["customer"].(map[string]any); !ok {
				t.Errorf("no nested customer object")
			}
		}
	}
	g := NewQueryDocs(750)
	a, b := g.Doc(QueryFields{ID: "a", Body: 1}), g.Doc(QueryFields{ID: "a", Body: 1})
	a[3] = 'X'
	if bytes.Equal(a, b) || bytes.Equal(g.Doc(QueryFields{ID: "a", Body: 1}), g.Doc(QueryFields{ID: "a", Body: 2})) {
		t.Fatal("documents share memory, or different bodies are equal")
	}
}
