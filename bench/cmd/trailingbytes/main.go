//go:build linux

// Command trailingbytes measures what a client that keeps sending bytes
// after its listen request costs the server, which should end the stream
// at once, however much more the client sends.
//
// It starts itself as the server (a streamhttp.Handler on loopback, serving
// a hub.Hub, or with -source blocking a Source whose streams block in Next,
// which takes the portable path with a reader goroutine), opens a listen on
// a raw connection, reads the acknowledgement, then writes -bytes more on
// the same connection as fast as the server takes them, until the server
// closes it. It reports the server's CPU time (all its threads, from
// /proc/PID/task/*/schedstat, in nanoseconds) from just before the first
// trailing byte until the connection is closed, how many bytes the server
// took, and how the stream ended. Linux only. From the repository root:
//
//	go run ./bench/cmd/trailingbytes [-bytes 4194304] [-runs 5] [-source hub|blocking]
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mcplisten/listen/bench/internal/child"
	"github.com/mcplisten/listen/bench/internal/procstat"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/streamhttp"
)

func main() {
	server := flag.Bool("server", false, "run as the server (internal)")
	source := flag.String("source", "hub", "the server's Source: hub (the fast path) or blocking (a Next that blocks: the portable path)")
	size := flag.Int("bytes", 4<<20, "trailing bytes the client tries to send after its listen request")
	runs := flag.Int("runs", 5, "runs (the summary gives the median, min and max)")
	flag.Parse()
	if *server {
		serve(*source)
		return
	}
	if err := measure(*source, *size, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "trailing:", err)
		os.Exit(1)
	}
}

// serve runs the server until its stdin closes, printing its address and,
// for each stream that ends, its close reason.
func serve(source string) {
	var src listen.Source
	switch source {
	case "hub":
		h, err := hub.New(hub.Options{})
		if err != nil {
			panic(err)
		}
		src = h
	case "blocking":
		src = blockingSource{}
	default:
		panic("unknown source " + source)
	}
	h, err := streamhttp.New(src, streamhttp.Options{
		Listen: listen.Options{Capabilities: listen.Capabilities{ToolsListChanged: true}},
		OnClose: func(sub *listen.Subscription, reason error) {
			fmt.Printf("closed %s %s: %v\n", sub.ID().Raw(), listen.Classify(reason), reason)
		},
	})
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }() // ends on srv.Shutdown below, which waits for it
	fmt.Println("listening", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = h.Shutdown(ctx)
	_ = srv.Shutdown(ctx)
}

// blockingSource opens streams whose Next blocks until Close.
type blockingSource struct{}

func (blockingSource) Open(_ context.Context, _ *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	return supported, &blockingStream{done: make(chan struct{})}, nil
}

type blockingStream struct{ done chan struct{} }

func (s *blockingStream) Next() (listen.Event, error) {
	<-s.done
	return listen.Event{}, listen.ErrClosed
}

func (s *blockingStream) Close(error) { close(s.done) }

// result is one run's measurement.
type result struct {
	cpu    time.Duration
	sent   int
	reason string
}

func measure(source string, size, runs int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	p, err := child.Start(self, "-server", "-source", source)
	if err != nil {
		return err
	}
	cmd, stdin, stdout := p.Cmd, p.In, p.Out
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	out := bufio.NewScanner(stdout)
	if !out.Scan() {
		return errors.New("the server printed nothing")
	}
	addr, ok := strings.CutPrefix(out.Text(), "listening ")
	if !ok {
		return fmt.Errorf("unexpected server output %q", out.Text())
	}
	lines := make(chan string, 16)
	// Ends when the server's stdout does: it exits once stdin is closed
	// (deferred above), and cmd.Wait closes the pipe.
	go func() {
		for out.Scan() {
			lines <- out.Text()
		}
		close(lines)
	}()

	var cpus []time.Duration
	for i := range runs {
		r, err := run(cmd.Process.Pid, addr, i, size, lines)
		if err != nil {
			return err
		}
		fmt.Printf("run %d: server CPU %v while the client sent %d of %d trailing bytes; %s\n",
			i+1, r.cpu.Round(10*time.Microsecond), r.sent, size, r.reason)
		cpus = append(cpus, r.cpu)
	}
	slices.Sort(cpus)
	fmt.Printf("source %s, %d runs: server CPU median %v (min %v, max %v)\n", source, runs,
		cpus[len(cpus)/2].Round(10*time.Microsecond), cpus[0].Round(10*time.Microsecond), cpus[len(cpus)-1].Round(10*time.Microsecond))
	return nil
}

// run opens one listen, sends size trailing bytes and measures.
func run(pid int, addr string, i, size int, lines <-chan string) (result, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return result{}, err
	}
	defer conn.Close()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},`+
		`"io.modelcontextprotocol/clientInfo":{"name":"trailing","version":"1"}}}}`, i)
	if _, err := fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"+
		"Mcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body); err != nil {
		return result{}, err
	}
	br := bufio.NewReader(conn)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return result{}, fmt.Errorf("reading the acknowledgement: %w", err)
		}
		if strings.Contains(line, "acknowledged") {
			break
		}
	}
	before, err := procstat.CPU(pid)
	if err != nil {
		return result{}, err
	}
	// Send until the server closes the connection (or everything is sent).
	sent := 0
	chunk := make([]byte, 64<<10)
	for sent < size {
		n, err := conn.Write(chunk[:min(len(chunk), size-sent)])
		sent += n
		if err != nil {
			break
		}
	}
	// Then the client closes its side, so that a server that reads
	// everything (as before the fix) sees the end too; then the server's
	// end: its close of the connection.
	_ = conn.(*net.TCPConn).CloseWrite()
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	_, _ = io.Copy(io.Discard, br)
	var reason string
	select {
	case reason = <-lines:
	case <-time.After(60 * time.Second):
		return result{}, errors.New("the stream did not end")
	}
	after, err := procstat.CPU(pid)
	if err != nil {
		return result{}, err
	}
	return result{cpu: after - before, sent: sent, reason: reason}, nil
}
