//go:build unix

// Command drainbench measures the paced drain (listen.Options.DrainWindow)
// over loopback HTTP/1.1: a server process (this binary, -serve) serves a
// hub through streamhttp; this one opens -n listens, has the server drain
// (Shutdown, -deadline), timestamps the completions its clients read and
// retries a listen every 10 ms. It prints the most completions read in any
// 1-second window (goal: at most 1.25 × n / window), the same server side,
// the streams completed in time, and the retries' answers.
//
//	go run ./bench/cmd/drainbench [-n 10000] [-window 20s] [-deadline 30s]
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

func main() {
	n := flag.Int("n", 10000, "listen streams open when the drain starts")
	window := flag.Duration("window", 20*time.Second, "drain window (listen.Options.DrainWindow)")
	deadline := flag.Duration("deadline", 30*time.Second, "deadline of Shutdown's context, from the drain's start")
	child := flag.Bool("serve", false, "internal: be the server process")
	flag.Parse()
	if *child {
		serve(*n, *window, *deadline)
		return
	}
	var lim syscall.Rlimit // n streams take n descriptors on each side
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil && lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) // the server process inherits it
	}
	r := measure(*n, *window, *deadline)
	fmt.Printf("n=%d window=%v deadline=%v: most completions read in 1 s %d (goal ≤ %.0f); %d read (%d before the deadline, %d with the retry hint), "+
		"the last at %v; server %s; listens tried during the drain %d: %d refused (503, Retry-After), %d accepted, %d failed otherwise\n",
		*n, *window, *deadline, r.peak, 1.25*float64(*n)/window.Seconds(), r.read, r.inTime, r.hinted, r.last.Round(time.Millisecond),
		r.server, r.attempts, r.refused, r.accepted, r.other)
}

// serve is the server process: it prints "addr HOST:PORT", serves until a
// line on stdin, drains, printing "draining" then "done: ...", and exits.
func serve(n int, window, deadline time.Duration) {
	h, err := hub.New(hub.Options{})
	check(err)
	var mu sync.Mutex
	var closes []time.Time
	srv := listen.NewServer(h, listen.Options{
		Capabilities: listen.Capabilities{ToolsListChanged: true},
		MaxStreams:   n + 1024, MaxStreamsPerKey: -1, DrainWindow: window, RetryHint: true, // every stream comes from loopback
		OnClose: func(*listen.Subscription, error) { mu.Lock(); closes = append(closes, time.Now()); mu.Unlock() },
	})
	lh, err := streamhttp.New(srv, streamhttp.Options{})
	check(err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	hs := &http.Server{Handler: lh, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }() // ends on hs.Close below
	fmt.Printf("addr %s\n", ln.Addr())
	_, err = bufio.NewReader(os.Stdin).ReadString('\n')
	check(err)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start, shut := time.Now(), make(chan error, 1)
	go func() { shut <- lh.Shutdown(ctx) }()
	for !srv.Stats().Draining {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("draining")
	err = <-shut
	mu.Lock()
	fmt.Printf("done: Shutdown took %v (%v), most closes in 1 s %d\n", time.Since(start).Round(time.Millisecond), err, peak(closes))
	mu.Unlock()
	check(hs.Close())
}

// check ends the process on an error: a measurement that went wrong.
func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

// result is one run's figures.
type result struct {
	read, inTime, hinted, peak, attempts, refused, accepted, other int
	last                                                           time.Duration
	server                                                         string
}

// measure runs the server process, opens n listens, drains and measures.
func measure(n int, window, deadline time.Duration) (r result) {
	exe, err := os.Executable()
	check(err)
	cmd := exec.Command(exe, "-serve", fmt.Sprint("-n=", n), "-window="+window.String(), "-deadline="+deadline.String())
	cmd.Stderr = os.Stderr
	stdin, err1 := cmd.StdinPipe()
	stdout, err2 := cmd.StdoutPipe()
	check(errors.Join(err1, err2, cmd.Start()))
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }() // the server exits after "done"
	lines := bufio.NewScanner(stdout)
	next := func() string { lines.Scan(); return lines.Text() }
	addr := strings.TrimPrefix(next(), "addr ") // empty if the server failed: every listen then fails

	ends, hinted := make([]time.Time, n), make([]bool, n)
	var clients sync.WaitGroup
	acks, slots := make(chan error, n), make(chan struct{}, 128) // 128 listens being opened at once
	for i := range n {
		slots <- struct{}{}
		clients.Go(func() { // ends with its stream: the server closes it, at the latest when it exits
			conn, br, status, err := post(addr, fmt.Sprintf("s%d", i))
			if err == nil && status != http.StatusOK {
				err = fmt.Errorf("status %d", status)
			}
			if err == nil {
				_, err = event(br) // the acknowledgement
			}
			<-slots
			if acks <- err; err != nil {
				return
			}
			if data, err := event(br); err == nil && strings.Contains(data, `"resultType":"complete"`) {
				ends[i], hinted[i] = time.Now(), strings.Contains(data, spec.MetaRetryAfterMs)
			}
			_ = conn.Close()
		})
	}
	for range n {
		check(<-acks)
	}

	start := time.Now()
	_, err = io.WriteString(stdin, "drain\n")
	check(err)
	if next() != "draining" { // new listens are refused from now on
		log.Fatal("the server did not drain")
	}
	var stop atomic.Bool
	retried := make(chan struct{})
	go func() { // a client retrying during the drain; ends on stop
		defer close(retried)
		for i := 0; !stop.Load(); i++ {
			conn, _, status, err := post(addr, fmt.Sprintf("retry%d", i))
			r.attempts++
			switch {
			case err != nil: // the server closing its listener after "done", say
				r.other++
			case status == http.StatusServiceUnavailable:
				r.refused++
			default:
				r.accepted++
			}
			if conn != nil {
				_ = conn.Close()
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	r.server = strings.TrimPrefix(next(), "done: ") // Shutdown returned
	stop.Store(true)
	<-retried
	clients.Wait()

	var read []time.Time
	for i, e := range ends {
		if d := e.Sub(start); !e.IsZero() {
			read, r.last = append(read, e), max(r.last, d)
			if d < deadline {
				r.inTime++
			}
			if hinted[i] {
				r.hinted++
			}
		}
	}
	r.read, r.peak = len(read), peak(read)
	return r
}

// peak returns the most times in any 1-second sliding window; it sorts
// times.
func peak(times []time.Time) (most int) {
	slices.SortFunc(times, time.Time.Compare)
	for i, j := 0, 0; j < len(times); j++ {
		for times[j].Sub(times[i]) >= time.Second {
			i++
		}
		most = max(most, j-i+1)
	}
	return most
}

// post opens a connection to addr and sends a listen with id; it returns
// the response's status (a 503 must carry Retry-After and the drain's
// error), with the reader at the response's body.
func post(addr, id string) (net.Conn, *bufio.Reader, int, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, 0, err
	}
	body := `{"jsonrpc":"2.0","id":"` + id + `","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"` + spec.ProtocolVersion + `","io.modelcontextprotocol/clientCapabilities":{}}}}`
	br := bufio.NewReaderSize(conn, 1024)
	_, werr := fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Mcp-Protocol-Version: %s\r\nMcp-Method: %s\r\nContent-Length: %d\r\n\r\n%s", addr, spec.ProtocolVersion, spec.MethodListen, len(body), body)
	resp, err := http.ReadResponse(br, nil) // fails too if the request could not be written
	if err != nil {
		return conn, br, 0, errors.Join(werr, err)
	}
	if resp.StatusCode == http.StatusServiceUnavailable {
		b, _ := io.ReadAll(resp.Body)
		if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), `"code":-32603,"message":"`+"Server is shutting down"+`"`) {
			return conn, br, 0, fmt.Errorf("a 503 without Retry-After or the drain's error: %s", b)
		}
	}
	return conn, br, resp.StatusCode, nil
}

// event returns the data of the next SSE event, skipping comments.
func event(br *bufio.Reader) (string, error) {
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: "); ok {
			return data, nil
		}
	}
}
