// Command bridgeflood measures what a peer that can write to the broker
// but holds no key costs an instance of examples/server joined by a
// bridge (-broker, with -broker-key): its peak RSS while it drops a flood
// of large unsigned messages, and its CPU and log lines per small forged
// message.
//
// Each run starts a broker on a free loopback port (redis-server with
// proto-max-bulk-len and client-query-buffer-limit at 1 MiB, as
// redisbridge's documentation advises; or nats-server), one
// examples/server process with -quiet (warnings only) joined to it, waits
// for it to settle, then writes -n messages of -size bytes straight to the
// bridge's stream or subject over the broker's wire protocol (XADD; PUB),
// waits until the server's /debug/vars counts them all as dropped (or
// -wait passes), and reports the server's peak RSS (VmHWM) above the one
// before the flood, its CPU time per message and the lines it wrote to
// stderr meanwhile. Linux only. Build the binaries first, then:
//
//	go run ./bench/cmd/bridgeflood -server-bin S -broker redis [-nats-bin N] [-redis-bin R] \
//	    [-n 512] [-size 1000000] [-runs 3]
//	go run ./bench/cmd/bridgeflood -server-bin S -broker nats -nats-bin N -n 20000 -size 152
package main

import (
	"bufio"
	"bytes"
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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcplisten/listen/bench/internal/procstat"
)

var window *int

const (
	stream = "mcp.listen.events" // the bridges' default stream and subject
	key    = "bridgeflood-shared-key-0123456789abcdef"
)

func main() {
	serverBin := flag.String("server-bin", "", "examples/server binary (required)")
	natsBin := flag.String("nats-bin", "nats-server", "nats-server binary")
	redisBin := flag.String("redis-bin", "redis-server", "redis-server binary")
	brokerKind := flag.String("broker", "redis", "redis or nats")
	n := flag.Int("n", 512, "messages the forger writes")
	size := flag.Int("size", 1_000_000, "bytes per message")
	runs := flag.Int("runs", 3, "runs, each with fresh processes")
	window = flag.Int("window", 512, "Redis: XADDs in flight (pipelined)")
	wait := flag.Duration("wait", 2*time.Minute, "longest wait for the drops to be counted")
	flag.Parse()
	if *serverBin == "" || (*brokerKind != "redis" && *brokerKind != "nats") {
		flag.Usage()
		os.Exit(2)
	}
	bin := *redisBin
	if *brokerKind == "nats" {
		bin = *natsBin
	}
	fmt.Printf("bridgeflood: broker %s, %d messages of %d bytes, %d runs; load %s\n", *brokerKind, *n, *size, *runs, loadavg())
	var peaks, cpus, lines []float64
	for r := range *runs {
		res, err := run(*serverBin, *brokerKind, bin, *n, *size, *wait)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bridgeflood:", err)
			os.Exit(1)
		}
		fmt.Printf("run %d: peak RSS +%.1f MiB (before %.1f MiB), CPU %.2f µs/message, %d stderr lines (%d bytes), drops %s, %s\n",
			r+1, procstat.MiB(res.peak), procstat.MiB(res.before), res.cpuPerMsg, res.lines, res.logBytes, res.drops, res.took.Round(time.Millisecond))
		peaks = append(peaks, procstat.MiB(res.peak))
		cpus = append(cpus, res.cpuPerMsg)
		lines = append(lines, float64(res.lines))
	}
	fmt.Printf("peak RSS above the idle peak: %s MiB\n", summary(peaks, 1))
	fmt.Printf("server CPU per message:       %s µs\n", summary(cpus, 2))
	fmt.Printf("stderr lines per run:         %s\n", summary(lines, 0))
	fmt.Printf("load after: %s\n", loadavg())
}

type result struct {
	before, peak int64
	cpuPerMsg    float64
	lines        int
	logBytes     int64
	drops        string
	took         time.Duration
}

func run(serverBin, kind, brokerBin string, n, size int, wait time.Duration) (*result, error) {
	tmp, err := os.MkdirTemp("", "bridgeflood-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	var args []string
	if kind == "nats" {
		args = []string{"-a", "127.0.0.1", "-p", strconv.Itoa(port)}
	} else {
		args = []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no",
			"--dir", tmp, "--logfile", "", "--daemonize", "no",
			"--proto-max-bulk-len", "1mb", "--client-query-buffer-limit", "1mb"}
	}
	broker := exec.Command(brokerBin, args...)
	broker.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := broker.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = broker.Process.Kill(); _ = broker.Wait() }()
	if err := dialUntil(addr); err != nil {
		return nil, err
	}

	logPath := tmp + "/server.log"
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	srv := exec.Command(serverBin, "-addr", "127.0.0.1:0", "-quiet", "-lifetime", "1h",
		"-broker", kind+"://"+addr, "-broker-key", key)
	srv.Stderr = logFile
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := srv.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := srv.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	httpAddr, err := listening(out)
	if err != nil {
		return nil, err
	}
	go func() { _, _ = io.Copy(io.Discard, out) }() // ends when the server exits
	time.Sleep(time.Second)                         // settle: the measurement starts from an idle server
	pid := srv.Process.Pid
	_, before, err := procstat.Memory(pid)
	if err != nil {
		return nil, err
	}
	cpu0, err := procstat.CPU(pid)
	if err != nil {
		return nil, err
	}
	st, _ := logFile.Stat()
	log0 := st.Size()
	start := time.Now()
	if kind == "nats" {
		err = floodNATS(addr, n, size)
	} else {
		err = floodRedis(addr, n, size)
	}
	if err != nil {
		return nil, err
	}
	drops, err := awaitDrops(httpAddr, n, wait)
	if err != nil {
		return nil, err
	}
	took := time.Since(start)
	cpu1, err := procstat.CPU(pid)
	if err != nil {
		return nil, err
	}
	_, peak, err := procstat.Memory(pid)
	if err != nil {
		return nil, err
	}
	logs, err := os.ReadFile(logPath)
	if err != nil {
		return nil, err
	}
	logs = logs[log0:]
	return &result{
		before: before, peak: peak - before,
		cpuPerMsg: float64((cpu1 - cpu0).Microseconds()) / float64(n),
		lines:     bytes.Count(logs, []byte("\n")), logBytes: int64(len(logs)),
		drops: drops, took: took,
	}, nil
}

// payload is a forged version 1 envelope padded to size bytes: it parses
// and carries a fresh stamp, but no signature.
func payload(i, size int) []byte {
	p := fmt.Appendf(nil, `{"v":1,"o":"forger","n":%d,"t":%d,"k":"tools","p":{"pad":"`, i+1, time.Now().UnixMilli())
	tail := `"}}`
	for len(p)+len(tail) < size {
		p = append(p, 'x')
	}
	return append(p, tail...)
}

// floodRedis appends n entries with field d to the stream, pipelined.
func floodRedis(addr string, n, size int) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	w := bufio.NewWriterSize(c, 1<<20)
	rd := bufio.NewReader(c)
	sent, acked := 0, 0
	for acked < n {
		for sent < n && sent-acked < *window {
			p := payload(sent, size)
			fmt.Fprintf(w, "*5\r\n$4\r\nXADD\r\n$%d\r\n%s\r\n$1\r\n*\r\n$1\r\nd\r\n$%d\r\n", len(stream), stream, len(p))
			w.Write(p)
			w.WriteString("\r\n")
			sent++
		}
		if err := w.Flush(); err != nil {
			return err
		}
		line, err := rd.ReadString('\n')
		if err != nil {
			return err
		}
		if !strings.HasPrefix(line, "$") {
			return fmt.Errorf("XADD: %q", strings.TrimSpace(line))
		}
		if _, err := rd.ReadString('\n'); err != nil { // the id
			return err
		}
		acked++
	}
	return nil
}

// floodNATS publishes n messages on the subject and waits for the
// server's PONG: they have all been taken.
func floodNATS(addr string, n, size int) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	rd := bufio.NewReader(c)
	if _, err := rd.ReadString('\n'); err != nil { // INFO
		return err
	}
	w := bufio.NewWriterSize(c, 1<<20)
	w.WriteString("CONNECT {\"verbose\":false,\"pedantic\":false}\r\n")
	for i := range n {
		p := payload(i, size)
		fmt.Fprintf(w, "PUB %s %d\r\n", stream, len(p))
		w.Write(p)
		w.WriteString("\r\n")
	}
	w.WriteString("PING\r\n")
	if err := w.Flush(); err != nil {
		return err
	}
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(line, "PONG"):
			return nil
		case strings.HasPrefix(line, "-ERR"):
			return errors.New(strings.TrimSpace(line))
		}
	}
}

// awaitDrops polls the server's bridge counters until n messages are
// dropped.
func awaitDrops(httpAddr string, n int, wait time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var last map[string]uint64
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/debug/vars", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var doc struct {
				Broker struct {
					Dropped map[string]uint64
				} `json:"broker"`
			}
			err = json.NewDecoder(resp.Body).Decode(&doc)
			resp.Body.Close()
			if err == nil {
				last = doc.Broker.Dropped
				var total uint64
				for _, v := range last {
					total += v
				}
				if total >= uint64(n) {
					return fmt.Sprint(nonZero(last)), nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("drops not all counted within %v: %v", wait, nonZero(last))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func nonZero(m map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

func listening(out io.Reader) (string, error) {
	sc := bufio.NewScanner(out)
	done := make(chan string, 1)
	go func() { // ends at the listening line or when the server's stdout closes
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "listening on http://"); ok {
				done <- strings.TrimSuffix(rest, "/mcp")
				return
			}
		}
		close(done)
	}()
	select {
	case a, ok := <-done:
		if !ok {
			return "", errors.New("the server exited before listening")
		}
		return a, nil
	case <-time.After(15 * time.Second):
		return "", errors.New("the server did not listen within 15s")
	}
}

func dialUntil(addr string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func summary(v []float64, prec int) string {
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	return fmt.Sprintf("%.*f [%.*f–%.*f] (n=%d)", prec, procstat.Median(v), prec, lo, prec, hi, len(v))
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
