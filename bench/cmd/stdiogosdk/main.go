// Command stdiogosdk measures a go-sdk server served over stdio by
// gosdk.NewStdio (the examples/stdio binary) from outside, as a client
// process sees it. Linux only (it reads /proc). From the repository root:
//
//	go run ./bench/cmd/stdiogosdk [-mode cancels|unread|both|large] [-runs 5] [-bin path] [-args "..."]
//
// Without -bin it builds ./examples/stdio first; -bin runs another build
// (an older one, to compare, or another server: -bin of examples/mcpgo with
// -args -stdio for the mcp-go adapter, of bench/cmd/mcpgoserver with -args
// -stdio for plain mcp-go).
//
//   - cancels: after an initialize, the client writes -n notifications/cancelled
//     naming ids that are not in flight, then a ping, and waits for the
//     ping's answer; the server's CPU time (all its threads, from
//     /proc/PID/task/*/schedstat) over that span, less its idle rate, per
//     cancellation, against the client's CPU time to write them (the
//     writing thread's, RUSAGE_THREAD).
//   - unread: after an initialize, the client writes tools/list requests as
//     fast as the server takes them and never reads its standard output;
//     the server's peak RSS (VmHWM) and the requests it took, until it
//     exits (its write timeout) or -watch passes.
//   - large (not part of both): after an initialize (with -modern, as a
//     2026-07-28 client: a server/discover), the client writes
//     -lines tools/list requests of -line-bytes each (their params._meta
//     padded) at once, and reads their -lines answers; the rise of the
//     server's peak RSS (VmHWM after, less VmRSS before): what the server
//     holds of large lines in flight.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcplisten/listen/bench/internal/procstat"
)

func main() {
	mode := flag.String("mode", "both", "cancels, unread or both")
	bin := flag.String("bin", "", "the server binary (default: go build ./examples/stdio)")
	n := flag.Int("n", 50_000, "cancellations the client sends (cancels)")
	flood := flag.Int("flood", 200_000, "tools/list requests the client sends (unread)")
	watch := flag.Duration("watch", 15*time.Second, "how long to watch the server (unread)")
	runs := flag.Int("runs", 5, "runs of each measurement")
	args := flag.String("args", "", "arguments of the server binary, space-separated")
	lines := flag.Int("lines", 64, "requests the client sends at once (large)")
	lineBytes := flag.Int("line-bytes", 1<<20, "the size of each (large)")
	modern := flag.Bool("modern", false, "a 2026-07-28 client: no initialize, each request with its _meta (large)")
	flag.Parse()
	serverArgs = strings.Fields(*args)

	if *bin == "" {
		dir, err := os.MkdirTemp("", "stdiogosdk")
		check(err)
		defer os.RemoveAll(dir)
		*bin = filepath.Join(dir, "stdio")
		build := exec.Command("go", "build", "-o", *bin, "./examples/stdio")
		build.Stderr = os.Stderr
		check(build.Run())
	}
	fmt.Printf("load average before: %s", loadavg())
	if *mode == "cancels" || *mode == "both" {
		var server, client []float64
		for i := range *runs {
			s, c := cancels(*bin, *n)
			fmt.Printf("cancels run %d: server %.2f µs per cancellation, client %.3f µs\n", i+1, s, c)
			server, client = append(server, s), append(client, c)
		}
		fmt.Printf("cancels, %d runs of %d: server CPU per cancellation median %.2f µs [%.2f–%.2f]; client median %.3f µs [%.3f–%.3f]\n",
			*runs, *n, procstat.Median(server), slices.Min(server), slices.Max(server), procstat.Median(client), slices.Min(client), slices.Max(client))
	}
	if *mode == "unread" || *mode == "both" {
		var peaks, taken []float64
		for i := range *runs {
			peak, took, end := unread(*bin, *flood, *watch)
			fmt.Printf("unread run %d: peak RSS %.1f MiB, requests taken %d of %d, %s\n", i+1, procstat.MiB(peak), took, *flood, end)
			peaks, taken = append(peaks, procstat.MiB(peak)), append(taken, float64(took))
		}
		fmt.Printf("unread, %d runs: peak RSS median %.1f MiB [%.1f–%.1f]; requests taken median %.0f [%.0f–%.0f]\n",
			*runs, procstat.Median(peaks), slices.Min(peaks), slices.Max(peaks), procstat.Median(taken), slices.Min(taken), slices.Max(taken))
	}
	if *mode == "large" {
		var rises []float64
		for i := range *runs {
			rise, before := large(*bin, *lines, *lineBytes, *modern)
			fmt.Printf("large run %d: peak RSS rise %.1f MiB (RSS before %.1f MiB)\n", i+1, procstat.MiB(rise), procstat.MiB(before))
			rises = append(rises, procstat.MiB(rise))
		}
		fmt.Printf("large, %d runs of %d lines of %d bytes: peak RSS rise median %.1f MiB [%.1f–%.1f]\n",
			*runs, *lines, *lineBytes, procstat.Median(rises), slices.Min(rises), slices.Max(rises))
	}
	fmt.Printf("load average after: %s", loadavg())
}

// serverArgs are the arguments the server binary is started with.
var serverArgs []string

// large returns the rise of the server's peak RSS over its RSS before, as
// it serves n tools/list requests of size bytes written at once.
func large(bin string, n, size int, modern bool) (rise, before int64) {
	s := start(bin)
	defer s.stop()
	head, tail := `{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{"_meta":{"pad":"`, `"}}}`
	if modern {
		tail = `","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		s.call(`{"jsonrpc":"2.0","id":"warm","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, `"id":"warm"`)
	} else {
		s.initialize()
	}
	pid := s.cmd.Process.Pid
	time.Sleep(200 * time.Millisecond) // the handshake's garbage settles
	before, _, err := procstat.Memory(pid)
	check(err)
	pad := strings.Repeat("x", max(size-len(head)-len(tail), 0))
	var buf []byte
	for i := range n {
		buf = fmt.Appendf(buf, head, i+1)
		buf = append(append(append(buf, pad...), tail...), '\n')
	}
	written := make(chan error, 1)
	go func() { _, err := s.in.Write(buf); written <- err }() // the client's writes, all at once
	for answered := 0; answered < n; {
		l, err := s.out.ReadString('\n')
		check(err)
		if strings.Contains(l, `"id":`) && (strings.Contains(l, `"result":`) || strings.Contains(l, `"error":`)) {
			answered++
		}
	}
	check(<-written)
	_, hwm, err := procstat.Memory(pid)
	check(err)
	return hwm - before, before
}

// server is a started server process.
type server struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	exited chan error
}

func start(bin string) *server {
	cmd := exec.Command(bin, serverArgs...)
	in, err := cmd.StdinPipe()
	check(err)
	out, err := cmd.StdoutPipe()
	check(err)
	cmd.Stderr = io.Discard
	check(cmd.Start())
	s := &server{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), exited: make(chan error, 1)}
	go func() { s.exited <- cmd.Wait() }() // stop receives from exited
	return s
}

// call writes line and reads output lines until one holds want.
func (s *server) call(line, want string) {
	_, err := io.WriteString(s.in, line+"\n")
	check(err)
	for {
		l, err := s.out.ReadString('\n')
		check(err)
		if strings.Contains(l, want) {
			return
		}
	}
}

// initialize runs an initialize-era handshake (protocol 2025-11-25).
func (s *server) initialize() {
	s.call(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"stdiogosdk","version":"0"}}}`, `"id":"init"`)
	_, err := io.WriteString(s.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	check(err)
	s.call(`{"jsonrpc":"2.0","id":"warm","method":"ping"}`, `"id":"warm"`)
}

func (s *server) stop() {
	_ = s.in.Close()
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// cancels returns the server's and the client's CPU time per cancellation
// of an id not in flight, in µs.
func cancels(bin string, n int) (serverUS, clientUS float64) {
	s := start(bin)
	defer s.stop()
	s.initialize()
	pid := s.cmd.Process.Pid

	// The idle rate (timers, the runtime) is subtracted.
	idle0, err := procstat.CPU(pid)
	check(err)
	t0 := time.Now()
	time.Sleep(500 * time.Millisecond)
	idle1, err := procstat.CPU(pid)
	check(err)
	idleRate := float64(idle1-idle0) / float64(time.Since(t0))

	var buf []byte
	for i := range n {
		buf = fmt.Appendf(buf, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"not in flight"}}`+"\n", 1_000_000+i)
	}
	before, err := procstat.CPU(pid)
	check(err)
	t1 := time.Now()
	// The writing thread's own CPU time: the client's cost.
	runtime.LockOSThread()
	var ru0, ru1 syscall.Rusage
	check(syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru0))
	for rest := buf; len(rest) > 0; {
		k := min(len(rest), 64<<10)
		_, err := s.in.Write(rest[:k])
		check(err)
		rest = rest[k:]
	}
	check(syscall.Getrusage(1, &ru1))
	runtime.UnlockOSThread()
	s.call(`{"jsonrpc":"2.0","id":"end","method":"ping"}`, `"id":"end"`)
	// Work the cancellations started on other goroutines settles.
	time.Sleep(200 * time.Millisecond)
	after, err := procstat.CPU(pid)
	check(err)
	busy := float64(after-before) - idleRate*float64(time.Since(t1))
	client := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()) - time.Duration(ru0.Utime.Nano()+ru0.Stime.Nano())
	return busy / float64(n) / 1e3, float64(client) / float64(n) / 1e3
}

// unread returns the server's peak RSS and the requests it took while its
// output is never read.
func unread(bin string, n int, watch time.Duration) (peak int64, taken int64, end string) {
	s := start(bin)
	s.initialize()
	pid := s.cmd.Process.Pid
	var took atomic.Int64
	go func() { // ends at the first failed write, or after n
		for i := range n {
			if _, err := fmt.Fprintf(s.in, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`+"\n", i+1); err != nil {
				return
			}
			took.Add(1)
		}
	}()
	t0 := time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-s.exited:
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				err = fmt.Errorf("exit status %d", ee.ExitCode())
			}
			_ = s.in.Close()
			return peak, took.Load(), fmt.Sprintf("the server exited after %.1fs (%v)", time.Since(t0).Seconds(), err)
		case <-tick.C:
			_, hwm, _ := procstat.Memory(pid) // zero once the server exited
			peak = max(peak, hwm)
			if time.Since(t0) > watch {
				_ = s.in.Close()
				_ = s.cmd.Process.Kill()
				<-s.exited
				return peak, took.Load(), fmt.Sprintf("the server was still running after %v", watch)
			}
		}
	}
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return string(b)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "stdiogosdk:", err)
		os.Exit(1)
	}
}
