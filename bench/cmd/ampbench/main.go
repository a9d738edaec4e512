// Command ampbench measures the paths where a listen's client could make
// the server pay far more than it pays itself: extension settings, folder
// listens whose URIs are full of '/', HTTP/2 streams reset right after their
// listen, and a stream that fills its socket on every event. Each scenario
// compares the costly input with the same work without it.
//
// It starts itself as the server (a streamhttp.Handler on a hub, see
// serve), one fresh process per run, and is the client. The server's CPU
// time is read from /proc (procstat.CPU of its process), the client's from
// its own process; heap and goroutines come from the server (after a
// collection). Each figure is a median over -runs runs, with [min–max].
// Linux only. From the repository root:
//
//	go run ./bench/cmd/ampbench [-scenario settings,folders,h2reset,h2cost,slowpath] [-runs 5]
//
// The server's API-dependent parts are in ext.go, so the same program
// measures the library before and after a change.
package main

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcplisten/listen/bench/internal/child"
	"github.com/mcplisten/listen/bench/internal/procstat"
	"github.com/mcplisten/listen/internal/rawh2"
)

// profile is -server-cpuprofile, passed on to every server.
var profile = flag.String("server-cpuprofile", "", "write a CPU profile of each server's whole life to this file (the last run's stays)")

func main() {
	server := flag.Bool("server", false, "run as the server (internal)")
	subRes := flag.Bool("subresources", false, "server: listen.Options.SubResources")
	maxSettings := flag.Int("max-settings", 0, "server: listen.Options.MaxSettingsBytes (0: the default)")
	maxSegments := flag.Int("max-segments", 0, "server: listen.Options.MaxURISegments (0: the default)")
	sendBuf := flag.Int("send-buffer", 0, "server: SO_SNDBUF of accepted connections (0: the kernel's)")
	scenarios := flag.String("scenario", "settings,folders,h2reset,h2cost,slowpath", "comma-separated scenarios")
	runs := flag.Int("runs", 5, "fresh server processes per measurement")
	flag.Parse()
	if *server {
		if *profile != "" {
			f, err := os.Create(*profile)
			if err == nil && pprof.StartCPUProfile(f) == nil {
				defer pprof.StopCPUProfile()
			}
		}
		if err := serve(serverConfig{*subRes, *maxSettings, *maxSegments, *sendBuf}); err != nil {
			fmt.Fprintln(os.Stderr, "ampbench server:", err)
			pprof.StopCPUProfile()
			os.Exit(1)
		}
		return
	}
	fmt.Printf("load average before: %s", loadavg())
	for _, s := range strings.Split(*scenarios, ",") {
		var err error
		switch s {
		case "settings":
			err = settingsScenario(*runs, *maxSettings)
		case "folders":
			err = foldersScenario(*runs, *maxSegments)
		case "h2reset":
			err = h2resetScenario(*runs)
		case "h2cost":
			err = h2costScenario(*runs)
		case "slowpath":
			err = slowpathScenario(*runs)
		default:
			err = fmt.Errorf("unknown scenario %q", s)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "ampbench:", s+":", err)
			os.Exit(1)
		}
	}
	fmt.Printf("load average after: %s", loadavg())
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return string(b)
}

// srv is a running server process.
type srv struct {
	cmd            *exec.Cmd
	stdin          io.Closer
	tcp, tls, unix string
}

// start starts a server with args. Stop it with stop.
func start(args ...string) (*srv, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if *profile != "" {
		args = append(args, "-server-cpuprofile", *profile)
	}
	p, err := child.Start(self, append([]string{"-server"}, args...)...)
	if err != nil {
		return nil, err
	}
	cmd, in := p.Cmd, p.In
	var s srv
	if _, err := fmt.Fscan(bufio.NewReader(p.Out), &s.tcp, &s.tls, &s.unix); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("reading the server's addresses: %w", err)
	}
	s.cmd, s.stdin = cmd, in
	return &s, nil
}

// eachRun calls f with a fresh server started with args, runs times,
// stopping each before the next starts.
func eachRun(runs int, args []string, f func(s *srv) error) error {
	for range runs {
		s, err := start(args...)
		if err != nil {
			return err
		}
		err = f(s)
		s.stop()
		if err != nil {
			return err
		}
	}
	return nil
}

// stop ends the server (its standard input closes) and waits for it.
func (s *srv) stop() {
	_ = s.stdin.Close()
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }() // ends with the process
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// cpu returns the server's and this process's CPU time.
func (s *srv) cpu() (server, client time.Duration) {
	server, _ = procstat.CPU(s.cmd.Process.Pid)
	client, _ = procstat.CPU(os.Getpid())
	return server, client
}

// ctl calls a control endpoint over its own HTTP/1.1 connection.
func (s *srv) ctl(path string) (stats, error) {
	resp, err := ctlClient.Get("http://" + s.tcp + path)
	if err != nil {
		return stats{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return stats{}, fmt.Errorf("%s: %s %s", path, resp.Status, b)
	}
	var st stats
	if strings.HasPrefix(path, "/ctl/stats") {
		err = json.NewDecoder(resp.Body).Decode(&st)
	}
	return st, err
}

var ctlClient = &http.Client{Transport: &http.Transport{}, Timeout: time.Minute}

// listenBody is a listen request for filter (a JSON object), whose client
// declared settings (a JSON object) for the watch extension.
func listenBody(id int, filter, settings string) string {
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"subscriptions/listen","params":{` +
		`"notifications":` + filter + `,` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"` + extID + `":` + settings + `}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"ampbench","version":"1.0.0"}}}}`
}

// rawListen is a listen on its own HTTP/1.1 connection.
type rawListen struct {
	conn net.Conn
	br   *bufio.Reader
}

// openListen sends body on a new connection to addr ("unix:" for a
// socket path) and reads the response head and the acknowledgement. A
// refused listen returns its status line as an error.
func openListen(network, addr, body string) (*rawListen, error) {
	conn, err := net.Dial(network, addr)
	if err != nil {
		return nil, err
	}
	_, err = fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"+
		"Mcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	if err != nil {
		conn.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(conn, 256<<10)
	status, err := br.ReadString('\n')
	if err != nil {
		conn.Close()
		return nil, err
	}
	if !strings.HasPrefix(status, "HTTP/1.1 200") {
		conn.Close()
		return nil, &refusedError{strings.TrimSpace(status)}
	}
	l := &rawListen{conn: conn, br: br}
	for blank := 0; blank < 2; { // the rest of the head, the acknowledgement
		line, err := br.ReadSlice('\n')
		if err != nil {
			conn.Close()
			return nil, err
		}
		if len(line) <= 2 {
			blank++
		}
	}
	return l, nil
}

type refusedError struct{ status string }

func (e *refusedError) Error() string { return "refused: " + e.status }

// event reads one SSE event and returns its size in bytes.
func (l *rawListen) event() (int, error) {
	n := 0
	for {
		line, err := l.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			n += len(line)
			continue
		}
		if err != nil {
			return n, err
		}
		n += len(line)
		if len(line) == 1 {
			return n, nil
		}
	}
}

// summary is one figure over runs: median [min–max].
type summary []float64

func (s summary) String() string {
	if len(s) == 0 {
		return "n/a"
	}
	v := slices.Clone([]float64(s))
	slices.Sort(v)
	return fmt.Sprintf("%s [%s–%s]", num(procstat.Median(v)), num(v[0]), num(v[len(v)-1]))
}

func num(f float64) string {
	switch {
	case f >= 100:
		return strconv.FormatFloat(f, 'f', 0, 64)
	case f >= 10:
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strconv.FormatFloat(f, 'f', 2, 64)
}

func us(d time.Duration, n int) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(n) }

// ---- settings ----

// settingsOf returns a settings object of about size bytes: members
// "kNNNNNN":"vvvvvvvvvvvvvvvv" (a few flags would be a real one's).
func settingsOf(size int) string {
	if size == 0 {
		return `{}`
	}
	var sb strings.Builder
	sb.WriteString(`{"verbose":true`)
	for i := 0; sb.Len() < size-30; i++ {
		fmt.Fprintf(&sb, `,"k%06d":"vvvvvvvvvvvvvvvv"`, i)
	}
	sb.WriteString(`}`)
	return sb.String()
}

// settingsScenario opens listens whose client declared settings of several
// sizes for an extension they use, then publishes extension events to
// them: server CPU and client CPU per open, the heap each listen holds
// against its body, and server CPU per event per listen.
func settingsScenario(runs, maxSettings int) error {
	const listens, events = 8, 50
	fmt.Printf("\n## settings (%d listens per run, %d extension events, %d runs)\n\n", listens, events, runs)
	fmt.Println("| settings | body B | opened | server CPU/open µs | client CPU/open µs | heap held/body | server CPU/event/listen µs |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, size := range []int{0, 15 << 10, 240 << 10} {
		var sOpen, cOpen, heap, ev summary
		body := listenBody(1, `{"watch":true}`, settingsOf(size))
		opened := ""
		err := eachRun(runs, serverArgs("-max-settings", maxSettings), func(s *srv) error {
			before, err := s.ctl("/ctl/stats?gc=1")
			if err != nil {
				return err
			}
			s0, c0 := s.cpu()
			var ls []*rawListen
			refused := ""
			for range listens {
				l, err := openListen("tcp", s.tcp, body)
				var re *refusedError
				if errors.As(err, &re) {
					refused = re.status
					continue
				}
				if err != nil {
					return err
				}
				ls = append(ls, l)
			}
			s1, c1 := s.cpu()
			defer func() {
				for _, l := range ls {
					l.conn.Close()
				}
			}()
			sOpen = append(sOpen, us(s1-s0, listens))
			cOpen = append(cOpen, us(c1-c0, listens))
			if refused != "" {
				opened = "0 (" + refused + ")"
				return nil
			}
			opened = strconv.Itoa(len(ls))
			after, err := s.ctl("/ctl/stats?gc=1")
			if err != nil {
				return err
			}
			heap = append(heap, float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(listens)/float64(len(body)))
			s0, _ = s.cpu()
			if _, err := s.ctl(fmt.Sprintf("/ctl/publish?kind=ext&n=%d", events)); err != nil {
				return err
			}
			for _, l := range ls {
				for range events {
					if _, err := l.event(); err != nil {
						return err
					}
				}
			}
			s1, _ = s.cpu()
			ev = append(ev, us(s1-s0, listens*events))
			return nil
		})
		if err != nil {
			return err
		}
		fmt.Printf("| %d KiB | %d | %s | %s | %s | %s | %s |\n", size>>10, len(body), opened, sOpen, cOpen, heap, ev)
	}
	return nil
}

func serverArgs(kv ...any) []string {
	var out []string
	for i := 0; i < len(kv); i += 2 {
		if v := kv[i+1].(int); v != 0 {
			out = append(out, kv[i].(string), strconv.Itoa(v))
		}
	}
	return out
}

// ---- folders ----

// folderFilter returns a resourceSubscriptions filter of n URIs of size
// bytes each: file:/// then fill repeated, then a distinct number.
func folderFilter(n, size int, fill string) string {
	var sb strings.Builder
	sb.WriteString(`{"resourceSubscriptions":[`)
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		u := "file:///" + strings.Repeat(fill, (size-12)/len(fill)) + fmt.Sprintf("%04d", i)
		sb.WriteString(`"` + u + `"`)
	}
	sb.WriteString(`]}`)
	return sb.String()
}

// foldersScenario opens folder listens (SubResources) whose 128 KiB filter
// is 31 URIs of 4 KiB: all '/' (each URI about 4,000 segments), a '/' every
// 32 bytes (128 segments), or none but the first: server CPU and client
// CPU per open, and the ratio to the flat URIs.
func foldersScenario(runs, maxSegments int) error {
	const opens = 20
	fmt.Printf("\n## folders (SubResources; %d opens per run, %d runs; max segments %d, 0 = default)\n\n", opens, runs, maxSegments)
	fmt.Println("| URIs | body B | status | server CPU/open µs | client CPU/open µs | server/client |")
	fmt.Println("|---|---|---|---|---|---|")
	shapes := []struct{ name, fill string }{{"flat (no '/')", "a"}, {"a '/' every 32 bytes", strings.Repeat("a", 31) + "/"}, {"all '/'", "/"}}
	for _, sh := range shapes {
		body := listenBody(1, folderFilter(31, 4<<10, sh.fill), `{}`)
		var sOpen, cOpen, ratio summary
		status := "200"
		err := eachRun(runs, append([]string{"-subresources"}, serverArgs("-max-segments", maxSegments)...), func(s *srv) error {
			s0, c0 := s.cpu()
			for range opens {
				l, err := openListen("tcp", s.tcp, body)
				var re *refusedError
				if errors.As(err, &re) {
					status = re.status
					continue
				}
				if err != nil {
					return err
				}
				l.conn.Close()
			}
			s1, c1 := s.cpu()
			sOpen = append(sOpen, us(s1-s0, opens))
			cOpen = append(cOpen, us(c1-c0, opens))
			ratio = append(ratio, float64(s1-s0)/float64(c1-c0))
			return nil
		})
		if err != nil {
			return err
		}
		fmt.Printf("| %s | %d | %s | %s | %s | %s |\n", sh.name, len(body), status, sOpen, cOpen, ratio)
	}
	return nil
}

// ---- HTTP/2 ----

// h2resetScenario sends 2,000 listen streams reset right after their body,
// over h2c and over TLS h2, to the listen handler and to a handler that
// only reads the body: listens opened, server CPU per stream, client CPU
// per stream.
func h2resetScenario(runs int) error {
	const streams, batch = 2000, 100
	fmt.Printf("\n## HTTP/2 rapid reset (%d streams reset after HEADERS+DATA, batches of %d, %d runs)\n\n", streams, batch, runs)
	fmt.Println("| transport | handler | opened | server CPU/stream µs | client CPU/stream µs |")
	fmt.Println("|---|---|---|---|---|")
	body := listenBody(1, `{"toolsListChanged":true}`, `{}`)
	for _, tlsOn := range []bool{false, true} {
		cpu := map[string]summary{}
		for _, path := range []string{"/mcp", "/body"} {
			var sCPU, cCPU, opened summary
			err := eachRun(runs, nil, func(s *srv) error {
				var conn net.Conn
				scheme := "http"
				if tlsOn {
					c, err := tls.Dial("tcp", s.tls, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
					if err != nil {
						return err
					}
					if c.ConnectionState().NegotiatedProtocol != "h2" {
						return errors.New("TLS: h2 not negotiated")
					}
					conn, scheme = c, "https"
				} else {
					c, err := net.Dial("tcp", s.tcp)
					if err != nil {
						return err
					}
					conn = c
				}
				defer conn.Close()
				go func() { _, _ = io.Copy(io.Discard, conn) }() // ends when conn closes
				before, err := s.ctl("/ctl/stats")
				if err != nil {
					return err
				}
				s0, c0 := s.cpu()
				if _, err := conn.Write(rawh2.Preface()); err != nil {
					return err
				}
				// The server's MaxConcurrentStreams is 1,000, so up to 4,000
				// streams may wait for a handler before net/http refuses
				// them as too many early resets: the batches need not wait.
				for i := 0; i < streams; i += batch {
					var out []byte
					for j := range batch {
						out = rawh2.ResetListen(out, scheme, "127.0.0.1", path, uint32(1+2*(i+j)), body)
					}
					if _, err := conn.Write(out); err != nil {
						return err
					}
				}
				var after stats
				for {
					if after, err = s.ctl("/ctl/stats"); err != nil {
						return err
					}
					if after.Served-before.Served >= streams {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
				s1, c1 := s.cpu()
				// The control requests' own cost is the same for both
				// handlers; they are counted in.
				sCPU = append(sCPU, us(s1-s0, streams))
				cCPU = append(cCPU, us(c1-c0, streams))
				opened = append(opened, float64(after.Opened-before.Opened))
				return nil
			})
			if err != nil {
				return err
			}
			cpu[path] = sCPU
			name := map[bool]string{false: "h2c", true: "TLS h2"}[tlsOn]
			fmt.Printf("| %s | %s | %s | %s | %s |\n", name, path, opened, sCPU, cCPU)
		}
		var ratio summary
		for i := range cpu["/mcp"] {
			ratio = append(ratio, cpu["/mcp"][i]/cpu["/body"][i])
		}
		fmt.Printf("| | listen / body-only, run by run | | %s | |\n", ratio)
	}
	return nil
}

// h2costScenario opens 500 idle listens over HTTP/1.1 (taken over) and over
// h2c (net/http's client, two connections) and reports the server's
// goroutines and heap per open listen.
func h2costScenario(runs int) error {
	const n = 500
	fmt.Printf("\n## per-listen cost, HTTP/1.1 against HTTP/2 (%d idle listens, %d runs)\n\n", n, runs)
	fmt.Println("| transport | goroutines/listen | heap/listen KiB |")
	fmt.Println("|---|---|---|")
	for _, proto := range []string{"HTTP/1.1", "h2c"} {
		var gor, heap summary
		err := eachRun(runs, nil, func(s *srv) error {
			before, err := s.ctl("/ctl/stats?gc=1")
			if err != nil {
				return err
			}
			var closers []io.Closer
			defer func() {
				for _, c := range closers {
					c.Close()
				}
			}()
			body := listenBody(1, `{"toolsListChanged":true}`, `{}`)
			if proto == "HTTP/1.1" {
				for range n {
					l, err := openListen("tcp", s.tcp, body)
					if err != nil {
						return err
					}
					closers = append(closers, l.conn)
				}
			} else {
				tr := &http.Transport{Protocols: new(http.Protocols)}
				tr.Protocols.SetUnencryptedHTTP2(true)
				defer tr.CloseIdleConnections()
				for range n {
					req, _ := http.NewRequest(http.MethodPost, "http://"+s.tcp+"/mcp", strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					req.Header.Set("MCP-Protocol-Version", "2026-07-28")
					req.Header.Set("Mcp-Method", "subscriptions/listen")
					resp, err := tr.RoundTrip(req)
					if err != nil {
						return err
					}
					if resp.ProtoMajor != 2 || resp.StatusCode != 200 {
						return fmt.Errorf("h2c: %s %s", resp.Proto, resp.Status)
					}
					l := &rawListen{br: bufio.NewReader(resp.Body)}
					if _, err := l.event(); err != nil { // the acknowledgement
						return err
					}
					closers = append(closers, resp.Body)
				}
			}
			after, err := s.ctl("/ctl/stats?gc=1")
			if err != nil {
				return err
			}
			if after.Active != n {
				return fmt.Errorf("%d listens active, want %d", after.Active, n)
			}
			gor = append(gor, float64(after.Goroutines-before.Goroutines)/n)
			heap = append(heap, float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n/1024)
			return nil
		})
		if err != nil {
			return err
		}
		fmt.Printf("| %s | %s | %s |\n", proto, gor, heap)
	}
	return nil
}

// ---- slow path ----

// slowpathScenario serves 10 listens over a Unix socket and publishes 200
// tools list changes with a 6 KiB param, one at a time, each read by every
// client before the next: with the kernel's smallest send buffer (every
// event fills the socket and takes the slow path) and with 1 MiB (every
// event is one plain write). Server CPU per event per stream.
func slowpathScenario(runs int) error {
	const listens, events = 10, 200
	fmt.Printf("\n## slow path (Unix socket, %d listens, %d events of 6 KiB, one at a time, %d runs)\n\n", listens, events, runs)
	fmt.Println("| send buffer | server CPU/event/stream µs |")
	fmt.Println("|---|---|")
	cpu := map[int]summary{}
	for _, buf := range []int{1 << 20, 1} {
		var sCPU summary
		err := eachRun(runs, []string{"-send-buffer", strconv.Itoa(buf)}, func(s *srv) error {
			var ls []*rawListen
			defer func() {
				for _, l := range ls {
					l.conn.Close()
				}
			}()
			for i := range listens {
				l, err := openListen("unix", s.unix, listenBody(i, `{"toolsListChanged":true}`, `{}`))
				if err != nil {
					return err
				}
				ls = append(ls, l)
			}
			s0, _ := s.cpu()
			for range events {
				if _, err := s.ctl("/ctl/publish?kind=tools&n=1&pad=6144"); err != nil {
					return err
				}
				for _, l := range ls {
					if _, err := l.event(); err != nil {
						return err
					}
				}
			}
			s1, _ := s.cpu()
			sCPU = append(sCPU, us(s1-s0, listens*events))
			return nil
		})
		if err != nil {
			return err
		}
		cpu[buf] = sCPU
		fmt.Printf("| %d B | %s |\n", buf, sCPU)
	}
	var ratio summary
	for i := range cpu[1] {
		ratio = append(ratio, cpu[1][i]/cpu[1<<20][i])
	}
	fmt.Printf("| smallest / 1 MiB, run by run | %s |\n", ratio)
	return nil
}
