package sdktest

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const azcosmosModule = "github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

// expectation is one line of emulator_tests.txt.
type expectation struct {
	name   string
	pass   bool
	reason string // why a skipped test is out of scope
}

// readExpectations parses emulator_tests.txt.
func readExpectations(t testing.TB) []expectation {
	t.Helper()
	f, err := os.Open("emulator_tests.txt")
	if err != nil {
		t.Fatalf("expected-results list: %v", err)
	}
	defer f.Close()
	var out []expectation
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		var e expectation
		switch {
		case len(fields) == 2 && fields[0] == "pass":
			e = expectation{name: fields[1], pass: true}
		case len(fields) >= 3 && fields[0] == "skip":
			e = expectation{name: fields[1], reason: strings.Join(fields[2:], " ")}
		default:
			t.Fatalf("emulator_tests.txt:%d: want \"pass NAME\" or \"skip NAME REASON\", got %q", n, line)
		}
		if seen[e.name] {
			t.Fatalf("emulator_tests.txt:%d: %s listed twice", n, e.name)
		}
		seen[e.name] = true
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading emulator_tests.txt: %v", err)
	}
	return out
}

// sdkEmulatorTests returns the Test functions of the azcosmos version this
// module requires, from its emulator_*_test.go files, and that version.
func sdkEmulatorTests(t testing.TB) ([]string, string) {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", azcosmosModule).Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v", azcosmosModule, err)
	}
	var mod struct{ Dir, Version string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download -json %s gave no directory (%v): %s", azcosmosModule, err, out)
	}
	files, err := filepath.Glob(filepath.Join(mod.Dir, "emulator_*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no emulator_*_test.go in %s (%v)", mod.Dir, err)
	}
	re := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	var names []string
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("reading %s: %v", f, err)
		}
		for _, m := range re.FindAllSubmatch(src, -1) {
			names = append(names, string(m[1]))
		}
	}
	sort.Strings(names)
	return names, mod.Version
}

// TestEmulatorListComplete: emulator_tests.txt names every emulator test of
// the SDK version in go.mod, and nothing else, and the runner script pins
// that same version.
func TestEmulatorListComplete(t *testing.T) {
	sdk, version := sdkEmulatorTests(t)
	listed := map[string]bool{}
	for _, e := range readExpectations(t) {
		listed[e.name] = true
	}
	for _, n := range sdk {
		if !listed[n] {
			t.Errorf("azcosmos %s has emulator test %s; emulator_tests.txt does not list it", version, n)
		}
		delete(listed, n)
	}
	for n := range listed {
		t.Errorf("emulator_tests.txt lists %s; azcosmos %s has no such emulator test", n, version)
	}
	script, err := os.ReadFile(filepath.Join(repoRoot, "scripts", "sdk-emulator.sh"))
	if err != nil {
		t.Fatalf("reading the runner script: %v", err)
	}
	if !strings.Contains(string(script), "azver="+version+"\n") {
		t.Errorf("scripts/sdk-emulator.sh does not pin azver=%s, the version in go.mod", version)
	}
}

// TestAzcosmosEmulatorSuite runs the Go SDK's own emulator tests against
// `ebb serve` through scripts/sdk-emulator.sh (which serves on port 8081,
// the suite's hard-coded endpoint, under a lock) and fails when a test that
// emulator_tests.txt expects to pass does not.
func TestAzcosmosEmulatorSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the SDK suite compiles and runs the azcosmos package's tests")
	}
	var want []string
	for _, e := range readExpectations(t) {
		if e.pass {
			want = append(want, e.name)
		}
	}
	bin := ebbBinary(t)
	script, err := filepath.Abs(filepath.Join(repoRoot, "scripts", "sdk-emulator.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script, "^("+strings.Join(want, "|")+")$")
	cmd.Env = append(os.Environ(), "EBB_BIN="+bin)
	out, runErr := cmd.CombinedOutput()
	results := map[string]string{}
	re := regexp.MustCompile(`(?m)^(PASS|FAIL|SKIP|NORESULT) (Test\w+)$`)
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		results[m[2]] = m[1]
	}
	failed := false
	for _, n := range want {
		if results[n] != "PASS" {
			got := results[n]
			if got == "" {
				got = "no result"
			}
			t.Errorf("azcosmos emulator test %s: %s, want PASS", n, got)
			failed = true
		}
	}
	if failed || runErr != nil {
		t.Errorf("scripts/sdk-emulator.sh: %v; its output:\n%s", runErr, out)
	} else {
		t.Logf("%d azcosmos emulator tests passed against ebb serve", len(want))
	}
}
