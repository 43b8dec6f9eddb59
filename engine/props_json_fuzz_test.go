package engine

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"
)

// FuzzContainerPropertiesJSON feeds ContainerProperties.UnmarshalJSON
// arbitrary bytes. It must never panic; an error must wrap
// ErrInvalidProperties; accepted properties must have a DefaultTTL of nil,
// -1 or 1..MaxInt32 and a known indexing mode, and must survive
// MarshalJSON and UnmarshalJSON unchanged, as valid JSON.
func FuzzContainerPropertiesJSON(f *testing.F) {
	for _, s := range []string{
		`{"id":"c","defaultTtl":3600,"indexingPolicy":{"indexingMode":"consistent"}}`,
		`{"id":"c","defaultTtl":-1}`,
		`{"id":"c","defaultTtl":null,"indexingPolicy":{"indexingMode":"none"}}`,
		`{"id":"c","indexingPolicy":{"indexingMode":"lazy"}}`,
		`{"id":"c","defaultTtl":0}`,
		`{"id":"c","defaultTtl":2147483648}`,
		`{"id":"c","defaultTtl":1.5}`,
		`{"id":"c","defaultTtl":1e3}`,
		`{"id":"c","defaultTtl":"10"}`,
		`{"id":"c","indexingPolicy":{"indexingMode":"Consistent"}}`,
		`{"id":"c","indexingPolicy":null}`,
		`{"id":"c","changeFeedPolicy":{"retentionDuration":1440}}`,
		`{"id":"c","changeFeedPolicy":{"retentionDuration":-1}}`,
		`{"id":"c","changeFeedPolicy":{"retentionDuration":1.5}}`,
		`{"id":"c","changeFeedPolicy":{"retentionDuration":"x"}}`,
		`{"id":"","defaultTtl":-2}`,
		`[]`, `null`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p ContainerProperties
		if err := json.Unmarshal(b, &p); err != nil {
			var se *json.SyntaxError
			if !errors.Is(err, ErrInvalidProperties) && !errors.As(err, &se) {
				t.Fatalf("error %q wraps neither ErrInvalidProperties nor a JSON syntax error", err)
			}
			if err := p.UnmarshalJSON(b); err != nil && !errors.Is(err, ErrInvalidProperties) {
				t.Fatalf("UnmarshalJSON error %q does not wrap ErrInvalidProperties", err)
			}
			return
		}
		if d := p.DefaultTTL; d != nil && *d != -1 && (*d < 1 || *d > math.MaxInt32) {
			t.Fatalf("accepted defaultTtl %d", *d)
		}
		if p.Indexing > IndexingNone {
			t.Fatalf("accepted indexing mode %d", p.Indexing)
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("accepted properties %+v do not marshal: %v", p, err)
		}
		if !json.Valid(out) {
			t.Fatalf("MarshalJSON wrote invalid JSON %q", out)
		}
		var q ContainerProperties
		if err := json.Unmarshal(out, &q); err != nil {
			t.Fatalf("%s does not unmarshal back: %v", out, err)
		}
		if p.ChangeFeedRetention < 0 || p.ChangeFeedRetention%time.Minute != 0 {
			t.Fatalf("accepted changeFeedRetention %v", p.ChangeFeedRetention)
		}
		if q.ID != p.ID || q.Indexing != p.Indexing || !sameTTL(q.DefaultTTL, p.DefaultTTL) || q.ChangeFeedRetention != p.ChangeFeedRetention {
			t.Fatalf("round trip through %s changed %+v to %+v", out, p, q)
		}
	})
}
