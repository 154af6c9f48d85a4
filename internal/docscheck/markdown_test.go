package docscheck_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository's root, seen from this package's folder.
const root = "../.."

// line is one line of a Markdown file outside code: fenced blocks are
// dropped, and so are `inline code` spans, which may run on to the next
// line of their paragraph.
type line struct {
	n    int // 1-based
	text string
}

// prose returns the lines of a Markdown text outside code.
func prose(text string) []line {
	var out []line
	fenced, span := false, false
	for i, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fenced, span = !fenced, false
			continue
		}
		if fenced {
			continue
		}
		if t == "" {
			span = false // a code span ends with its paragraph
		}
		var b strings.Builder
		for j := 0; j < len(l); j++ {
			if l[j] == '`' {
				for j+1 < len(l) && l[j+1] == '`' {
					j++
				}
				span = !span
				continue
			}
			if !span {
				b.WriteByte(l[j])
			}
		}
		out = append(out, line{i + 1, b.String()})
	}
	return out
}

// read returns a file of the repository, by its path from the root.
func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// anchors returns the fragments that link to the headings of a Markdown
// text, as GitHub makes them: lower case, punctuation dropped, spaces as
// hyphens, a repeated heading numbered -1, -2...
func anchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	fenced := false
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + itoa(n%10)
}

func TestAnchors(t *testing.T) {
	got := anchors("# The Supervisor's explorer\n```\n# not a heading\n```\n" +
		"## Tasks your users define (`cron.Table`)\n## SQL store\n## SQL store\n")
	for _, want := range []string{"the-supervisors-explorer", "tasks-your-users-define-crontable", "sql-store", "sql-store-1"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a line in a code block made an anchor")
	}
}
