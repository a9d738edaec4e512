//go:build linux

// Command recheckcost measures what binding listens to their principal
// costs a server whose streams are idle: the server CPU per second, and
// its goroutines, with N idle listens on streamhttp's taken-over fast path
// and a scheduled re-check (listen.Access.Every, each stream its own
// principal by default, CanRead asked again for its URI) plus a lifetime
// bound (listen.Options.MaxLifetime, a runtime timer per stream), against
// the same server without them.
//
// Each run starts a fresh server process (this program with -serve) per
// variant, the variants in alternating order, opens N listens from this
// process over loopback, lets the server settle, then reads the server's
// CPU time (/proc/PID/stat) over a window. Keep-alives are off (an hour),
// so that the figures are the re-check's and the timers'. Linux only. Run
// it from the repository root:
//
//	go run ./bench/cmd/recheckcost [-n 10000] [-runs 5] [-window 20s] [-every 1s]
//
// With -revoke it measures instead, in process, how long a revoked
// principal's stream stays open while another principal's Access.Check
// blocks (see measureRevoke):
//
//	go run ./bench/cmd/recheckcost -revoke [-runs 5] [-every 1s] [-block 8s] [-others 100]
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
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcplisten/listen/bench/internal/child"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/streamhttp"
)

func main() {
	serve := flag.Bool("serve", false, "run as the measured server (internal)")
	variant := flag.String("variant", "recheck", "server variant: baseline or recheck (with -serve)")
	addr := flag.String("addr", "127.0.0.1:27400", "server address (with -serve)")
	n := flag.Int("n", 10000, "idle listens")
	principals := flag.Int("principals", 0, "distinct principals among the listens (0: one per listen)")
	runs := flag.Int("runs", 5, "runs per variant")
	window := flag.Duration("window", 20*time.Second, "CPU measurement window per run")
	settle := flag.Duration("settle", 3*time.Second, "pause between the last open and the window")
	every := flag.Duration("every", time.Second, "listen.Access.Every of the recheck variant")
	revoke := flag.Bool("revoke", false, "measure instead how long a revoked stream stays open while another principal's Check blocks (in process)")
	others := flag.Int("others", 100, "with -revoke: principals besides the blocked one and the revoked one")
	block := flag.Duration("block", 8*time.Second, "with -revoke: how long the blocked principal's Check blocks")
	limit := flag.Duration("limit", 15*time.Second, "with -revoke: how long to wait for the revoked stream's end")
	flag.Parse()
	var err error
	if *revoke {
		err = measureRevoke(*runs, *others, *every, *block, *limit)
	} else if *serve {
		err = runServer(*variant, *addr, *every)
	} else {
		err = measure(*n, *principals, *runs, *window, *settle, *every, *addr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "recheckcost:", err)
		os.Exit(1)
	}
}

// serverStats is what the server reports on its stdout when asked.
type serverStats struct {
	Goroutines int
	Active     int
	Checks     int64
	CanReads   int64
}

// runServer serves listens until its stdin closes, answering each "stats"
// line on stdin with a JSON serverStats line on stdout.
func runServer(variant, addr string, every time.Duration) error {
	h, err := hub.New(hub.Options{})
	if err != nil {
		return err
	}
	var checks, reads atomic.Int64
	lopts := listen.Options{
		Capabilities: listen.Capabilities{ToolsListChanged: true, ResourcesSubscribe: true},
		CanRead: func(context.Context, *listen.Request, string) bool {
			reads.Add(1)
			return true
		},
	}
	switch variant {
	case "baseline":
	case "recheck":
		lopts.Access = &listen.Access{
			Every: every,
			Check: func(context.Context, any) error {
				checks.Add(1)
				return nil
			},
		}
		lopts.MaxLifetime = 24 * time.Hour
	default:
		return fmt.Errorf("unknown variant %q", variant)
	}
	sh, err := streamhttp.New(h, streamhttp.Options{
		Listen:       lopts,
		MaxStreams:   1 << 20,
		KeepAlive:    time.Hour,
		Authenticate: func(r *http.Request) (any, error) { return r.Header.Get("X-User"), nil },
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: sh, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }() // ends with srv.Close below
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		st := serverStats{Checks: checks.Load(), CanReads: reads.Load(), Active: sh.Stats().Active}
		st.Goroutines = runtime.NumGoroutine()
		b, _ := json.Marshal(st)
		fmt.Println(string(b))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = h.Shutdown(ctx)
	_ = sh.Shutdown(ctx)
	return srv.Close()
}

// result is one run of one variant.
type result struct {
	variant    string
	cpuPct     float64 // server CPU, % of one core, over the window
	goroutines int
	checksPerS float64
	readsPerS  float64
	rssKB      float64 // the server's VmRSS at the end of the window
}

func measure(n, principals, runs int, window, settle, every time.Duration, addr string) error {
	if principals <= 0 {
		principals = n
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("loadavg before: %s", loadavg())
	var all []result
	for run := range runs {
		order := []string{"baseline", "recheck"}
		if run%2 == 1 {
			slices.Reverse(order)
		}
		for _, v := range order {
			r, err := once(exe, v, addr, n, principals, window, settle, every)
			if err != nil {
				return fmt.Errorf("run %d, %s: %w", run+1, v, err)
			}
			fmt.Printf("run %d %-8s cpu %.3f%% of a core, %d goroutines, %.0f checks/s, %.0f CanRead/s, RSS %.0f KB\n",
				run+1, v, r.cpuPct, r.goroutines, r.checksPerS, r.readsPerS, r.rssKB)
			all = append(all, r)
		}
	}
	fmt.Printf("loadavg after: %s", loadavg())
	fmt.Printf("\n%d idle listens, %d principals, Every %v, window %v, %d runs per variant: median [min-max]\n", n, principals, every, window, runs)
	for _, v := range []string{"baseline", "recheck"} {
		var cpu, gor, chk, rss []float64
		for _, r := range all {
			if r.variant == v {
				cpu, gor, chk = append(cpu, r.cpuPct), append(gor, float64(r.goroutines)), append(chk, r.checksPerS)
				rss = append(rss, r.rssKB)
			}
		}
		fmt.Printf("  %-8s server CPU %s %% of one core; goroutines %s; Check calls/s %s; RSS %s KB\n",
			v, summary(cpu, 3), summary(gor, 0), summary(chk, 0), summary(rss, 0))
	}
	var diff []float64
	for run := range runs {
		var b, r float64
		for _, x := range all[2*run : 2*run+2] {
			if x.variant == "baseline" {
				b = x.cpuPct
			} else {
				r = x.cpuPct
			}
		}
		diff = append(diff, r-b)
	}
	fmt.Printf("  recheck - baseline, per run: %s %% of one core\n", summary(diff, 3))
	return nil
}

// once runs one server process of variant with n idle listens and reads
// its CPU over the window.
func once(exe, variant, addr string, n, principals int, window, settle, every time.Duration) (result, error) {
	p, err := child.Start(exe, "-serve", "-variant", variant, "-addr", addr, "-every", every.String())
	if err != nil {
		return result{}, err
	}
	cmd, stdin, stdout := p.Cmd, p.In, p.Out
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	out := bufio.NewScanner(stdout)
	if !out.Scan() || out.Text() != "ready" {
		return result{}, errors.New("the server did not start")
	}
	conns, err := openAll(addr, n, principals)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if err != nil {
		return result{}, err
	}
	time.Sleep(settle)
	stats := func() (serverStats, error) {
		var st serverStats
		if _, err := io.WriteString(stdin, "stats\n"); err != nil {
			return st, err
		}
		if !out.Scan() {
			return st, errors.New("no stats")
		}
		return st, json.Unmarshal(out.Bytes(), &st)
	}
	s0, err := stats()
	if err != nil {
		return result{}, err
	}
	if s0.Active != n {
		return result{}, fmt.Errorf("%d streams active, want %d", s0.Active, n)
	}
	c0, t0 := cpuOf(cmd.Process.Pid), time.Now()
	time.Sleep(window)
	c1, t1 := cpuOf(cmd.Process.Pid), time.Now()
	s1, err := stats()
	if err != nil {
		return result{}, err
	}
	wall := t1.Sub(t0).Seconds()
	return result{
		variant:    variant,
		cpuPct:     100 * (c1 - c0).Seconds() / wall,
		goroutines: s1.Goroutines,
		checksPerS: float64(s1.Checks-s0.Checks) / wall,
		readsPerS:  float64(s1.CanReads-s0.CanReads) / wall,
		rssKB:      rssOf(cmd.Process.Pid),
	}, nil
}

// rssOf returns the resident set size of process pid, in KB.
func rssOf(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			kb, _ := strconv.ParseFloat(f[0], 64)
			return kb
		}
	}
	return 0
}

// openAll opens n listens, each for its own URI, as principal i%principals,
// and reads each one's acknowledgement.
func openAll(addr string, n, principals int) ([]net.Conn, error) {
	conns := make([]net.Conn, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				c, err := openOne(addr, i, i%principals)
				if err != nil {
					errs <- fmt.Errorf("listen %d: %w", i, err)
					return
				}
				conns[i] = c
			}
		})
	}
	wg.Wait()
	close(errs)
	kept := slices.DeleteFunc(conns, func(c net.Conn) bool { return c == nil })
	return kept, <-errs
}

func openOne(addr string, i, user int) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"resourceSubscriptions":["file:///r/%d"]}}}`, i, i)
	_, err = fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nX-User: u%d\r\nContent-Length: %d\r\n\r\n%s",
		addr, user, len(body), body)
	if err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, fmt.Errorf("response %v: %v", resp, err)
	}
	for { // the acknowledgement's event, up to its blank line
		line, err := br.ReadString('\n')
		if err != nil {
			c.Close()
			return nil, err
		}
		if line == "\n" || line == "\r\n" {
			break
		}
	}
	_ = c.SetReadDeadline(time.Time{})
	return c, nil
}

// cpuOf returns the user and system CPU time of process pid.
func cpuOf(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The fields after the command name (in parentheses, which may hold
	// spaces): utime and stime are the 14th and 15th of the line.
	rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
	f := strings.Fields(rest)
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return string(b)
}

// summary formats the median of xs and its range.
func summary(xs []float64, prec int) string {
	s := slices.Clone(xs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	f := "%." + strconv.Itoa(prec) + "f"
	return fmt.Sprintf(f+" ["+f+"–"+f+"]", med, s[0], s[len(s)-1])
}
