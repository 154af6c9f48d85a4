// Package pgserver starts a throwaway PostgreSQL for the commands of the
// bench module.
package pgserver

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
	"syscall"
)

// A Server is a throwaway PostgreSQL started with initdb and pg_ctl on
// 127.0.0.1 and a free port, in a temporary folder, with fsync on.
type Server struct {
	bin  string
	dir  string
	port int
	cred *syscall.Credential // whom it runs as, when the command runs as root
}

// Start starts a Server, from the binaries of pg_ctl's folder on the
// PATH or of /usr/lib/postgresql/*/bin. Run as root, the server runs as
// the user postgres, or nobody.
func Start() (*Server, error) {
	bin := ""
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		bin = filepath.Dir(p)
	} else if ms, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl"); len(ms) > 0 {
		bin = filepath.Dir(ms[len(ms)-1])
	} else {
		return nil, errors.New("pg_ctl not found: apt-get install postgresql, or give -dsn")
	}
	parent := ""
	if os.Geteuid() == 0 {
		parent = "/tmp" // the server's user must reach it
	}
	dir, err := os.MkdirTemp(parent, "bench-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			u, err = user.Lookup("nobody")
		}
		if err != nil {
			s.Remove()
			return nil, err
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
	data := filepath.Join(dir, "data")
	if err := s.run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		s.Remove()
		return nil, err
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200 -c shared_buffers=256MB", s.port, dir)
	if err := s.run("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		s.Remove()
		return nil, err
	}
	return s, nil
}

// DSN returns the data source name of the server's database postgres.
func (s *Server) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

func (s *Server) run(name string, args ...string) error {
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

// Remove stops the server and removes its folder.
func (s *Server) Remove() {
	_ = s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop")
	os.RemoveAll(s.dir)
}
