// Package redistest runs a real redis-server on a loopback port, for the
// tests of a server joined to others by redisbridge: Debian's package
// redis-server (apt-get install redis-server), found on PATH. Run starts
// one for a test and skips the test, naming the package to install, when
// there is none; with the environment variable MCPLISTEN_REDIS_REQUIRED=1
// (set by .ci/run) it fails it instead.
//
// A Server is a child process without persistence (no RDB, no AOF) whose
// log goes to a file in its directory; Stop and Restart end it with
// SIGTERM. Each Server starts one goroutine, which waits for the process
// and ends with it.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// debianPackage is the Debian package that provides redis-server.
const debianPackage = "redis-server"

// requiredEnv, set to 1, makes Run fail a test instead of skipping it when
// redis-server is missing.
const requiredEnv = "MCPLISTEN_REDIS_REQUIRED"

// startTimeout bounds the wait for a server to accept connections.
const startTimeout = 10 * time.Second

// path returns the redis-server on PATH, if any.
func path() (string, bool) {
	p, err := exec.LookPath("redis-server")
	return p, err == nil
}

// Server is one redis-server process.
type Server struct {
	// Addr is its host:port (127.0.0.1).
	Addr string
	bin  string
	dir  string
	args []string
	port int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	runs   int
}

// start starts redis-server in dir on a free 127.0.0.1 port with extra
// arguments (redis-server command-line options, such as "--aclfile",
// path), and waits until it accepts connections.
func start(bin, dir string, extra ...string) (*Server, error) {
	s := &Server{bin: bin, dir: dir, args: extra}
	var err error
	for range 3 { // a free port taken by someone else meanwhile: try another
		if s.port, err = freePort(); err != nil {
			return nil, err
		}
		if err = s.start(); err == nil {
			return s, nil
		}
	}
	return nil, err
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// start runs the process and waits for its "Ready to accept connections".
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs++
	logPath := filepath.Join(s.dir, fmt.Sprintf("redis-%d-%d.log", s.port, s.runs))
	args := append([]string{
		"--bind", "127.0.0.1", "--port", strconv.Itoa(s.port),
		"--save", "", "--appendonly", "no", "--dir", s.dir,
		"--logfile", logPath, "--daemonize", "no", "--protected-mode", "yes",
	}, s.args...)
	cmd := exec.Command(s.bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: starting redis-server: %w", err)
	}
	exited := make(chan struct{})
	// Ends when the process does (Stop, Kill, or a crash).
	go func() { _ = cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	s.Addr = "127.0.0.1:" + strconv.Itoa(s.port)
	deadline := time.Now().Add(startTimeout)
	for {
		if ready(logPath) {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("redistest: redis-server exited at start: %s", tail(logPath))
		case <-time.After(20 * time.Millisecond): // polls the log file: the server says nothing else
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("redistest: redis-server not ready within %v: %s", startTimeout, tail(logPath))
		}
	}
}

// ready reports whether the log says the server accepts connections.
func ready(logPath string) bool {
	f, err := os.Open(logPath)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "Ready to accept connections") {
			return true
		}
	}
	return false
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 1000 {
		b = b[len(b)-1000:]
	}
	return strings.TrimSpace(string(b))
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr }

// Stop ends the server with SIGTERM (SIGKILL after 5 s) and waits for it.
// It is idempotent.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// Restart stops the server and starts a new one on the same port, with the
// same arguments: without persistence it comes back empty.
func (s *Server) Restart() error {
	s.Stop()
	return s.start()
}

// Run starts a server for t in a temporary directory, with extra
// redis-server command-line options (such as "--aclfile", path), and stops
// it when t ends. Without redis-server it skips t, naming the package to
// install, or fails it when MCPLISTEN_REDIS_REQUIRED=1.
func Run(t testing.TB, extra ...string) *Server {
	t.Helper()
	bin, ok := path()
	if !ok {
		msg := "redis-server not found on PATH: install Debian's " + debianPackage +
			" package (apt-get install " + debianPackage + ") to run the tests against a real Redis"
		if os.Getenv(requiredEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	s, err := start(bin, t.TempDir(), extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}
