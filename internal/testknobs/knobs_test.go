package testknobs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryKnobListed checks that every EBB_* name in the repository's Go
// files and scripts is in All, and that every knob in All appears in
// README.md.
func TestEveryKnobListed(t *testing.T) {
	known := map[string]bool{}
	for _, k := range All {
		if known[k.Name] {
			t.Errorf("%s listed twice", k.Name)
		}
		known[k.Name] = true
	}
	re := regexp.MustCompile(`EBB_[A-Z0-9_]*[A-Z0-9]`)
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "bench" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".sh") || strings.HasPrefix(path, filepath.Join(root, "internal", "testknobs")) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, name := range re.FindAllString(string(b), -1) {
			if !known[name] {
				t.Errorf("%s reads %s, which testknobs.All does not list", path, name)
				known[name] = true // once
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range All {
		if !strings.Contains(string(readme), "`"+k.Name+"`") {
			t.Errorf("README.md does not document %s", k.Name)
		}
	}
}
