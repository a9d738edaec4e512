// Command slowbody measures how long incomplete listen requests live in a
// streamhttp server process, and its memory while they do.
//
// It starts itself as the server (a streamhttp.Handler with the default
// Options on a hub, served by a plain http.Server on 127.0.0.1), opens -n
// HTTP/1.1 connections that each send a listen request's headers and then
// the body in one of these ways, and never finish it:
//
//	slow     a listen body, one byte every -interval (10 s)
//	chunked  a chunked body, one byte-long chunk every -interval, without end
//	short    a body of -size bytes (0: streamhttp.DefaultMaxBodyBytes)
//	         announced by Content-Length and sent but for its last byte
//
// For each connection it records how long it lived: from the dial to the
// moment the server answered or closed it. It samples the server's RSS
// (VmRSS, VmHWM from /proc) every 100 ms, for -watch. Linux only. From the
// repository root:
//
//	go run ./bench/cmd/slowbody [-kind slow] [-n 2000] [-watch 30s] [-runs 3]
//
// It builds against any version of the package that has New and
// DefaultMaxBodyBytes, so the same program measures before and after a
// change.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcplisten/listen/bench/internal/procstat"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/streamhttp"
)

func main() {
	server := flag.Bool("server", false, "run as the server (internal)")
	kind := flag.String("kind", "slow", "how the body is sent: slow, chunked or short")
	n := flag.Int("n", 2000, "connections")
	size := flag.Int("size", 0, "short: the announced body size (0: streamhttp.DefaultMaxBodyBytes)")
	interval := flag.Duration("interval", 10*time.Second, "slow, chunked: time between two bytes")
	watch := flag.Duration("watch", 30*time.Second, "how long to watch")
	runs := flag.Int("runs", 1, "runs (the summary gives medians, min and max)")
	flag.Parse()
	if *server {
		serve()
		return
	}
	if *size == 0 {
		*size = streamhttp.DefaultMaxBodyBytes
	}
	var lives, peaks, ends, open []float64
	for i := range *runs {
		r := run(*kind, *n, *size, *interval, *watch)
		fmt.Printf("run %d: %s\n", i+1, r)
		if len(r.lives) > 0 {
			lives = append(lives, procstat.Median(r.lives))
		}
		peaks = append(peaks, procstat.MiB(r.peak))
		ends = append(ends, procstat.MiB(r.last))
		open = append(open, float64(r.open))
	}
	if *runs > 1 {
		fmt.Printf("over %d runs (medians of the runs' figures, min-max): ", *runs)
		if len(lives) > 0 {
			fmt.Printf("request life %.2fs (%.2f-%.2f), ", procstat.Median(lives), slices.Min(lives), slices.Max(lives))
		}
		fmt.Printf("still open after %v %.0f (%.0f-%.0f), peak RSS %.1f MiB (%.1f-%.1f), RSS at the end %.1f MiB (%.1f-%.1f)\n",
			*watch, procstat.Median(open), slices.Min(open), slices.Max(open),
			procstat.Median(peaks), slices.Min(peaks), slices.Max(peaks), procstat.Median(ends), slices.Min(ends), slices.Max(ends))
	}
}

type result struct {
	kind       string
	n          int
	lives      []float64 // seconds, of the connections the server ended
	answers    map[string]int
	open       int // still open at the end of the watch
	failed     int // could not connect or send the head
	peak, last int64
}

func (r result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s connections: ", r.n, r.kind)
	if len(r.lives) > 0 {
		fmt.Fprintf(&b, "%d ended by the server after %.2fs (median; min %.2f, max %.2f), answers %v; ",
			len(r.lives), procstat.Median(r.lives), slices.Min(r.lives), slices.Max(r.lives), r.answers)
	}
	fmt.Fprintf(&b, "%d still open at the end; %d failed; server peak RSS %.1f MiB, at the end %.1f MiB",
		r.open, r.failed, procstat.MiB(r.peak), procstat.MiB(r.last))
	return b.String()
}

func run(kind string, n, size int, interval, watch time.Duration) result {
	cmd := exec.Command(os.Args[0], "-server")
	out, err := cmd.StdoutPipe()
	check(err)
	cmd.Stderr = os.Stderr
	check(cmd.Start())
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	addr, err := bufio.NewReader(out).ReadString('\n')
	check(err)
	addr = strings.TrimSpace(addr)

	body := listenBody()
	if kind == "short" {
		body += strings.Repeat(" ", max(0, size-len(body)))
	}
	head := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\nMcp-Method: subscriptions/listen\r\n" +
		"Mcp-Protocol-Version: 2026-07-28\r\n"
	switch kind {
	case "slow", "short":
		head += "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	case "chunked":
		head += "Transfer-Encoding: chunked\r\n\r\n"
	default:
		check(fmt.Errorf("unknown -kind %q", kind))
	}

	r := result{kind: kind, n: n, answers: map[string]int{}}
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t0 := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			conn, err := net.Dial("tcp", addr)
			if err == nil {
				_, err = io.WriteString(conn, head)
			}
			if err != nil {
				mu.Lock()
				r.failed++
				mu.Unlock()
				return
			}
			defer conn.Close()
			// send ends on stop or a failed write, the reader when the
			// connection ends (closed on return, at the latest); neither
			// is waited for: the program exits after printing the result.
			go send(conn, kind, body, interval, stop)
			// The connection lives until the server answers or closes it.
			ended := make(chan string, 1)
			go func() {
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					ended <- "closed"
					return
				}
				resp.Body.Close()
				ended <- resp.Status
			}()
			select {
			case status := <-ended:
				mu.Lock()
				r.lives = append(r.lives, time.Since(start).Seconds())
				r.answers[status]++
				mu.Unlock()
			case <-stop:
				mu.Lock()
				r.open++
				mu.Unlock()
			}
		}()
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for time.Since(t0) < watch {
		<-tick.C
		rss, hwm, _ := procstat.Memory(cmd.Process.Pid) // zero once the server exited
		r.peak = max(r.peak, hwm)
		if rss > 0 {
			r.last = rss
		}
	}
	close(stop)
	wg.Wait()
	return r
}

// send writes the body the way kind says, until a write fails or stop.
func send(conn net.Conn, kind, body string, interval time.Duration, stop <-chan struct{}) {
	if kind == "short" {
		_, _ = io.WriteString(conn, body[:len(body)-1])
		return
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		var err error
		if kind == "slow" {
			_, err = io.WriteString(conn, body[i%len(body):i%len(body)+1])
		} else {
			_, err = io.WriteString(conn, "1\r\n \r\n")
		}
		if err != nil {
			return
		}
	}
}

func listenBody() string {
	return `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{` +
		`"notifications":{"toolsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
}

// serve is the server process: the Handler with the default options, its
// address on stdout.
func serve() {
	changes, err := hub.New(hub.Options{})
	check(err)
	h, err := streamhttp.New(changes, streamhttp.Options{
		Listen: listen.Options{Capabilities: listen.Capabilities{ToolsListChanged: true}},
	})
	check(err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	fmt.Println(ln.Addr())
	go func() { // for the life of the server process
		var ms runtime.MemStats
		for range time.Tick(5 * time.Second) {
			runtime.ReadMemStats(&ms)
			fmt.Fprintf(os.Stderr, "server: goroutines %d, heap in use %.1f MiB\n", runtime.NumGoroutine(), float64(ms.HeapInuse)/(1<<20))
		}
	}()
	check((&http.Server{Handler: h}).Serve(ln))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowbody:", err)
		os.Exit(1)
	}
}
