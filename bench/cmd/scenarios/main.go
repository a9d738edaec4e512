// Command scenarios measures what one misbehaving client costs a server
// process, from outside (RSS from /proc/PID/status, CPU from
// /proc/PID/task/*/schedstat): costs a go test -bench in one process cannot
// show. The program starts itself as the server (a streamhttp handler on a
// hub, or a stdio server, with the default options), runs one scenario
// against it -runs times and prints each run and the median [min–max].
// Linux only. From the repository root:
//
//	go run ./bench/cmd/scenarios -run NAME [-runs 3] [-n N] [-bytes B] [-watch D]
//
// The scenarios (each named after the program it replaces):
//
//	slowbody       -n connections (2,000) send a listen request's headers and
//	               the first byte of its body, then nothing: how long each
//	               lives (the server answers 408 after its ReadTimeout), and
//	               the server's peak RSS meanwhile; watched for -watch (20 s)
//	trailingbytes  a client sends -bytes (4 MiB) after its listen request on
//	               a taken-over connection: the server's CPU until it has
//	               ended the stream (ErrUnexpectedBytes) and reset the
//	               connection
//	stdioflood     a stdio client writes -n tools/list requests (200,000) and
//	               never reads the server's stdout: the server's peak RSS, and
//	               whether it gave up (stdio's WriteTimeout, 5 s) within -watch
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/bench/internal/harness"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/stdio"
	"github.com/mcplisten/listen/streamhttp"
)

// scenario runs once against a fresh server and returns its figure (in the
// unit named) and a line about the run.
type scenario struct {
	unit string
	run  func(o opts) (float64, string, error)
}

type opts struct {
	n, bytes int
	watch    time.Duration
}

var scenarios = map[string]scenario{
	"slowbody":      {"s, median life of a connection", slowBody},
	"trailingbytes": {"ms of server CPU", trailingBytes},
	"stdioflood":    {"MiB of peak RSS", stdioFlood},
}

func main() {
	serveAs := flag.String("serve", "", "run as the server: http or stdio (internal)")
	name := flag.String("run", "", "the scenario: slowbody, trailingbytes or stdioflood")
	runs := flag.Int("runs", 3, "runs, each on a fresh server process")
	n := flag.Int("n", 0, "connections (slowbody; default 2000) or requests (stdioflood; default 200000)")
	size := flag.Int("bytes", 4<<20, "trailingbytes: bytes sent after the listen request")
	watch := flag.Duration("watch", 20*time.Second, "slowbody, stdioflood: how long to watch the server")
	flag.Parse()
	if *serveAs != "" {
		check(serve(*serveAs))
		return
	}
	sc, ok := scenarios[*name]
	if !ok {
		check(fmt.Errorf("-run %q: want slowbody, trailingbytes or stdioflood", *name))
	}
	o := opts{n: *n, bytes: *size, watch: *watch}
	if o.n == 0 {
		o.n = map[string]int{"slowbody": 2000, "stdioflood": 200_000}[*name]
	}
	var vs []float64
	for i := range *runs {
		v, line, err := sc.run(o)
		check(err)
		fmt.Printf("run %d: %s\n", i+1, line)
		vs = append(vs, v)
	}
	fmt.Printf("%s: %s %s, median [min–max] of %d runs\n", *name, harness.Summarize(vs), sc.unit, len(vs))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "scenarios:", err)
		os.Exit(1)
	}
}

// serve is the server process. http: a streamhttp handler on a hub on
// 127.0.0.1, its address printed as "listening ADDR" and each closed
// stream as "closed REASON", until stdin ends. stdio: a stdio server on
// stdin and stdout that answers every request at once.
func serve(kind string) error {
	h, err := hub.New(hub.Options{})
	if err != nil {
		return err
	}
	if kind == "stdio" {
		app := stdio.HandlerFunc(func(context.Context, jsonrpc.Message) (json.RawMessage, error) {
			return json.RawMessage(`{"tools":[]}`), nil
		})
		srv, err := stdio.New(listen.NewServer(h, listen.Options{}), stdio.Options{Handler: app})
		if err != nil {
			return err
		}
		return srv.Serve(context.Background(), os.Stdin, os.Stdout)
	}
	sh, err := streamhttp.New(listen.NewServer(h, listen.Options{Capabilities: listen.Capabilities{ToolsListChanged: true}, OnClose: func(_ *listen.Subscription, reason error) { fmt.Println("closed:", reason) }}), streamhttp.Options{})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: sh, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }() // ends on the Shutdown below
	fmt.Println("listening", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = sh.Shutdown(ctx)
	return hs.Shutdown(ctx)
}

// child is a server process started by start.
type child struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    io.ReadCloser
	lines  *bufio.Scanner
	addr   string
	exited chan struct{} // closed once the process has exited
}

// start starts this program as a server of kind; for http, it waits for
// the server's address.
func start(kind string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c := &child{cmd: exec.Command(self, "-serve", kind), exited: make(chan struct{})}
	c.cmd.Stderr = os.Stderr
	if c.in, err = c.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if c.out, err = c.cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { // ends when the process exits, which stop forces
		_ = c.cmd.Wait()
		close(c.exited)
	}()
	if kind == "http" {
		c.lines = bufio.NewScanner(c.out)
		if !c.lines.Scan() || !strings.HasPrefix(c.lines.Text(), "listening ") {
			c.stop()
			return nil, errors.New("the server printed no address")
		}
		c.addr = strings.TrimPrefix(c.lines.Text(), "listening ")
	}
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// stop closes the server's stdin (an http server then shuts down), kills it
// after a second, and waits for it.
func (c *child) stop() {
	_ = c.in.Close()
	select {
	case <-c.exited:
	case <-time.After(time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

// peakRSS samples the server's peak RSS (KiB) every 100 ms until done is closed
// or d has passed, and returns it.
func (c *child) peakRSS(d time.Duration, done <-chan struct{}) int64 {
	var peak int64
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	end := time.After(d)
	for {
		peak = max(peak, statusKB(c.pid(), "VmHWM"))
		select {
		case <-tick.C:
		case <-done:
			return peak
		case <-end:
			return peak
		}
	}
}

// listenHead is a listen request's bytes up to its body, of length n.
func listenHead(addr string, n int) string {
	return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"+
		"Mcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n", addr, n)
}

const listenBody = `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
	`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`

func slowBody(o opts) (float64, string, error) {
	c, err := start("http")
	if err != nil {
		return 0, "", err
	}
	defer c.stop()
	var mu sync.Mutex
	var lives []float64
	statuses := map[string]int{}
	var wg sync.WaitGroup
	for range o.n {
		wg.Add(1)
		go func() { // ends when the server answers or closes, or at the watch's end
			defer wg.Done()
			t0 := time.Now()
			conn, err := net.Dial("tcp", c.addr)
			if err != nil {
				return
			}
			defer conn.Close()
			_ = conn.SetDeadline(t0.Add(o.watch))
			if _, err := io.WriteString(conn, listenHead(c.addr, len(listenBody))+listenBody[:1]); err != nil {
				return
			}
			status := "closed"
			if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
				status = resp.Status
			} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return // still open at the end of the watch
			}
			mu.Lock()
			defer mu.Unlock()
			lives = append(lives, time.Since(t0).Seconds())
			statuses[status]++
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }() // ends once every connection has
	peak := c.peakRSS(o.watch+time.Second, done)
	<-done
	if len(lives) == 0 {
		return 0, "", fmt.Errorf("none of %d connections ended within %v", o.n, o.watch)
	}
	life := harness.Summarize(lives)
	return life.Median, fmt.Sprintf("%d of %d connections ended by the server after %s s (%v); server peak RSS %.1f MiB",
		len(lives), o.n, life, statuses, float64(peak)/1024), nil
}

func trailingBytes(o opts) (float64, string, error) {
	c, err := start("http")
	if err != nil {
		return 0, "", err
	}
	defer c.stop()
	conn, err := net.Dial("tcp", c.addr)
	if err != nil {
		return 0, "", err
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, listenHead(c.addr, len(listenBody))+listenBody); err != nil {
		return 0, "", err
	}
	br := bufio.NewReader(conn)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return 0, "", fmt.Errorf("reading the acknowledgement: %w", err)
		}
		if strings.Contains(line, "acknowledged") {
			break
		}
	}
	cpu0 := cpuTime(c.pid())
	sent, chunk := 0, make([]byte, 64<<10)
	for sent < o.bytes {
		n, err := conn.Write(chunk[:min(len(chunk), o.bytes-sent)])
		sent += n
		if err != nil {
			break // the server reset the connection
		}
	}
	_ = conn.(*net.TCPConn).CloseWrite()
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	_, _ = io.Copy(io.Discard, br)
	if !c.lines.Scan() {
		return 0, "", errors.New("the stream did not end")
	}
	ms := float64(cpuTime(c.pid())-cpu0) / 1e6
	return ms, fmt.Sprintf("server CPU %.2f ms while the client sent %d of %d bytes; stream %s", ms, sent, o.bytes, c.lines.Text()), nil
}

func stdioFlood(o opts) (float64, string, error) {
	c, err := start("stdio")
	if err != nil {
		return 0, "", err
	}
	defer c.stop()
	t0 := time.Now()
	go func() { // ends after n requests or at the first failed write (c.stop closes stdin)
		for i := range o.n {
			if _, err := fmt.Fprintf(c.in, `{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{}}`+"\n", i+1); err != nil {
				return
			}
		}
	}()
	peak := c.peakRSS(o.watch, c.exited)
	end := fmt.Sprintf("still serving after %v", o.watch)
	select {
	case <-c.exited:
		end = fmt.Sprintf("Serve returned after %.1f s", time.Since(t0).Seconds())
	default:
	}
	return float64(peak) / 1024, fmt.Sprintf("peak RSS %.1f MiB; %s", float64(peak)/1024, end), nil
}

// statusKB is a field of /proc/PID/status in KiB, 0 if unreadable.
func statusKB(pid int, field string) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	_, v, _ := strings.Cut(string(b), "\n"+field+":")
	v, _, _ = strings.Cut(strings.TrimSpace(v), " ")
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// cpuTime is the time the threads of process pid have run: the first
// field of each /proc/PID/task/TID/schedstat, in nanoseconds.
func cpuTime(pid int) time.Duration {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var total time.Duration
	for _, t := range tasks {
		b, _ := os.ReadFile(t) // a thread that exited meanwhile counts 0
		f := strings.Fields(string(b))
		if len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			total += time.Duration(ns)
		}
	}
	return total
}
