package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// vectors mirrors testdata/ttl-matrix.json (the TTL rules'
// machine-readable cases), read at test time so the cases are never retyped.
type vectors struct {
	Matrix []struct {
		Name        string  `json:"name"`
		DefaultTTL  *int64  `json:"defaultTtl"`
		ItemTTLJSON *string `json:"itemTtlJson"`
		VisibleAt   []int64 `json:"visibleAt"`
		InvisibleAt []int64 `json:"invisibleAt"`
	} `json:"matrix"`
	ItemTTLJSON struct {
		Valid   []string `json:"valid"`
		Invalid []string `json:"invalid"`
	} `json:"itemTtlJson"`
	DefaultTTL struct {
		Valid   []*int64 `json:"valid"`
		Invalid []*int64 `json:"invalid"`
	} `json:"defaultTtl"`
}

var vectorsPath = filepath.Join("..", "testdata", "ttl-matrix.json")

func loadVectors(tb testing.TB) *vectors {
	tb.Helper()
	b, err := os.ReadFile(vectorsPath)
	if err != nil {
		tb.Fatalf("reading test vectors: %v", err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		tb.Fatalf("decoding %s: %v", vectorsPath, err)
	}
	if len(v.Matrix) == 0 || len(v.ItemTTLJSON.Valid) == 0 || len(v.ItemTTLJSON.Invalid) == 0 ||
		len(v.DefaultTTL.Valid) == 0 || len(v.DefaultTTL.Invalid) == 0 {
		tb.Fatalf("%s: a section is missing or empty", vectorsPath)
	}
	return &v
}
