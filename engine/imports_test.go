package engine_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	pathpkg "path"
	"path/filepath"
	"slices"
	"strconv"
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
		{"engine/internal/feedlog", "engine", "the engine and the tools both import it"},
		{"engine/internal/feedlog", "engine/tool", "the engine and the tools both import it"},
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

// fileCallExempt are the folders (relative to the module root, with what
// lies below them) whose non-test files may call package os for file
// operations; everything else reaches files through engine/vfs, so that
// Options.FS, FaultFS and CrashFS see every file operation.
var fileCallExempt = map[string]string{
	"engine/vfs":               "the file layer itself: OS calls package os",
	"cmd":                      "the command line: temporary folders for the demo, bench and crashloop verbs",
	"engine/crashloop":         "a harness that runs the engine in child processes and keeps their folders and logs",
	"engine/internal/testutil": "test support: copies of folders for tests",
}

// forbiddenFileCalls are the functions that touch files, by import path:
// outside fileCallExempt, a non-test file calls none of them.
var forbiddenFileCalls = map[string][]string{
	"os": {"Open", "OpenFile", "OpenRoot", "OpenInRoot", "Create", "CreateTemp", "NewFile",
		"Remove", "RemoveAll", "Rename", "Stat", "Lstat", "ReadDir", "ReadFile", "WriteFile",
		"Mkdir", "MkdirAll", "MkdirTemp", "Truncate", "Chmod", "Chown", "Lchown", "Chtimes",
		"Link", "Symlink", "Readlink", "DirFS", "CopyFS", "Chdir"},
	"path/filepath": {"Walk", "WalkDir", "Glob", "EvalSymlinks"},
	"io/ioutil":     {"ReadFile", "WriteFile", "ReadDir", "TempFile", "TempDir"},
}

// forbiddenImports are the packages that a package may not import
// directly, with why.
var forbiddenImports = []struct {
	pkg       string
	forbidden []string
	why       string
}{
	{"policy", []string{"os", "time", "sync", "sync/atomic"}, "the TTL rules are pure functions: no files, no clock (the caller passes the instant), no locks"},
	{"index", []string{"os", "time", "sync", "sync/atomic"}, "the index does no I/O, reads no clock and takes no lock: its owner (the container) serializes access"},
}

// TestFileCallRules parses the module's Go files and checks the rules
// that keep every file operation inside engine/vfs and the pure packages
// pure (the README lists them): every violation is printed with its
// file:line.
func TestFileCallRules(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	for _, v := range ruleViolations(t, root) {
		t.Error(v)
	}
}

// ruleViolations returns every breach of the rules in the module at root,
// one "file:line: what" line each.
func ruleViolations(t *testing.T, root string) []string {
	t.Helper()
	const mod = "github.com/ebbdb/ebb"
	var out []string
	fset := token.NewFileSet()
	pos := func(p token.Pos) string {
		at := fset.Position(p)
		rel, _ := filepath.Rel(root, at.Filename)
		return fmt.Sprintf("%s:%d", filepath.ToSlash(rel), at.Line)
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." {
				name := d.Name()
				if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
					return filepath.SkipDir
				}
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module (bench)
				}
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		dir := pathpkg.Dir(rel)
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		names := make(map[string]string) // local name → import path
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			for _, r := range forbiddenImports {
				if dir == r.pkg && slices.Contains(r.forbidden, ip) {
					out = append(out, fmt.Sprintf("%s: %s imports %q: %s", pos(imp.Pos()), r.pkg, ip, r.why))
				}
			}
			if dir == "engine/vfs" && (ip == mod || strings.HasPrefix(ip, mod+"/")) {
				out = append(out, fmt.Sprintf("%s: engine/vfs imports %q: vfs imports nothing of the module, so that every package may import it", pos(imp.Pos()), ip))
			}
			if _, ok := forbiddenFileCalls[ip]; !ok {
				continue
			}
			name := pathpkg.Base(ip)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = ip
		}
		if len(names) == 0 || fileCallsAllowed(dir) {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			if ip, ok := names[x.Name]; ok && slices.Contains(forbiddenFileCalls[ip], sel.Sel.Name) {
				out = append(out, fmt.Sprintf("%s: %s.%s outside engine/vfs: reach files through a vfs.FS (vfs.OS for offline readers)", pos(sel.Pos()), x.Name, sel.Sel.Name))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fileCallsAllowed reports whether the package in dir (relative to the
// module root) is exempt from forbiddenFileCalls.
func fileCallsAllowed(dir string) bool {
	for ex := range fileCallExempt {
		if dir == ex || strings.HasPrefix(dir, ex+"/") {
			return true
		}
	}
	return false
}
