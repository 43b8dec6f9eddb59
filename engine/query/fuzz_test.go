package query

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParse: Parse never panics; a query it accepts binds without
// parameters or fails with ErrInvalidQuery, and a bound query evaluates,
// plans and projects without panicking. The seed corpus is in
// testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add("SELECT * FROM c WHERE c.a = 1")
	docs := decodeAll(f, evalDocs)
	f.Fuzz(func(t *testing.T, sql string) {
		q, err := Parse(sql)
		if err != nil {
			if !errors.Is(err, ErrInvalidQuery) {
				t.Fatalf("Parse(%q): %v does not match ErrInvalidQuery", sql, err)
			}
			return
		}
		b, err := q.Bind(nil)
		if err != nil {
			if !errors.Is(err, ErrInvalidQuery) {
				t.Fatalf("Bind(%q): %v does not match ErrInvalidQuery", sql, err)
			}
			return
		}
		_ = b.Run(docs)
		_ = b.Plan(func(string) bool { return true }).String()
	})
}

// FuzzDecode: Decode never panics, accepts exactly what json.Unmarshal
// accepts, decodes the same value, and AppendJSON round-trips.
func FuzzDecode(f *testing.F) {
	for _, s := range append([]string{`{"a":[1,2.5e3,-0,"x\u00e9\ud800",true,false,null,{}]}`, `[`, `"\ud83d\ude00"`, "\"\xff\"", `1e400`, ` {"a":1,"a":2} `}, evalDocs...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data)
		var std any
		stdErr := json.Unmarshal(data, &std)
		if (err == nil) != (stdErr == nil) {
			t.Fatalf("Decode(%q) error %v, json.Unmarshal error %v", data, err, stdErr)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidJSON) {
				t.Fatalf("Decode error %v does not match ErrInvalidJSON", err)
			}
			return
		}
		want, err := FromGo(std)
		if err != nil {
			t.Fatalf("FromGo(%v): %v", std, err)
		}
		if !Equal(v, want) {
			t.Fatalf("Decode(%q) = %v, encoding/json says %v", data, v, want)
		}
		again, err := Decode(v.AppendJSON(nil))
		if err != nil || !Equal(again, v) {
			t.Fatalf("round trip of %v: %v, %v", v, again, err)
		}
	})
}
