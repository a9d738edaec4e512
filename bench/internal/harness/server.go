package harness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// Kind is one of the servers under test.
type Kind struct {
	// ID is a short name ("ours", "floor", "gosdk"); Name is the tables'
	// column name and Label the report's longer one.
	ID, Name, Label string
	// Pkg is the package to build, relative to the repository root.
	Pkg string
}

// The servers under test: this library alone (Listen), behind the go-sdk
// (Ours), the floor and a plain go-sdk server.
var (
	Listen = Kind{ID: "listen", Name: "listen", Label: "listen, no SDK (bench/cmd/listenserver)", Pkg: "./bench/cmd/listenserver"}
	Ours   = Kind{ID: "ours", Name: "ours", Label: "ours, behind the go-sdk (examples/server)", Pkg: "./examples/server"}
	Floor  = Kind{ID: "floor", Name: "floor", Label: "floor (bench/cmd/floorserver)", Pkg: "./bench/cmd/floorserver"}
	GoSDK  = Kind{ID: "gosdk", Name: "go-sdk", Label: "go-sdk v1.8.0 (bench/cmd/gosdkserver)", Pkg: "./bench/cmd/gosdkserver"}
)

// Kinds are listenbench's servers, in the report's order.
var Kinds = []Kind{Listen, Ours, Floor, GoSDK}

// Server is a built server under test and the flags it is started with.
type Server struct {
	kind Kind
	path string
	args []string
}

// Build builds kind's package from repo into dir (or takes prebuilt) and
// gives it extra and, when its -h output offers them, -max-streams above
// maxN, -max-streams-per-client=-1 (every stream comes from loopback) and
// -pprof (goroutine counts, heap and forced GC, which every server
// here offers).
func Build(ctx context.Context, repo, dir string, kind Kind, prebuilt string, maxN int, extra ...string) (*Server, error) {
	path := prebuilt
	if path == "" {
		path = filepath.Join(dir, kind.ID)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", path, kind.Pkg)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %w\n%s", kind.Pkg, err, out)
		}
	}
	s := &Server{kind: kind, path: path, args: slices.Clone(extra)}
	// -h prints the flag set on stderr; every server uses the flag package.
	out, _ := exec.CommandContext(ctx, path, "-h").CombinedOutput()
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-zA-Z0-9_-]+)`).FindAllSubmatch(out, -1) {
		flags = append(flags, string(m[1]))
	}
	if !slices.Contains(flags, "addr") || !slices.Contains(flags, "pprof") {
		return nil, fmt.Errorf("%s: no -addr or -pprof flag in its -h output:\n%s", path, out)
	}
	s.args = append(s.args, "-pprof")
	unset := func(name string) bool {
		return slices.Contains(flags, name) && !slices.ContainsFunc(extra, func(a string) bool { return strings.Split(strings.TrimLeft(a, "-"), "=")[0] == name })
	}
	if unset("max-streams") {
		s.args = append(s.args, "-max-streams="+strconv.Itoa(maxN+16))
	}
	if unset("max-streams-per-client") {
		s.args = append(s.args, "-max-streams-per-client=-1") // every stream comes from loopback
	}
	return s, nil
}

// Args returns the flags the server is started with, besides -addr,
// -quiet and -lifetime.
func (s *Server) Args() []string { return slices.Clone(s.args) }

// process is one running server.
type process struct {
	cmd    *exec.Cmd
	pid    int
	addr   string        // host:port
	exited chan struct{} // closed once the process has exited
}

// start starts s on a free loopback port, with more flags, and waits for
// its "listening on http://ADDR/mcp" line.
func (s *Server) start(ctx context.Context, more ...string) (*process, error) {
	args := append([]string{"-addr", "127.0.0.1:0", "-quiet", "-lifetime", "1h"}, s.args...)
	cmd := exec.Command(s.path, append(args, more...)...)
	cmd.Stderr = os.Stderr
	// The server dies with this process, whatever happens to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, pid: cmd.Process.Pid, exited: make(chan struct{})}
	ready := make(chan string, 1)
	// Ends once the process has exited (its stdout closed); kill waits
	// for it through p.exited.
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "listening on http://"); ok && len(ready) == 0 {
				ready <- strings.TrimSuffix(rest, "/mcp")
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		close(p.exited)
	}()
	select {
	case p.addr = <-ready:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("%s exited before listening", s.kind.ID)
	case <-time.After(15 * time.Second):
		p.kill()
		return nil, fmt.Errorf("%s did not print its listening line within 15s", s.kind.ID)
	case <-ctx.Done():
		p.kill()
		return nil, ctx.Err()
	}
}

// url is the MCP endpoint.
func (p *process) url() string { return "http://" + p.addr + "/mcp" }

// kill ends the process at once and waits for it.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// terminate asks the process to end (SIGTERM: a server drains its
// streams), then kills it after grace.
func (p *process) terminate(grace time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.kill()
	}
}

// procStatus is what /proc/PID/status says about memory and threads.
type procStatus struct {
	RSSKB   int64 // VmRSS
	Threads int
}

func readStatus(pid int) (procStatus, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procStatus{}, err
	}
	var s procStatus
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmRSS":
			s.RSSKB = n
		case "Threads":
			s.Threads = int(n)
		}
	}
	if s.RSSKB == 0 {
		return s, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
	}
	return s, nil
}

// inside reads the server's goroutine count and, after a forced garbage
// collection, its heap in use, from its net/http/pprof.
func (p *process) inside(ctx context.Context, c *http.Client) (goroutines int, heapInuse int64, err error) {
	body, err := get(ctx, c, "http://"+p.addr+"/debug/pprof/goroutine?debug=1")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(body), "\n")
	if goroutines, err = strconv.Atoi(strings.TrimPrefix(line, "goroutine profile: total ")); err != nil {
		return 0, 0, fmt.Errorf("goroutine profile: %q", line)
	}
	if body, err = get(ctx, c, "http://"+p.addr+"/debug/pprof/heap?gc=1&debug=1"); err != nil {
		return 0, 0, err
	}
	_, v, ok := strings.Cut(string(body), "\n# HeapInuse = ")
	v, _, _ = strings.Cut(v, "\n")
	if heapInuse, err = strconv.ParseInt(v, 10, 64); !ok || err != nil {
		return 0, 0, fmt.Errorf("heap profile without HeapInuse")
	}
	return goroutines, heapInuse, nil
}

// get returns the body of a 200 response to GET url.
func get(ctx context.Context, c *http.Client, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return body, err
}

// cpuTime is the CPU time process pid has used, all its threads (exited
// ones included), user and system: the kernel's sum_exec_runtime of the
// thread group, read with clock_gettime on the process's CPU-time clock
// (clock_getcpuclockid(3)) at nanosecond resolution, where /proc/PID/stat
// gives it in 10 ms ticks.
func cpuTime(pid int) time.Duration {
	// CPUCLOCK_SCHED (2) of the process (not thread) with this pid, as
	// glibc's clock_getcpuclockid builds it.
	clk := (^uintptr(pid) << 3) | 2
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clk, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
