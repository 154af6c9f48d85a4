package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// takenBy records how and when a table was taken.
type takenBy struct {
	Args     []string // compare's flags
	Start    time.Time
	Elapsed  time.Duration
	Commit   string // the repository's commit, "" if unknown
	CPU      string // the processor's model name, "" if unknown
	NumCPU   int
	Note     string // the -note flag
	LoadFrom string // load average before the runs
	LoadTo   string // and after
}

// resultsFile returns the markdown document compare -out writes: a
// heading, how and when the table was taken, then the tables.
func resultsFile(t takenBy, tables []byte) []byte {
	var b bytes.Buffer
	b.WriteString("# Timer comparison results\n\n")
	b.WriteString("Written by `bench/cmd/compare -out`; do not edit by hand. Regenerate with the command below\n")
	b.WriteString("and commit the file with the documents that quote it.\n\n")
	b.WriteString("```\n")
	fmt.Fprintf(&b, "cd bench && go run ./cmd/compare %s\n", quoteArgs(t.Args))
	b.WriteString("```\n\n")
	fmt.Fprintf(&b, "- taken: %s, %s in all\n", t.Start.UTC().Format("2006-01-02 15:04 MST"), t.Elapsed.Round(time.Second))
	if t.Commit != "" {
		fmt.Fprintf(&b, "- commit: %s\n", t.Commit)
	}
	fmt.Fprintf(&b, "- Go: %s, %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	cpu := t.CPU
	if cpu == "" {
		cpu = "processor unknown"
	}
	fmt.Fprintf(&b, "- machine: %s, %d logical CPUs, GOMAXPROCS %s; load average %s before, %s after\n",
		cpu, t.NumCPU, gomaxprocs(), t.LoadFrom, t.LoadTo)
	if t.Note != "" {
		fmt.Fprintf(&b, "- note: %s\n", t.Note)
	}
	b.WriteString("\n")
	b.Write(tables)
	return b.Bytes()
}

// quoteArgs joins args for a shell, quoting those that need it, and drops
// -out and its file, which name where the document went rather than what
// was measured.
func quoteArgs(args []string) string {
	var qs []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := strings.TrimLeft(a, "-")
		if strings.HasPrefix(a, "-") && (name == "out" || strings.HasPrefix(name, "out=")) {
			if name == "out" {
				i++
			}
			continue
		}
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`*?[]#;&|<>()") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		qs = append(qs, a)
	}
	return strings.Join(qs, " ")
}

// commit returns the repository's current commit, marked dirty when the
// work tree differs from it, or "" outside a git work tree.
func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += " (with uncommitted changes)"
	}
	return c
}

// cpuModel returns the processor's model name from /proc/cpuinfo, or "".
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
