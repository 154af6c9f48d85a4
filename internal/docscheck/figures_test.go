package docscheck_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// maxHeadline is how many figures the README may quote: a front page gives
// a few headline figures and links docs/performance.md for the rest.
const maxHeadline = 10

// figureRE finds a number and a unit; figures checks the characters on
// either side, which RE2 cannot.
var figureRE = regexp.MustCompile(`(\d+(?:,\d{3})*(?:\.\d+)?) ?(ns|µs|us|ms|s|B|KB|MB|GB|bytes|x|×|%)`)

// A figure is a number with its unit, as written, and where.
type figure struct {
	text string // "7.38 ns"
	key  string // "7.38ns": no space, × as x, us as µs
	line int
}

// figures returns the figures of a Markdown text: numbers with a unit, on
// its lines outside code, neither glued to a word before ("k8s", "v0.x")
// nor to one after ("3 steps").
func figures(text string) []figure {
	var out []figure
	for _, l := range prose(text) {
		for _, m := range figureRE.FindAllStringSubmatchIndex(l.text, -1) {
			if m[0] > 0 && (wordByte(l.text[m[0]-1]) || l.text[m[0]-1] == '.') {
				continue
			}
			if m[1] < len(l.text) && wordByte(l.text[m[1]]) {
				continue
			}
			num, unit := l.text[m[2]:m[3]], l.text[m[4]:m[5]]
			switch unit {
			case "×":
				unit = "x"
			case "us":
				unit = "µs"
			}
			out = append(out, figure{text: l.text[m[0]:m[1]], key: num + unit, line: l.n})
		}
	}
	return out
}

func wordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// TestREADMEQuotesPerformance checks that every figure README.md quotes is
// in docs/performance.md, with the same number and unit, and that the
// README quotes only a few.
func TestREADMEQuotesPerformance(t *testing.T) {
	readme := read(t, "README.md")
	checkQuotes(t, readme, read(t, "docs/performance.md"))
	var all []string
	for _, f := range figures(readme) {
		all = append(all, f.text)
	}
	t.Logf("README.md quotes %d figures: %s", len(all), strings.Join(all, ", "))
}

func checkQuotes(t testing.TB, readme, perf string) {
	t.Helper()
	held := map[string]bool{}
	for _, f := range figures(perf) {
		held[f.key] = true
	}
	quoted := figures(readme)
	for _, f := range quoted {
		if !held[f.key] {
			t.Errorf("README.md:%d quotes %q, which docs/performance.md does not hold.\n"+
				"\tA figure in the README (a number with a unit, outside code) is quoted from docs/performance.md,\n"+
				"\twhere it stands beside the command that printed it: put it there first, or, for a setting,\n"+
				"\twrite it as code (`2*time.Second`) or in words.", f.line, f.text)
		}
	}
	if len(quoted) > maxHeadline {
		var all []string
		for _, f := range quoted {
			all = append(all, f.text)
		}
		t.Errorf("README.md quotes %d figures (%s); a front page quotes at most %d headline figures and links docs/performance.md for the rest",
			len(quoted), strings.Join(all, ", "), maxHeadline)
	}
}

// TestFigureRule shows what counts as a figure.
func TestFigureRule(t *testing.T) {
	text := "Fire costs 7.38 ns, 26x faster; 40.5 bytes (0.31×), +3.0%, 1.2 µs, 100,000 jobs in 3.07 s.\n" +
		"Not figures: k8s, v0.x, Go 1.25, 3 steps, every 30 seconds, 2^26, `2 s` in code, `a span\n" +
		"over two lines, 4 ms`,\n" +
		"```\ngo test -benchtime 1000000x # 5 ns in a block\n```\n"
	var got []string
	for _, f := range figures(text) {
		got = append(got, f.key)
	}
	want := []string{"7.38ns", "26x", "40.5bytes", "0.31x", "3.0%", "1.2µs", "3.07s"}
	if !slices.Equal(got, want) {
		t.Errorf("figures = %q, want %q", got, want)
	}
}

// TestQuoteCheckFails checks that the check fails on a figure the
// performance file does not hold, and on too many figures.
func TestQuoteCheckFails(t *testing.T) {
	perf := "| Fire | 7.38 ns |\n"
	for _, tc := range []struct {
		name, readme string
		fails        bool
	}{
		{"held", "Fire: 7.38 ns.", false},
		{"held, × or x and spacing aside", "Fire: 7.38ns.", false},
		{"not held", "Fire: 7.11 ns.", true},
		{"too many", strings.Repeat("7.38 ns ", maxHeadline+1), true},
	} {
		r := &recorder{}
		checkQuotes(r, tc.readme, perf)
		if r.failed != tc.fails {
			t.Errorf("%s: failed = %v, want %v", tc.name, r.failed, tc.fails)
		}
	}
}

// recorder is a testing.TB that records a failure instead of failing.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
