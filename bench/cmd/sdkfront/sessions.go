package main

import (
	"encoding/json"
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
	"sync/atomic"
	"time"
)

// The sessions of older clients (initialize, 2025-11-25):
//
//	flood      -flood initializes from 127.0.0.1 (16 at a time), then an
//	           older client from 127.0.0.2: how long until its initialize
//	           is answered 200 (retrying every 100 ms, watched for 5 s), for
//	           the go-sdk server (-server) and the mcp-go server
//	           (-mcpgo-server); and the heap the flood left (after a GC)
//	idleheap   8,000 initializes to the mcp-go server, 1,000 from each of
//	           127.0.0.1 to 127.0.0.8, then nothing: the heap they hold
//	           (after a GC) right after, and once -idle-wait has passed (the
//	           server gets -session-idle SESSION_IDLE when set)
var (
	mcpgoBin    = flag.String("mcpgo-server", "", "flood, idleheap: the mcp-go server binary (empty: build ./examples/mcpgo)")
	nFlood      = flag.Int("flood", 10000, "flood: initializes from the flooding client")
	sessionIdle = flag.Duration("session-idle", 0, "idleheap: passed to the mcp-go server as -session-idle (0: not passed, for a server without the flag)")
	idleWait    = flag.Duration("idle-wait", 3*time.Second, "idleheap: how long the sessions are left idle before the second heap reading")
)

// buildMCPGo builds ./examples/mcpgo into dir unless -mcpgo-server is set.
func buildMCPGo(dir string) {
	if *mcpgoBin != "" {
		return
	}
	*mcpgoBin = filepath.Join(dir, "mcpgo")
	build := exec.Command("go", "build", "-o", *mcpgoBin, "./examples/mcpgo")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	check(build.Run())
}

const initializeBody = `{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sdkfront","version":"0"}}}`

// clientFrom is an HTTP client whose connections come from ip (a loopback
// address: 127.0.0.2 is another client's address to the server).
func clientFrom(ip string, conns int) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{
		DialContext:         d.DialContext,
		MaxIdleConnsPerHost: conns,
	}, Timeout: 10 * time.Second}
}

// initialize sends one older client's initialize and returns the status.
func initialize(c *http.Client, url string, id int) int {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(fmt.Sprintf(initializeBody, id)))
	check(err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.Do(req)
	check(err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// initializeMany sends n initializes from ip, conns at a time, and
// returns how many were answered 200.
func initializeMany(url, ip string, n, conns int) int {
	c := clientFrom(ip, conns)
	defer c.CloseIdleConnections()
	var next, ok atomic.Int64
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			for {
				i := int(next.Add(1))
				if i > n {
					return
				}
				if initialize(c, url, i) == http.StatusOK {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return int(ok.Load())
}

// olderWait is how long an initialize from 127.0.0.2 takes to be answered
// 200, retrying every 100 ms; -1 if not within watch.
func olderWait(url string, watch time.Duration) float64 {
	c := clientFrom("127.0.0.2", 1)
	defer c.CloseIdleConnections()
	t0 := time.Now()
	for i := 1; time.Since(t0) < watch; i++ {
		if initialize(c, url, i) == http.StatusOK {
			return time.Since(t0).Seconds()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return -1
}

// sessionStats are the server's session counters, if it shows them.
func (s *server) sessionStats() string {
	var l map[string]json.RawMessage
	check(json.Unmarshal(s.vars(false)["listen"], &l))
	if st, ok := l["sessions"]; ok {
		return string(st)
	}
	return "(not shown)"
}

func flood(run int) map[string]float64 {
	figures := map[string]float64{}
	for _, kind := range []struct{ name, bin string }{{"gosdk", *serverBin}, {"mcpgo", *mcpgoBin}} {
		s := startBin(kind.bin)
		h0 := s.heapAlloc()
		t0 := time.Now()
		admitted := initializeMany(s.url, "127.0.0.1", *nFlood, 16)
		took := time.Since(t0)
		h1 := s.heapAlloc()
		wait := olderWait(s.url, 5*time.Second)
		fmt.Printf("run %d flood %s: %d initializes in %.2f s, %d admitted; heap +%.1f MiB; older client's wait %.3f s (-1: refused for 5 s); sessions %s\n",
			run, kind.name, *nFlood, took.Seconds(), admitted, (h1-h0)/(1<<20), wait, s.sessionStats())
		figures[kind.name+" older wait s"] = wait
		figures[kind.name+" admitted"] = float64(admitted)
		figures[kind.name+" flood heap MiB"] = (h1 - h0) / (1 << 20)
		s.stop()
	}
	return figures
}

func idleHeap(run int) map[string]float64 {
	var extra []string
	if *sessionIdle > 0 {
		extra = append(extra, "-session-idle", sessionIdle.String())
	}
	s := startBin(*mcpgoBin, extra...)
	defer s.stop()
	h0 := s.heapAlloc()
	var wg sync.WaitGroup
	var admitted atomic.Int64
	for i := 1; i <= 8; i++ {
		wg.Go(func() { admitted.Add(int64(initializeMany(s.url, "127.0.0."+strconv.Itoa(i), 1000, 2))) })
	}
	wg.Wait()
	h1 := s.heapAlloc()
	time.Sleep(*idleWait)
	h2 := s.heapAlloc()
	fmt.Printf("run %d idleheap: %d of 8000 admitted; heap +%.1f MiB right after (%.0f B per initialize), +%.1f MiB after %v idle (%.0f B per initialize); sessions %s\n",
		run, admitted.Load(), (h1-h0)/(1<<20), (h1-h0)/8000, (h2-h0)/(1<<20), *idleWait, (h2-h0)/8000, s.sessionStats())
	return map[string]float64{
		"admitted": float64(admitted.Load()),
		"held MiB": (h1 - h0) / (1 << 20), "held B per init": (h1 - h0) / 8000,
		"left MiB": (h2 - h0) / (1 << 20), "left B per init": (h2 - h0) / 8000,
	}
}
