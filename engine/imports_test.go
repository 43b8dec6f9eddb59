package engine_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportRules checks the package layering that the repository's layout
// promises: the offline tools stay outside the engine, and the engine's
// internal packages stay below both.
func TestImportRules(t *testing.T) {
	const mod = "github.com/ebbdb/ebb/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, mod+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := make(map[string]map[string]bool) // package → everything it imports, directly or not
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		deps[f[0]] = make(map[string]bool)
		for _, d := range f[1:] {
			deps[f[0]][d] = true
		}
	}
	rules := []struct {
		pkg, forbidden, why string
	}{
		{"engine", "engine/tool", "the engine serves applications; the offline tools build on its files, not the other way round"},
		{"engine/tool", "engine", "the tools read files without opening a DB, and the engine's tests use them to check what they leave on disk"},
		{"engine/internal/dbfile", "engine", "the engine and the tools both import it"},
		{"engine/internal/dbfile", "engine/tool", "the engine and the tools both import it"},
		{"engine/internal/docfmt", "engine", "the engine and the tools both import it"},
		{"engine/internal/docfmt", "engine/tool", "the engine and the tools both import it"},
		{"segment", "engine", "the record format knows nothing of the engine"},
		{"index", "engine", "the index knows nothing of the engine"},
		{"compactor", "engine", "the compactor knows nothing of the engine"},
		{"policy", "engine", "the TTL rules know nothing of the engine"},
	}
	for _, r := range rules {
		d, ok := deps[mod+r.pkg]
		if !ok {
			t.Errorf("package %s is not in the module", r.pkg)
			continue
		}
		if d[mod+r.forbidden] {
			t.Errorf("%s imports %s: %s", r.pkg, r.forbidden, r.why)
		}
	}
}
