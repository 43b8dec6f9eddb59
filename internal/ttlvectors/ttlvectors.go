// Package ttlvectors holds the TTL rules' machine-readable cases,
// ttl-matrix.json, embedded so that every package's tests read the same
// file without a path relative to their directory.
package ttlvectors

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

//go:embed ttl-matrix.json
var matrixJSON []byte

// Vectors is ttl-matrix.json decoded.
type Vectors struct {
	// Matrix: a container with DefaultTTL, an item whose "ttl" is
	// ItemTTLJSON (absent when nil); the item is visible VisibleAt seconds
	// after its _ts and invisible InvisibleAt seconds after.
	Matrix []struct {
		Name        string  `json:"name"`
		DefaultTTL  *int64  `json:"defaultTtl"`
		ItemTTLJSON *string `json:"itemTtlJson"`
		VisibleAt   []int64 `json:"visibleAt"`
		InvisibleAt []int64 `json:"invisibleAt"`
	} `json:"matrix"`
	// ItemTTLJSON: the JSON values an item's "ttl" may and may not take.
	ItemTTLJSON struct {
		Valid   []string `json:"valid"`
		Invalid []string `json:"invalid"`
	} `json:"itemTtlJson"`
	// DefaultTTL: the values a container's DefaultTTL may (nil: absent)
	// and may not take.
	DefaultTTL struct {
		Valid   []*int64 `json:"valid"`
		Invalid []*int64 `json:"invalid"`
	} `json:"defaultTtl"`
}

// Load decodes the vectors, and fails if a section is missing or empty.
func Load() (*Vectors, error) {
	var v Vectors
	if err := json.Unmarshal(matrixJSON, &v); err != nil {
		return nil, fmt.Errorf("ttl-matrix.json: %w", err)
	}
	if len(v.Matrix) == 0 || len(v.ItemTTLJSON.Valid) == 0 || len(v.ItemTTLJSON.Invalid) == 0 ||
		len(v.DefaultTTL.Valid) == 0 || len(v.DefaultTTL.Invalid) == 0 {
		return nil, fmt.Errorf("ttl-matrix.json: a section is missing or empty")
	}
	return &v, nil
}

// TB is the part of testing.TB that MustLoad uses.
type TB interface {
	Helper()
	Fatal(args ...any)
}

// MustLoad is Load for tests: it fails tb on an error.
func MustLoad(tb TB) *Vectors {
	tb.Helper()
	v, err := Load()
	if err != nil {
		tb.Fatal(err)
	}
	return v
}
