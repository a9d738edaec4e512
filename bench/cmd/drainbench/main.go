//go:build unix

// Command drainbench measures the paced drain (listen.Options.DrainWindow)
// over loopback HTTP/1.1: a server process (this binary, re-run with
// -serve) serves listens from a hub through streamhttp; this process opens
// -n listens, each on its own connection, then tells the server to drain
// (Shutdown with a -deadline context) and timestamps each completion
// result as its client reads it. Meanwhile a client retries a listen every
// 10 ms: no listen may be accepted once the drain started. Per run it
// prints the most completions read in any 1-second sliding window, against
// the re-listen rate the other replicas may see (1.25 × n / window), the
// share of streams completed before the deadline, and the retries' answers.
//
//	go run ./bench/cmd/drainbench [-n 10000] [-window 20s] [-deadline 30s] [-runs 3]
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
	runs := flag.Int("runs", 1, "runs, each on a fresh server process")
	child := flag.Bool("serve", false, "internal: be the server process")
	flag.Parse()
	log.SetFlags(0)
	if *child {
		if err := serve(*n, *window, *deadline); err != nil {
			log.Fatalf("drainbench server: %v", err)
		}
		return
	}
	var lim syscall.Rlimit // 10,000 streams need 10,000 descriptors on each side
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) // inherited by the server process
	}
	var peaks, shares []float64
	for i := range *runs {
		r, err := measure(*n, *window, *deadline)
		if err != nil {
			log.Fatalf("run %d: %v", i+1, err)
		}
		fmt.Printf("run %d: %s\n", i+1, r)
		peaks, shares = append(peaks, float64(r.peak)), append(shares, 100*float64(r.inTime)/float64(*n))
	}
	fmt.Printf("n=%d window=%v deadline=%v, %d runs: peak completions per 1-s window %s (bound %.0f); completed before the deadline %s %%\n",
		*n, *window, *deadline, *runs, summary(peaks), 1.25*float64(*n)/window.Seconds(), summary(shares))
}

// serve is the server process: it prints "addr HOST:PORT", serves until a
// line on stdin, then drains, printing "draining" once new listens are
// refused and "done ELAPSED ERR" when Shutdown returns.
func serve(n int, window, deadline time.Duration) error {
	h, err := hub.New(hub.Options{})
	if err != nil {
		return err
	}
	srv := listen.NewServer(h, listen.Options{
		Capabilities: listen.Capabilities{ToolsListChanged: true},
		MaxStreams:   n + 1024, DrainWindow: window, RetryHint: true,
	})
	lh, err := streamhttp.New(srv, streamhttp.Options{})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: lh, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }() // ends on hs.Close below
	fmt.Printf("addr %s\n", ln.Addr())
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	shut := make(chan error, 1)
	go func() { shut <- lh.Shutdown(ctx) }()
	for !srv.Stats().Draining {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("draining")
	err = <-shut
	fmt.Printf("done %v %v\n", time.Since(start).Round(time.Millisecond), err)
	return hs.Close()
}

// result is one run's figures.
type result struct {
	n, completed, inTime, hinted, peak int
	last                               time.Duration
	attempts, refused, accepted, other int
	done                               string
}

func (r result) String() string {
	return fmt.Sprintf("peak %d completions in 1 s; %d/%d completed (%d before the deadline, %d with the retry hint), last at %v; server: %s; "+
		"listens tried during the drain: %d, %d refused 503 + Retry-After, %d accepted, %d failed otherwise",
		r.peak, r.completed, r.n, r.inTime, r.hinted, r.last.Round(time.Millisecond), r.done, r.attempts, r.refused, r.accepted, r.other)
}

// measure runs the server process, opens n listens, drains and measures.
func measure(n int, window, deadline time.Duration) (result, error) {
	r := result{n: n}
	exe, err := os.Executable()
	if err != nil {
		return r, err
	}
	cmd := exec.Command(exe, "-serve", fmt.Sprint("-n=", n), "-window="+window.String(), "-deadline="+deadline.String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return r, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return r, err
	}
	if err := cmd.Start(); err != nil {
		return r, err
	}
	defer func() { _ = stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	next := func() string { lines.Scan(); return lines.Text() }
	addr, ok := strings.CutPrefix(next(), "addr ")
	if !ok {
		return r, errors.New("the server did not start")
	}

	var mu sync.Mutex
	var conns []net.Conn
	ends := make([]time.Time, n)
	hinted := make([]bool, n)
	var clients sync.WaitGroup
	acks, slots := make(chan error, n), make(chan struct{}, 128) // 128 listens being opened at once
	for i := range n {
		slots <- struct{}{}
		clients.Go(func() { // ends with its stream (the server closes it, or the read deadline)
			conn, br, status, err := post(addr, fmt.Sprintf("s%d", i))
			if err == nil && status != http.StatusOK {
				err = fmt.Errorf("status %d", status)
			}
			if err == nil {
				_, err = event(br) // the acknowledgement
			}
			<-slots
			acks <- err
			if err != nil {
				return
			}
			defer conn.Close()
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			if data, err := event(br); err == nil && strings.Contains(data, `"resultType":"complete"`) {
				ends[i], hinted[i] = time.Now(), strings.Contains(data, spec.MetaRetryAfterMs)
			}
		})
	}
	for range n {
		if err := <-acks; err != nil {
			return r, fmt.Errorf("opening the listens: %w", err)
		}
	}

	start := time.Now()
	if _, err := io.WriteString(stdin, "drain\n"); err != nil {
		return r, err
	}
	mu.Lock()
	for _, c := range conns {
		_ = c.SetReadDeadline(start.Add(deadline + 5*time.Second))
	}
	mu.Unlock()
	if next() != "draining" {
		return r, errors.New("the server did not drain")
	}
	var stop atomic.Bool
	retried := make(chan struct{})
	go func() { // a client retrying during the drain; ends on stop
		defer close(retried)
		for i := 0; !stop.Load(); i++ {
			r.attempts++
			conn, _, status, err := post(addr, fmt.Sprintf("retry%d", i))
			switch {
			case err != nil:
				r.other++
			case status == http.StatusServiceUnavailable:
				r.refused++
			default:
				r.accepted++
			}
			if conn != nil {
				conn.Close()
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	r.done = strings.TrimPrefix(next(), "done ") // Shutdown returned
	stop.Store(true)
	<-retried
	clients.Wait()

	var at []time.Duration
	for i, e := range ends {
		if e.IsZero() {
			continue
		}
		d := e.Sub(start)
		at = append(at, d)
		if d < deadline {
			r.inTime++
		}
		if hinted[i] {
			r.hinted++
		}
	}
	slices.Sort(at)
	r.completed = len(at)
	for i, j := 0, 0; j < len(at); j++ {
		for at[j]-at[i] >= time.Second {
			i++
		}
		r.peak = max(r.peak, j-i+1)
	}
	if len(at) > 0 {
		r.last = at[len(at)-1]
	}
	return r, nil
}

// post opens a connection to addr and sends a listen with id; it returns
// the response's status, with the reader positioned at its body.
func post(addr, id string) (net.Conn, *bufio.Reader, int, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, 0, err
	}
	body := `{"jsonrpc":"2.0","id":"` + id + `","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"` + spec.ProtocolVersion + `","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Mcp-Protocol-Version: %s\r\nMcp-Method: %s\r\nContent-Length: %d\r\n\r\n%s", addr, spec.ProtocolVersion, spec.MethodListen, len(body), body)
	br := bufio.NewReaderSize(conn, 1024)
	if _, err := io.WriteString(conn, req); err != nil {
		return conn, br, 0, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return conn, br, 0, err
	}
	if resp.StatusCode == http.StatusServiceUnavailable && (resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(readAll(resp.Body), `"message":"`+listen.MsgShuttingDown+`"`)) {
		return conn, br, 0, errors.New("a 503 without Retry-After or the shutdown error")
	}
	return conn, br, resp.StatusCode, nil
}

// readAll reads r to its end, as a string.
func readAll(r io.Reader) string {
	b, _ := io.ReadAll(r)
	return string(b)
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

// summary is "median [min–max]" of v.
func summary(v []float64) string {
	s := slices.Sorted(slices.Values(v))
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return fmt.Sprintf("%.4g [%.4g–%.4g]", med, s[0], s[len(s)-1])
}
