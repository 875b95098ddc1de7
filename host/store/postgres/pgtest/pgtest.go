// Package pgtest starts a throwaway PostgreSQL server for tests: initdb
// and pg_ctl from Debian's postgresql package (found on PATH or under
// /usr/lib/postgresql/*/bin), a temporary data directory, a free loopback
// port, password authentication with a random password, and an
// unprivileged user when the tests run as root (the server refuses root).
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Server is a running test server.
type Server struct {
	dir      string
	bin      string
	port     int
	password string
	cred     *syscall.Credential
	n        atomic.Int64
	admin    *sql.DB
}

// User is the server's superuser.
const User = "weir"

// Start initializes and starts a server. The password is the random one
// the caller must put in the environment for the stores it opens.
func Start() (*Server, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "weir-pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bin: bin}
	ok := false
	defer func() {
		if !ok {
			s.Stop()
		}
	}()
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			return nil, fmt.Errorf("running as root, and no unprivileged user to run PostgreSQL as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	var b [16]byte
	rand.Read(b[:])
	s.password = hex.EncodeToString(b[:])
	pwfile := filepath.Join(dir, "pw")
	if err := s.writeFile(pwfile, s.password+"\n"); err != nil {
		return nil, err
	}
	if out, err := s.run("initdb", "-D", filepath.Join(dir, "data"), "-U", User, "--pwfile", pwfile,
		"--auth-local", "trust", "--auth-host", "scram-sha-256", "-E", "UTF8", "--no-instructions"); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	os.Remove(pwfile)
	for attempt := 0; ; attempt++ {
		if s.port, err = freePort(); err != nil {
			return nil, err
		}
		out, err := s.run("pg_ctl", "start", "-w", "-t", "60", "-D", filepath.Join(dir, "data"), "-l", filepath.Join(dir, "log"),
			"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=100 -c fsync=on", s.port, dir))
		if err == nil {
			break
		}
		if attempt == 2 {
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			return nil, fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, log)
		}
	}
	cc, err := pgx.ParseConfig(s.url("postgres"))
	if err != nil {
		return nil, err
	}
	cc.Password = s.password
	s.admin = stdlib.OpenDB(*cc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.admin.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("connect to the test server: %w", err)
	}
	ok = true
	return s, nil
}

// Password is the superuser's password.
func (s *Server) Password() string { return s.password }

func (s *Server) url(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", User, s.port, db)
}

// NewDatabase creates an empty database and returns its URL (without the
// password).
func (s *Server) NewDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("t%d", s.n.Add(1))
	if _, err := s.admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	return s.url(name), nil
}

// Stop stops the server and removes its directory.
func (s *Server) Stop() {
	if s.admin != nil {
		s.admin.Close()
	}
	if _, err := os.Stat(filepath.Join(s.dir, "data", "postmaster.pid")); err == nil {
		s.run("pg_ctl", "stop", "-w", "-m", "immediate", "-D", filepath.Join(s.dir, "data"))
	}
	os.RemoveAll(s.dir)
}

func (s *Server) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LANG=C", "LC_ALL=C"}
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd.CombinedOutput()
}

func (s *Server) writeFile(path, data string) error {
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		return err
	}
	if s.cred != nil {
		return os.Chown(path, int(s.cred.Uid), int(s.cred.Gid))
	}
	return nil
}

func findBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "pg_ctl")); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries (initdb, pg_ctl) on PATH or under /usr/lib/postgresql/*/bin: install Debian's postgresql package")
}

func version(dir string) int {
	n, _ := strconv.Atoi(strings.Split(strings.TrimPrefix(dir, "/usr/lib/postgresql/"), "/")[0])
	return n
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
