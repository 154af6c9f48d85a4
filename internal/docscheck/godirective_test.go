package docscheck_test

import (
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var goDirectiveRE = regexp.MustCompile(`(?m)^go (\S+)\s*$`)

// TestOneGoDirective checks that every module of the repository has the
// same go directive, so that none asks for a newer Go than the library,
// and that README.md asks for that version.
func TestOneGoDirective(t *testing.T) {
	versions := map[string][]string{} // version: the go.mod files that say it
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "go.mod" {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		m := goDirectiveRE.FindStringSubmatch(read(t, rel))
		if m == nil {
			t.Errorf("%s has no go directive", rel)
			return nil
		}
		versions[m[1]] = append(versions[m[1]], rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := read(t, "go.mod")
	lib := goDirectiveRE.FindStringSubmatch(want)[1]
	for v, files := range versions {
		if v != lib {
			t.Errorf("go %s in %s, but go %s in the library's go.mod: every module has the library's go directive (an older version of a dependency usually allows it)",
				v, strings.Join(files, ", "), lib)
		}
	}
	minor := strings.Join(strings.SplitN(lib, ".", 3)[:2], ".") // 1.25.0: 1.25
	if !strings.Contains(read(t, "README.md"), "Go "+minor+" or later") {
		t.Errorf(`README.md does not say "Go %s or later", the version of the go directives (go %s)`, minor, lib)
	}
}
