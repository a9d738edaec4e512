// Command sdkfront measures, black-box, what a go-sdk server behind
// gosdk.NewHandler lets a client do: it builds examples/server (or takes
// -server, a binary of any version with the same flags), starts it on
// 127.0.0.1 for each scenario and each run, and measures from outside:
//
//	crosssite  tools/call test_trigger_tool_change with a cross-site Origin,
//	           Origin: null, or Sec-Fetch-Site: cross-site: the statuses
//	slow       tools/list bodies one byte short of their Content-Length, sent
//	           one byte every 2 s, or chunked without end (-n of each): how
//	           long until the server answers or closes each, and how
//	memory     50 tools/list bodies announcing -size bytes, sent but for the
//	           last byte and held: the server's RSS growth
//	older      150 listens naming 2025-11-25, 2025-06-18, 2025-03-26 and
//	           2024-11-05 under -max-streams 5: the statuses, and the streams
//	           the handler counted (/debug/vars)
//	version    a listen naming 1900-01-01: status and body, against the
//	           specification's example
//	uris       -listens listens each naming 1,000 fresh 120-byte URIs: the
//	           server's CPU (from /proc) against this client's, per listen,
//	           for the opens and then the closes, and the heap each listen
//	           holds (HeapAlloc after a forced GC, /debug/pprof/heap?gc=1)
//	method     a listen body whose keys are "METHOD" and "PARAMS", with and
//	           without the listen headers: statuses
//	surrogate  a listen on "file:///\ud800" (a lone surrogate): status and
//	           answer
//	flood      older clients' sessions: see sessions.go (also the mcp-go
//	           server, examples/mcpgo or -mcpgo-server)
//	idleheap   the mcp-go server's heap for 8,000 idle older sessions
//
// Linux only (it reads /proc). From the repository root:
//
//	go run ./bench/cmd/sdkfront [-runs 3] [-port 20100] [-only uris,memory]
//
// Each figure is printed per run and, with -runs > 1, as the median of the
// runs with [min-max].
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcplisten/listen/bench/internal/procstat"
)

var (
	serverBin = flag.String("server", "", "the server binary (empty: build ./examples/server)")
	basePort  = flag.Int("port", 20100, "first TCP port; each server start takes the next one")
	runs      = flag.Int("runs", 3, "runs of each scenario")
	only      = flag.String("only", "", "comma-separated scenarios (empty: all)")
	nSlow     = flag.Int("n", 10, "slow: connections of each kind")
	size      = flag.Int("size", 512<<10, "memory: the announced body size")
	nListens  = flag.Int("listens", 20, "uris: listens per run")
)

func main() {
	flag.Parse()
	dir, err := os.MkdirTemp("", "sdkfront")
	check(err)
	defer os.RemoveAll(dir)
	if *serverBin == "" {
		*serverBin = filepath.Join(dir, "server")
		build := exec.Command("go", "build", "-o", *serverBin, "./examples/server")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		check(build.Run())
	}
	if *only == "" || strings.Contains(*only, "flood") || strings.Contains(*only, "idleheap") {
		buildMCPGo(dir)
	}
	fmt.Printf("server %s, %d runs, load %s\n", *serverBin, *runs, loadavg())
	scenarios := []struct {
		name string
		run  func(run int) map[string]float64
	}{
		{"crosssite", crossSite}, {"slow", slowBodies}, {"memory", memory},
		{"older", older}, {"version", version}, {"uris", uriCost}, {"method", method},
		{"surrogate", surrogate}, {"flood", flood}, {"idleheap", idleHeap},
	}
	for _, sc := range scenarios {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), sc.name) {
			continue
		}
		figures := map[string][]float64{}
		var keys []string
		for i := range *runs {
			fs := sc.run(i + 1)
			for k, v := range fs {
				if _, ok := figures[k]; !ok {
					keys = append(keys, k)
				}
				figures[k] = append(figures[k], v)
			}
		}
		if *runs > 1 {
			slices.Sort(keys)
			fmt.Printf("%s over %d runs (median [min-max]):\n", sc.name, *runs)
			for _, k := range keys {
				v := figures[k]
				fmt.Printf("  %-28s %10.3f [%.3f-%.3f]\n", k, procstat.Median(v), slices.Min(v), slices.Max(v))
			}
		}
	}
	fmt.Printf("load at the end %s\n", loadavg())
}

// server is one started server process.
type server struct {
	cmd  *exec.Cmd
	addr string
	url  string
}

var nextPort = 0

// start runs the server (-server) with extra flags and waits for its
// address.
func start(extra ...string) *server { return startBin(*serverBin, extra...) }

// startBin runs the server binary bin with extra flags and waits for its
// address.
func startBin(bin string, extra ...string) *server {
	port := *basePort + nextPort
	nextPort++
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := append([]string{"-addr", addr, "-quiet", "-pprof"}, extra...)
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	check(err)
	cmd.Stderr = io.Discard
	check(cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	check(err)
	if !strings.Contains(line, "listening on") {
		check(fmt.Errorf("server said %q", line))
	}
	return &server{cmd: cmd, addr: addr, url: "http://" + addr + "/mcp"}
}

func (s *server) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

func (s *server) rss() int64 {
	rss, _, _ := procstat.Memory(s.cmd.Process.Pid)
	return rss
}

func (s *server) cpu() time.Duration {
	d, err := procstat.CPU(s.cmd.Process.Pid)
	check(err)
	return d
}

// vars returns the server's /debug/vars, after a forced GC when gc is set.
func (s *server) vars(gc bool) map[string]json.RawMessage {
	if gc {
		resp, err := http.Get("http://" + s.addr + "/debug/pprof/heap?gc=1")
		check(err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	resp, err := http.Get("http://" + s.addr + "/debug/vars")
	check(err)
	defer resp.Body.Close()
	var v map[string]json.RawMessage
	check(json.NewDecoder(resp.Body).Decode(&v))
	return v
}

func (s *server) heapAlloc() float64 {
	var m struct{ HeapAlloc float64 }
	check(json.Unmarshal(s.vars(true)["memstats"], &m))
	return m.HeapAlloc
}

const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"%s","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"sdkfront","version":"0"}}`

// request builds a POST with the 2026-07-28 headers (version in both).
func request(url, method, version, body string) *http.Request {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	check(err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", version)
	req.Header.Set("Mcp-Method", method)
	return req
}

func listenBody(id, version, notifications string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{"notifications":` +
		notifications + `,` + fmt.Sprintf(meta, version) + `}}`
}

// do sends req and returns the status and the body (up to 4 KiB; of an SSE
// stream, its first event's data line only).
func do(req *http.Request) (int, string) {
	resp, err := http.DefaultClient.Do(req)
	check(err)
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil || strings.HasPrefix(line, "data:") {
				return resp.StatusCode, "(stream) " + strings.TrimSpace(line)
			}
		}
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return resp.StatusCode, string(b)
}

func crossSite(run int) map[string]float64 {
	s := start()
	defer s.stop()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_trigger_tool_change","arguments":{},` + fmt.Sprintf(meta, "2026-07-28") + `}}`
	figures := map[string]float64{}
	for _, c := range []struct {
		name string
		hdr  map[string]string
	}{
		{"evil-origin", map[string]string{"Origin": "http://evil.example"}},
		{"evil-origin+cross-site", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}},
		{"origin-null", map[string]string{"Origin": "null"}},
		{"no-origin (control)", nil},
	} {
		req := request(s.url, "tools/call", "2026-07-28", body)
		req.Header.Set("Mcp-Name", "test_trigger_tool_change")
		for k, v := range c.hdr {
			req.Header.Set(k, v)
		}
		status, b := do(req)
		fmt.Printf("run %d crosssite %s: %d %s\n", run, c.name, status, firstLine(b))
		figures["status "+c.name] = float64(status)
	}
	return figures
}

// slowBodies sends -n connections of each kind and records how long each
// lived.
func slowBodies(run int) map[string]float64 {
	s := start()
	defer s.stop()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + fmt.Sprintf(meta, "2026-07-28") + `}}`
	head := "POST /mcp HTTP/1.1\r\nHost: " + s.addr + "\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\nMcp-Method: tools/list\r\nMcp-Protocol-Version: 2026-07-28\r\n"
	figures := map[string]float64{}
	const watch = 35 * time.Second
	type res struct {
		kind   string
		life   float64
		status string
	}
	results := make(chan res, 3**nSlow)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, kind := range []string{"short", "drip", "chunked"} {
		for range *nSlow {
			wg.Add(1)
			go func() { // ends when the server answers or closes, or on stop
				defer wg.Done()
				conn, err := net.Dial("tcp", s.addr)
				check(err)
				defer conn.Close()
				t0 := time.Now()
				h := head
				if kind == "chunked" {
					h += "Transfer-Encoding: chunked\r\n\r\n"
				} else {
					h += "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
				}
				_, err = io.WriteString(conn, h)
				check(err)
				go func() { // ends on stop or a failed write
					switch kind {
					case "short":
						_, _ = io.WriteString(conn, body[:len(body)-1])
					case "drip":
						for i := 0; i < len(body); i++ {
							if _, err := conn.Write([]byte{body[i]}); err != nil {
								return
							}
							select {
							case <-time.After(2 * time.Second):
							case <-stop:
								return
							}
						}
					case "chunked":
						for {
							if _, err := io.WriteString(conn, "1\r\n \r\n"); err != nil {
								return
							}
							select {
							case <-time.After(2 * time.Second):
							case <-stop:
								return
							}
						}
					}
				}()
				ended := make(chan string, 1)
				go func() { // ends with the connection
					resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
					if err != nil {
						ended <- "closed"
						return
					}
					b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
					ended <- strconv.Itoa(resp.StatusCode) + " " + strings.TrimSpace(string(b))
				}()
				select {
				case st := <-ended:
					results <- res{kind, time.Since(t0).Seconds(), st}
				case <-stop:
					results <- res{kind, -1, "still open"}
				}
			}()
		}
	}
	time.AfterFunc(watch, func() { close(stop) })
	wg.Wait()
	close(results)
	lives := map[string][]float64{}
	statuses := map[string]map[string]int{}
	for r := range results {
		if statuses[r.kind] == nil {
			statuses[r.kind] = map[string]int{}
		}
		statuses[r.kind][r.status]++
		if r.life >= 0 {
			lives[r.kind] = append(lives[r.kind], r.life)
		}
	}
	for _, kind := range []string{"short", "drip", "chunked"} {
		l := lives[kind]
		if len(l) > 0 {
			fmt.Printf("run %d slow %s: %d cut after %.2fs (median; %.2f-%.2f); %v\n", run, kind, len(l), procstat.Median(l), slices.Min(l), slices.Max(l), statuses[kind])
			figures[kind+" cut after s"] = procstat.Median(l)
		} else {
			fmt.Printf("run %d slow %s: none cut within %v; %v\n", run, kind, watch, statuses[kind])
		}
		figures[kind+" still open"] = float64(statuses[kind]["still open"])
	}
	return figures
}

// memory holds 50 near-limit bodies and samples the server's RSS.
func memory(run int) map[string]float64 {
	s := start()
	defer s.stop()
	const n = 50
	time.Sleep(200 * time.Millisecond) // let the server settle before the baseline
	base := s.rss()
	prefix := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"`
	body := prefix + strings.Repeat("x", *size-len(prefix)-3) + `"}}`
	head := "POST /mcp HTTP/1.1\r\nHost: " + s.addr + "\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\nMcp-Method: tools/list\r\nMcp-Protocol-Version: 2026-07-28\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	var conns []net.Conn
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range n {
		wg.Add(1)
		go func() { // ends once its bytes are written
			defer wg.Done()
			conn, err := net.Dial("tcp", s.addr)
			check(err)
			_, err = io.WriteString(conn, head+body[:len(body)-1])
			check(err)
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}()
	}
	wg.Wait()
	var peak int64
	for range 30 { // 3 s
		time.Sleep(100 * time.Millisecond)
		peak = max(peak, s.rss())
	}
	for _, c := range conns {
		c.Close()
	}
	growth := procstat.MiB(peak - base)
	fmt.Printf("run %d memory: %d bodies of %d bytes held: RSS %.1f MiB -> peak %.1f MiB, growth %.1f MiB (%.1f MB)\n",
		run, n, len(body), procstat.MiB(base), procstat.MiB(peak), growth, float64(peak-base)/1e6)
	return map[string]float64{"RSS growth MB": float64(peak-base) / 1e6}
}

// older sends 150 listens naming earlier versions under -max-streams 5.
func older(run int) map[string]float64 {
	s := start("-max-streams", "5")
	defer s.stop()
	versions := []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
	statuses := map[string]int{}
	var first string
	var bodies []io.Closer // streams the server may have opened, held open
	for i := range 150 {
		v := versions[i%len(versions)]
		req := request(s.url, "subscriptions/listen", v, listenBody(strconv.Itoa(i+1), v, `{"toolsListChanged":true}`))
		resp, err := http.DefaultClient.Do(req)
		check(err)
		statuses[strconv.Itoa(resp.StatusCode)+" "+resp.Header.Get("Content-Type")]++
		if resp.StatusCode == http.StatusOK {
			bodies = append(bodies, resp.Body) // a stream: keep it open
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if first == "" {
			first = string(b)
		}
	}
	var st struct {
		Active int
		Opened uint64
	}
	var l struct {
		HTTP       json.RawMessage `json:"http"`
		Goroutines int             `json:"goroutines"`
	}
	check(json.Unmarshal(s.vars(false)["listen"], &l))
	check(json.Unmarshal(l.HTTP, &st))
	fmt.Printf("run %d older: statuses %v, first body %s; the handler counts %d active, %d opened; %d goroutines\n",
		run, statuses, first, st.Active, st.Opened, l.Goroutines)
	for _, b := range bodies {
		b.Close()
	}
	return map[string]float64{"streams served (200)": float64(len(bodies)), "handler active": float64(st.Active), "goroutines": float64(l.Goroutines)}
}

// unsupportedExample is the specification's UnsupportedProtocolVersionError
// example, compacted.
const unsupportedExample = `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28","2025-11-25"],"requested":"1900-01-01"}}}`

func version(run int) map[string]float64 {
	s := start()
	defer s.stop()
	status, b := do(request(s.url, "subscriptions/listen", "1900-01-01", listenBody("1", "1900-01-01", `{"toolsListChanged":true}`)))
	// The example with the server's own supported list.
	var got struct {
		Error struct {
			Data struct {
				Supported []string `json:"supported"`
			} `json:"data"`
		} `json:"error"`
	}
	same := 0.0
	if json.Unmarshal([]byte(b), &got) == nil && got.Error.Data.Supported != nil {
		sup, _ := json.Marshal(got.Error.Data.Supported)
		want := strings.Replace(unsupportedExample, `["2026-07-28","2025-11-25"]`, string(sup), 1)
		if strings.TrimSpace(b) == want {
			same = 1
		}
	}
	fmt.Printf("run %d version 1900-01-01: %d %s (the example byte for byte, with the server's supported list: %v)\n", run, status, strings.TrimSpace(b), same == 1)
	return map[string]float64{"status": float64(status), "byte-compatible": same}
}

// uriCost opens -listens listens of 1,000 fresh 120-byte URIs each.
func uriCost(run int) map[string]float64 {
	s := start("-max-streams", "100000")
	defer s.stop()
	n := *nListens
	// The URIs are made up front; encoding them into a request is part of
	// what the client pays, timed separately (build).
	uriLists := make([][]string, n)
	for i := range uriLists {
		uris := make([]string, 1000)
		for j := range uris {
			u := fmt.Sprintf("file:///r%d/l%d/u%d/", run, i, j)
			uris[j] = u + strings.Repeat("x", 120-len(u))
		}
		uriLists[i] = uris
	}
	heap0 := s.heapAlloc()
	build0 := selfCPU()
	bodies := make([]string, n)
	for i, uris := range uriLists {
		b, _ := json.Marshal(map[string]any{"resourceSubscriptions": uris})
		bodies[i] = listenBody(strconv.Itoa(i+1), "2026-07-28", string(b))
	}
	build := selfCPU() - build0
	client0, server0 := selfCPU(), s.cpu()
	var open []io.Closer
	for _, body := range bodies {
		req := request(s.url, "subscriptions/listen", "2026-07-28", body)
		resp, err := http.DefaultClient.Do(req)
		check(err)
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			check(fmt.Errorf("listen: %d %s", resp.StatusCode, b))
		}
		br := bufio.NewReader(resp.Body)
		for { // the acknowledgement's data line
			line, err := br.ReadString('\n')
			check(err)
			if strings.HasPrefix(line, "data:") {
				break
			}
		}
		open = append(open, resp.Body)
	}
	clientOpen, serverOpen := selfCPU()-client0, s.cpu()-server0
	heap1 := s.heapAlloc()
	client1, server1 := selfCPU(), s.cpu()
	for _, c := range open {
		c.Close()
	}
	// The server has closed them all once the handler counts none.
	for {
		var l struct {
			HTTP struct{ Active int } `json:"http"`
		}
		check(json.Unmarshal(s.vars(false)["listen"], &l))
		if l.HTTP.Active == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	clientClose, serverClose := selfCPU()-client1, s.cpu()-server1
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
	bodyBytes := float64(len(bodies[0]))
	heapPer := (heap1 - heap0) / float64(n)
	fmt.Printf("run %d uris: %d listens of %d bytes; open: server %.2f ms per listen, client %.2f ms to send it and read the ack (%.1fx) + %.2f ms to encode it (%.1fx of both); close: server %.2f ms, client %.2f ms; heap %.0f KiB per listen (%.2fx the body)\n",
		run, n, len(bodies[0]), per(serverOpen), per(clientOpen), float64(serverOpen)/float64(clientOpen),
		per(build), float64(serverOpen)/float64(clientOpen+build),
		per(serverClose), per(clientClose), heapPer/1024, heapPer/bodyBytes)
	return map[string]float64{
		"open server ms/listen":          per(serverOpen),
		"open client send+ack ms":        per(clientOpen),
		"open client encode ms":          per(build),
		"open server/client send+ack":    float64(serverOpen) / float64(clientOpen),
		"open server/client with encode": float64(serverOpen) / float64(clientOpen+build),
		"close server ms/listen":         per(serverClose),
		"close client ms/listen":         per(clientClose),
		"heap KiB/listen":                heapPer / 1024,
		"heap/body":                      heapPer / bodyBytes,
	}
}

func method(run int) map[string]float64 {
	s := start()
	defer s.stop()
	body := `{"jsonrpc":"2.0","id":1,"METHOD":"subscriptions/listen","PARAMS":{"notifications":{"toolsListChanged":true},` + fmt.Sprintf(meta, "2026-07-28") + `}}`
	figures := map[string]float64{}
	for _, m := range []string{"subscriptions/listen", "tools/list"} {
		status, b := do(request(s.url, m, "2026-07-28", body))
		fmt.Printf("run %d method METHOD/PARAMS body, Mcp-Method %s: %d %s\n", run, m, status, firstLine(b))
		figures["status with "+m] = float64(status)
	}
	return figures
}

func surrogate(run int) map[string]float64 {
	s := start()
	defer s.stop()
	status, b := do(request(s.url, "subscriptions/listen", "2026-07-28",
		listenBody("1", "2026-07-28", `{"resourceSubscriptions":["file:///\ud800"]}`)))
	fmt.Printf("run %d surrogate file:///\\ud800: %d %s\n", run, status, firstLine(b))
	return map[string]float64{"status": float64(status)}
}

// selfCPU is this process's CPU time.
func selfCPU() time.Duration {
	d, err := procstat.CPU(os.Getpid())
	check(err)
	return d
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return string(bytes.TrimSpace(b))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "sdkfront:", err)
		os.Exit(1)
	}
}
