//go:build unix

package sqlstoretest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A Postgres is a throwaway PostgreSQL server, started by StartPostgres.
type Postgres struct {
	bin  string // folder of initdb and pg_ctl
	dir  string // removed by remove
	port int
	set  []string            // the settings StartPostgres was given, name=value
	cred *syscall.Credential // whom the server runs as when we are root
}

// pgBin finds the folder of PostgreSQL's initdb and pg_ctl.
func pgBin() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	ms, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(ms) > 0 {
		return filepath.Dir(ms[len(ms)-1]), nil
	}
	return "", errors.New("initdb and pg_ctl not found (apt-get install postgresql)")
}

// StartPostgres starts a PostgreSQL server in a new temporary directory
// and waits until it accepts connections (DSN), with max_connections=200
// and the settings given, each name=value, such as "shared_buffers=256MB"
// (a benchmark's). It returns an error if a setting has no "=", initdb
// and pg_ctl are not found, on the PATH or under /usr/lib/postgresql, or
// the server does not start.
func StartPostgres(settings ...string) (*Postgres, error) {
	for _, kv := range settings {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || strings.ContainsAny(kv, " '\"\\") {
			return nil, fmt.Errorf("sqlstoretest: setting %q: want name=value, without spaces or quotes", kv)
		}
	}
	bin, err := pgBin()
	if err != nil {
		return nil, err
	}
	parent := ""
	if os.Geteuid() == 0 {
		// The server's user must reach the folder: not under a
		// TMPDIR that only root can enter.
		parent = "/tmp"
	}
	dir, err := os.MkdirTemp(parent, "sqlstoretest-pg-")
	if err != nil {
		return nil, err
	}
	s := &Postgres{bin: bin, dir: dir, set: settings}
	if os.Geteuid() == 0 {
		// initdb refuses to run as root: the server runs as postgres,
		// or nobody, and owns the directory.
		var u *user.User
		for _, name := range []string{"postgres", "nobody"} {
			if u, err = user.Lookup(name); err == nil {
				break
			}
		}
		if err != nil {
			s.Remove()
			return nil, fmt.Errorf("no unprivileged user to run PostgreSQL as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			s.Remove()
			return nil, err
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.Remove()
		return nil, err
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	if err := s.run("initdb", "-D", s.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		s.Remove()
		return nil, err
	}
	if err := s.Start(); err != nil {
		s.Remove()
		return nil, err
	}
	s.watch()
	return s, nil
}

// watch starts a shell that stops the server and removes its folder once
// this process is gone, should it die without remove: a test that panics
// ends the process before TestMain's deferred calls. It needs /proc to see
// this process, whoever the shell runs as.
func (s *Postgres) watch() {
	if _, err := os.Stat("/proc/self"); err != nil {
		return
	}
	w := exec.Command("/bin/sh", "-c",
		`while [ -d "/proc/$1" ]; do sleep 1; done; "$2" -D "$3" -m immediate stop >/dev/null 2>&1; rm -rf "$4"`,
		"sh", strconv.Itoa(os.Getpid()), filepath.Join(s.bin, "pg_ctl"), s.data(), s.dir)
	w.Dir = "/"
	if s.cred != nil {
		w.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	// No pipes: go test waits for the test binary's output to close.
	if err := w.Start(); err == nil {
		_ = w.Process.Release()
	}
}

// Port returns the server's port on 127.0.0.1.
func (s *Postgres) Port() int { return s.port }

func (s *Postgres) data() string { return filepath.Join(s.dir, "data") }

// DSN returns the URL of the server's database postgres, as its user
// postgres, for pgx: postgres://postgres@127.0.0.1:PORT/postgres.
func (s *Postgres) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

func (s *Postgres) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %v\n%s", name, err, out.Bytes())
	}
	return nil
}

// Start starts the server again, after Stop, and waits until it accepts
// connections, on the same port.
func (s *Postgres) Start() error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200", s.port, s.dir)
	for _, kv := range s.set {
		opts += " -c " + kv
	}
	return s.run("pg_ctl", "-D", s.data(), "-o", opts, "-l", filepath.Join(s.dir, "log"), "-w", "-t", "60", "start")
}

// Stop stops the server, cutting its connections: an outage, until Start.
func (s *Postgres) Stop() error {
	return s.run("pg_ctl", "-D", s.data(), "-m", "fast", "-w", "-t", "60", "stop")
}

// Remove stops the server and removes its directory.
func (s *Postgres) Remove() {
	if s.port != 0 {
		_ = s.Stop()
	}
	os.RemoveAll(s.dir)
}
