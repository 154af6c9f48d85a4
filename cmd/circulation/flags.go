package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// The flags every command takes, and the parsing of a command line whose
// flags may come before, among and after its arguments.

// common holds the flags every command takes; run sets their defaults.
type common struct {
	dsn   string // a PostgreSQL URL
	db    string // a SQLite file
	table string // the Store's table
	json  bool   // JSON output
	user  string // who makes the changes, for the audit log
}

// flags returns a FlagSet for the command name ("" for the top level)
// with the common flags, bound to c's.
func (c *cli) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.dsn, "dsn", c.dsn, "PostgreSQL URL ($CIRCULATION_DSN)")
	fs.StringVar(&c.db, "db", c.db, "SQLite file ($CIRCULATION_DB)")
	fs.StringVar(&c.table, "table", c.table, "the Store's table")
	fs.BoolVar(&c.json, "json", c.json, "JSON output")
	fs.StringVar(&c.user, "user", c.user, "who makes the change, as the audit log names them ($CIRCULATION_USER; default: the system's user@host)")
	return fs
}

// parseFlags parses args with fs and returns the arguments that are not
// flags. Flags may come among the arguments, unless untilArg, which stops
// at the first argument (the top level, before the command). After "--",
// every argument is one.
func parseFlags(fs *flag.FlagSet, args []string, untilArg bool) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		left := fs.Args()
		if len(left) == 0 {
			return rest, nil
		}
		if untilArg || (len(left) < len(args) && args[len(args)-len(left)-1] == "--") {
			return append(rest, left...), nil
		}
		rest = append(rest, left[0])
		args = left[1:]
	}
}

// flagError turns an error of parsing flags into a usage error, or
// prints the usage for -h.
func (c *cli) flagError(err error, usage string) error {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(c.stdout, "usage: "+usage)
		return errHelp
	}
	return &usageError{err: err, usage: usage}
}

// parse parses the arguments of a command whose usage is usage with fs,
// and checks that it has want of them, or at least min and at most max
// (max -1: any).
func (c *cli) parse(fs *flag.FlagSet, usage string, args []string, min, max int) ([]string, error) {
	rest, err := parseFlags(fs, args, false)
	if err != nil {
		return nil, c.flagError(err, usage+flagList(fs))
	}
	switch {
	case len(rest) < min:
		return nil, usagef(usage+flagList(fs), "%s: missing argument", fs.Name())
	case max >= 0 && len(rest) > max:
		return nil, usagef(usage+flagList(fs), "%s: unexpected argument %q", fs.Name(), rest[max])
	}
	return rest, nil
}

// flagList lists the flags of fs other than the common ones, for a usage
// message.
func flagList(fs *flag.FlagSet) string {
	var b strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		switch f.Name {
		case "dsn", "db", "table", "json":
			return
		}
		fmt.Fprintf(&b, "\n  -%s", f.Name)
		if name, _ := flag.UnquoteUsage(f); name != "" {
			b.WriteString(" " + name)
		}
		b.WriteString("\t" + f.Usage)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			b.WriteString(" (default " + f.DefValue + ")")
		}
	})
	return b.String()
}
