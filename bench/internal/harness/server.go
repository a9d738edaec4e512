package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
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

// The servers under test.
var (
	Ours  = Kind{ID: "ours", Name: "ours", Label: "ours (examples/server)", Pkg: "./examples/server"}
	Floor = Kind{ID: "floor", Name: "floor", Label: "floor (bench/cmd/floorserver)", Pkg: "./bench/cmd/floorserver"}
	GoSDK = Kind{ID: "gosdk", Name: "go-sdk", Label: "go-sdk v1.8.0 (bench/cmd/gosdkserver)", Pkg: "./bench/cmd/gosdkserver"}
)

// Kinds are the servers under test, in the report's order.
var Kinds = []Kind{Ours, Floor, GoSDK}

// serverBin is a built server and the flags it is started with.
type serverBin struct {
	kind Kind
	path string
	args []string
	// flags lists the flags its -h output shows.
	flags []string
}

// build builds kind's binary into dir (or uses prebuilt) and reads its flags.
func build(ctx context.Context, repo, dir string, kind Kind, prebuilt string, extra []string) (*serverBin, error) {
	path := prebuilt
	if path == "" {
		path = filepath.Join(dir, kind.ID)
		gobin, err := exec.LookPath("go")
		if err != nil {
			return nil, fmt.Errorf("finding the go command: %w", err)
		}
		cmd := exec.CommandContext(ctx, gobin, "build", "-o", path, kind.Pkg)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %w\n%s", kind.Pkg, err, out)
		}
	}
	b := &serverBin{kind: kind, path: path, args: append([]string(nil), extra...)}
	// -h prints the flag set on stderr; both servers use the flag package.
	out, _ := exec.CommandContext(ctx, path, "-h").CombinedOutput()
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-zA-Z0-9_-]+)`).FindAllSubmatch(out, -1) {
		b.flags = append(b.flags, string(m[1]))
	}
	if !b.has("addr") {
		return nil, fmt.Errorf("%s: no -addr flag in its -h output:\n%s", path, out)
	}
	return b, nil
}

func (b *serverBin) has(flag string) bool { return slices.Contains(b.flags, flag) }

// process is one running server.
type process struct {
	bin  *serverBin
	cmd  *exec.Cmd
	pid  int
	addr string // host:port
	// stderr is the file the server's stderr goes to (the SIGQUIT goroutine
	// dump ends up there).
	stderr *os.File
	exited chan struct{}
	err    error // Wait's result, set before exited is closed
}

// start starts a server on a free loopback port and waits for its
// "listening on http://ADDR/mcp" line.
func start(ctx context.Context, b *serverBin, tmp string) (*process, error) {
	args := []string{"-addr", "127.0.0.1:0", "-quiet", "-lifetime", "1h"}
	args = append(args, b.args...)
	stderr, err := os.CreateTemp(tmp, b.kind.ID+"-stderr-*")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(b.path, args...)
	// GOTRACEBACK=all: a SIGQUIT dumps every goroutine (goroutineDump).
	cmd.Env = append(os.Environ(), "GOTRACEBACK=all")
	cmd.Stderr = stderr
	// The server dies with this process, whatever happens to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		stderr.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		stderr.Close()
		return nil, err
	}
	p := &process{bin: b, cmd: cmd, pid: cmd.Process.Pid, stderr: stderr, exited: make(chan struct{})}
	ready := make(chan string, 1)
	// Ends once the process has exited (its stdout closed); kill and stop
	// wait for it through p.exited.
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "listening on http://"); ok {
				select {
				case ready <- strings.TrimSuffix(rest, "/mcp"):
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		p.err = cmd.Wait()
		close(p.exited)
	}()
	select {
	case p.addr = <-ready:
		return p, nil
	case <-p.exited:
		stderr.Close()
		return nil, fmt.Errorf("%s exited before listening: %v: %s", b.kind.ID, p.err, tail(stderr.Name()))
	case <-time.After(15 * time.Second):
		p.kill()
		return nil, fmt.Errorf("%s did not print its listening line within 15s", b.kind.ID)
	case <-ctx.Done():
		p.kill()
		return nil, ctx.Err()
	}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// url is the MCP endpoint.
func (p *process) url() string { return "http://" + p.addr + "/mcp" }

// kill ends the process at once and releases its files.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
	p.stderr.Close()
	os.Remove(p.stderr.Name())
}

// alive reports whether the process is still running.
func (p *process) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
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
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
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

// vars is what a server's expvar endpoint (/debug/vars) tells, if it has one.
type vars struct {
	// Goroutines is runtime.NumGoroutine as the server publishes it (ours:
	// "listen"."goroutines"; a top-level "goroutines" is accepted too), or -1.
	Goroutines int
	// HeapInuse and StackInuse are from "memstats", or -1.
	HeapInuse, StackInuse int64
	// Active is our handler's open listen count ("listen"."http"."Active"), or -1.
	Active int
}

// readVars reads /debug/vars; ok is false when the server has none.
func readVars(ctx context.Context, c *http.Client, p *process) (v vars, ok bool) {
	v = vars{Goroutines: -1, HeapInuse: -1, StackInuse: -1, Active: -1}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.addr+"/debug/vars", nil)
	resp, err := c.Do(req)
	if err != nil {
		return v, false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return v, false
	}
	var doc struct {
		Goroutines *int `json:"goroutines"`
		Listen     struct {
			Goroutines *int `json:"goroutines"`
			HTTP       struct {
				Active *int
			} `json:"http"`
		} `json:"listen"`
		Memstats struct {
			HeapInuse, StackInuse *int64
		} `json:"memstats"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return v, false
	}
	if g := doc.Listen.Goroutines; g != nil {
		v.Goroutines = *g
	} else if doc.Goroutines != nil {
		v.Goroutines = *doc.Goroutines
	}
	if a := doc.Listen.HTTP.Active; a != nil {
		v.Active = *a
	}
	if h := doc.Memstats.HeapInuse; h != nil {
		v.HeapInuse = *h
	}
	if s := doc.Memstats.StackInuse; s != nil {
		v.StackInuse = *s
	}
	return v, true
}

// dump is a goroutine dump's summary.
type dump struct {
	// Total counts the goroutines in the dump (ids > 0, the runtime's own
	// included, as GOTRACEBACK=all prints them).
	Total int
	// Groups counts goroutines by state, a representative frame and the
	// function that created them, largest first.
	Groups []group
}

type group struct {
	Count   int
	State   string
	Frame   string // the first frame outside the runtime, net, sync, io...
	Created string
}

// goroutineDump ends the process with SIGQUIT (with GOTRACEBACK=all the Go
// runtime then prints every goroutine's stack) and summarises the dump. It is
// the only exact goroutine count available without a debug endpoint.
func (p *process) goroutineDump() (dump, error) {
	if !p.alive() {
		return dump{}, errors.New("process already exited")
	}
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-p.exited:
	case <-time.After(180 * time.Second):
		// 40,000 goroutines on a loaded machine take a while to print.
		p.kill()
		return dump{}, errors.New("no exit within 180s of SIGQUIT")
	}
	defer p.kill()
	if _, err := p.stderr.Seek(0, io.SeekStart); err != nil {
		return dump{}, err
	}
	return parseDump(p.stderr)
}

var goroutineHeader = regexp.MustCompile(`^goroutine (\d+) .*\[([^\]]*)\]:$`)

// parseDump summarises a Go traceback of all goroutines.
func parseDump(r io.Reader) (dump, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	seen := map[string]bool{}
	counts := map[group]int{}
	var cur *group
	flush := func() {
		if cur != nil {
			counts[*cur]++
			cur = nil
		}
	}
	for sc.Scan() {
		line := sc.Text()
		if m := goroutineHeader.FindStringSubmatch(line); m != nil {
			flush()
			if m[1] == "0" || seen[m[1]] {
				continue
			}
			seen[m[1]] = true
			state := m[2]
			// "select, 5 minutes" and the like: keep the state only.
			if i := strings.Index(state, ", "); i >= 0 && strings.ContainsAny(state[i:], "0123456789") {
				state = state[:i]
			}
			cur = &group{State: state}
			continue
		}
		if cur == nil || line == "" || strings.HasPrefix(line, "\t") {
			if line == "" {
				flush()
			}
			continue
		}
		if fn, ok := strings.CutPrefix(line, "created by "); ok {
			if i := strings.Index(fn, " in goroutine"); i >= 0 {
				fn = fn[:i]
			}
			cur.Created = fn
			continue
		}
		if cur.Frame == "" && !lowLevel(line) {
			cur.Frame = funcName(line)
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return dump{}, err
	}
	d := dump{Total: len(seen)}
	for g, n := range counts {
		g.Count = n
		d.Groups = append(d.Groups, g)
	}
	sort.Slice(d.Groups, func(i, j int) bool {
		a, b := d.Groups[i], d.Groups[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Frame+a.State < b.Frame+b.State
	})
	if d.Total == 0 {
		return d, errors.New("no goroutine in the dump")
	}
	return d, nil
}

// funcName strips the arguments of a traceback's function line.
func funcName(line string) string {
	if i := strings.LastIndex(line, "("); i > 0 {
		line = line[:i]
	}
	return line
}

// lowLevel reports whether a traceback function line is in a package that
// says little about who owns the goroutine.
func lowLevel(line string) bool {
	for _, p := range []string{"runtime.", "internal/", "sync.", "syscall.", "net.", "bufio.", "io.", "time.", "context.", "os.", "crypto/", "goroutine "} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return bytes.HasPrefix([]byte(line), []byte("panic("))
}

// cpuTime is the CPU time process pid has used, all its threads (exited
// ones included), user and system: the kernel's sum_exec_runtime of the
// thread group, read with clock_gettime on the process's CPU-time clock
// (clock_getcpuclockid(3)) at nanosecond resolution. /proc/PID/stat's
// utime+stime is the same total split in two and rounded down to clock
// ticks (10 ms): statCPU reads that, for a cross-check over whole runs.
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

// statCPU is utime+stime from /proc/PID/stat (clock ticks, 10 ms each).
func statCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: count from after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	// After ")": state is field 3 of the line, utime 14 and stime 15.
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * clockTick
}

// forceGC makes the server run a garbage collection through
// net/http/pprof (GET /debug/pprof/heap?gc=1); false when it has no pprof.
func forceGC(ctx context.Context, c *http.Client, p *process) bool {
	body, ok := get(ctx, c, "http://"+p.addr+"/debug/pprof/heap?gc=1")
	return ok && len(body) > 0
}

// pprofGoroutines is the goroutine profile's total (GET
// /debug/pprof/goroutine?debug=1), or -1 without pprof.
func pprofGoroutines(ctx context.Context, c *http.Client, p *process) int {
	body, ok := get(ctx, c, "http://"+p.addr+"/debug/pprof/goroutine?debug=1")
	if !ok {
		return -1
	}
	line, _, _ := strings.Cut(string(body), "\n")
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "goroutine profile: total")))
	if err != nil {
		return -1
	}
	return n
}

// get returns the body of a 200 response to GET url.
func get(ctx context.Context, c *http.Client, url string) ([]byte, bool) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return body, err == nil && resp.StatusCode == http.StatusOK
}
