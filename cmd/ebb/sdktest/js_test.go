package sdktest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestJavaScriptSDKSmoke runs js/smoke.mjs, the JavaScript SDK
// (@azure/cosmos, pinned in js/package-lock.json) against `ebb serve`. It
// installs the SDK with `npm ci` unless js/node_modules already holds the
// pinned version. Without node and npm on PATH it skips, saying so, unless
// EBB_REQUIRE_NODE=1 (set by .ci/run) makes that a failure.
func TestJavaScriptSDKSmoke(t *testing.T) {
	t.Parallel()
	missing := func(tool string) {
		msg := tool + " not found on PATH: the JavaScript SDK smoke test needs Node.js 20+ and npm"
		if os.Getenv("EBB_REQUIRE_NODE") == "1" {
			t.Fatal(msg + " (EBB_REQUIRE_NODE=1)")
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		missing("npm")
	}
	dir, err := filepath.Abs("js")
	if err != nil {
		t.Fatal(err)
	}
	if !jsInstalled(t, dir) {
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--prefer-offline")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	s := startServer(t)
	cmd := exec.Command(node, "smoke.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "EBB_ENDPOINT="+s.Endpoint)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node smoke.mjs against %s: %v\n%s", s.Endpoint, err, out)
	}
	t.Logf("%s", out)
}

// jsInstalled reports whether js/node_modules holds the @azure/cosmos
// version that js/package.json pins.
func jsInstalled(t testing.TB, dir string) bool {
	t.Helper()
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatalf("js/package.json: %v", err)
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatalf("js/package.json: %v", err)
	}
	var inst struct{ Version string }
	b, err = os.ReadFile(filepath.Join(dir, "node_modules", "@azure", "cosmos", "package.json"))
	if err != nil || json.Unmarshal(b, &inst) != nil {
		return false
	}
	return inst.Version != "" && inst.Version == pkg.Dependencies["@azure/cosmos"]
}
