package docscheck_test

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pending names the link targets, from the root, that another branch brings:
// a link to one of them is not checked while it is missing. Remove an entry
// once its target is merged.
var pending = map[string]string{}

// linkRE finds a Markdown link or image: [text](target) or [text](target "title").
var linkRE = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// markdownFiles returns the Markdown files of the repository, by their path
// from the root, leaving out .git and test data.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLinksResolve checks every relative link of every Markdown file: its
// file or folder exists, and its #fragment, into a Markdown file, names a
// heading there.
func TestLinksResolve(t *testing.T) {
	files := markdownFiles(t)
	for _, want := range []string{"README.md", "docs/README.md", "docs/performance.md"} {
		if !contains(files, want) {
			t.Fatalf("%s not found among the Markdown files %v", want, files)
		}
	}
	links := 0
	for _, file := range files {
		text := read(t, file)
		for _, l := range prose(text) {
			for _, m := range linkRE.FindAllStringSubmatch(l.text, -1) {
				checkLink(t, file, l.n, m[1], text)
				links++
			}
		}
	}
	t.Logf("%d links in %d Markdown files", links, len(files))
}

func checkLink(t *testing.T, file string, n int, target, text string) {
	t.Helper()
	if regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`).MatchString(target) {
		return // https:, mailto: and the like
	}
	where, frag, _ := strings.Cut(target, "#")
	to := file // a bare #fragment is into the file itself
	if where != "" {
		to = path.Clean(path.Join(path.Dir(file), where))
	}
	if strings.HasPrefix(to, "../") || to == ".." {
		t.Errorf("%s:%d: link %q leaves the repository", file, n, target)
		return
	}
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(to))); err != nil {
		if why, ok := pending[strings.TrimSuffix(to, "/")]; ok {
			t.Logf("%s:%d: link %q: not here yet, %s", file, n, target, why)
			return
		}
		t.Errorf("%s:%d: link %q: no file or folder %s", file, n, target, to)
		return
	}
	if frag == "" || !strings.HasSuffix(to, ".md") {
		return
	}
	if to != file {
		text = read(t, to)
	}
	if !anchors(text)[frag] {
		t.Errorf("%s:%d: link %q: %s has no heading for #%s", file, n, target, to, frag)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
