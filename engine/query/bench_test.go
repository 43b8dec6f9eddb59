package query

import (
	"encoding/json"
	"testing"
)

var benchDoc = []byte(`{"id":"user-000123","_ts":1700000000,"_etag":"\"0000d31c-0000-0700-0000-65f1c2a40000\"","ttl":3600,
"user":{"name":"Ada Lovelace","email":"ada@example.com","age":36,"verified":true},
"tags":["admin","beta","eu-west"],"score":98.25,"session":{"device":"mobile","ip":"10.0.0.12","started":1699999000},
"items":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}]}`)

func BenchmarkDecode(b *testing.B) {
	b.SetBytes(int64(len(benchDoc)))
	for b.Loop() {
		if _, err := Decode(benchDoc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeEncodingJSON(b *testing.B) {
	b.SetBytes(int64(len(benchDoc)))
	for b.Loop() {
		var v any
		if err := json.Unmarshal(benchDoc, &v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMatch(b *testing.B) {
	q, _ := Parse("SELECT * FROM c WHERE c.user.age > 30 AND ARRAY_CONTAINS(c.tags, 'beta') AND STARTSWITH(c.user.name, 'Ada')")
	bound, _ := q.Bind(nil)
	doc, _ := Decode(benchDoc)
	for b.Loop() {
		if !bound.Match(doc) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkTerms(b *testing.B) {
	doc, _ := Decode(benchDoc)
	m, _ := PathPolicy{}.Compile()
	var dst []Term
	for b.Loop() {
		dst = Terms(doc, m.Indexed, dst[:0])
	}
}
