package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/examples/internal/listencheck"
)

// prometheusRequired makes TestPrometheusAlerts fail instead of skipping
// when the prometheus program is missing (.ci/run sets it).
const prometheusRequired = "MCPLISTEN_PROMETHEUS_REQUIRED"

// The shipped monitoring files of the otel module.
const (
	alertsFile    = "../../otel/monitoring/alerts.yml"
	dashboardFile = "../../otel/monitoring/dashboard.json"
)

// promWait bounds every wait on Prometheus (a scrape and an evaluation
// every second).
const promWait = 60 * time.Second

// A real Prometheus scrapes examples/server -metrics, joined to a NATS
// broker, under a scripted, bounded load that trips every alert of the
// otel module's alerts.yml (none fires before the load), and every query
// of its Grafana dashboard returns a value above zero. The rules are the
// shipped ones with every for: shortened to 1s, and the fan-out alert's
// 100 ms threshold lowered to 0 (a bounded load cannot make a fan-out last
// 100 ms; promtool's cases cover the threshold).
func TestPrometheusAlerts(t *testing.T) {
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv(prometheusRequired) == "1" {
			t.Fatalf("prometheus not found on PATH and %s=1", prometheusRequired)
		}
		t.Skip("prometheus not found on PATH: install Debian's prometheus package")
	}
	alerts := readAlerts(t)

	// The broker, on a port it comes back to after the outage below.
	ns := startNATS(t, -1)
	natsPort := ns.Addr().(*net.TCPAddr).Port
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })

	const maxStreams = 10
	srv := startProc(t, "-metrics", "-max-streams", strconv.Itoa(maxStreams), "-max-streams-per-client", "-1", "-write-timeout", "5s",
		"-max-buffer", "4", "-overflow", "end_listener", "-max-uri-bytes", "70000", "-broker", ns.ClientURL())
	prom := startPrometheus(t, promBin, srv.addr, alerts)

	// Idle: the target is up, its series are in, the rules were evaluated
	// on them, and nothing fires or is pending.
	require.Eventually(t, func() bool {
		return len(prom.query(t, `mcp_listen_streams_capacity{job="mcplisten"} == `+strconv.Itoa(maxStreams))) == 1 &&
			len(prom.query(t, `mcp_listen_bridge_disconnected{job="mcplisten"}`)) == 1
	}, promWait, 100*time.Millisecond, "Prometheus scrapes the server")
	prom.waitEvaluation(t, time.Now())
	assert.Empty(t, prom.alerts(t), "no alert before the load")
	start := time.Now()

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	// Streams up to -max-streams: 8 that read every tools/list_changed, a
	// client that never reads its stream (S) and one that reads nothing
	// until told (P), both watching a resource with a 60,000-byte URI,
	// through sockets with a small receive buffer.
	bigURI := "test://big/" + strings.Repeat("x", 60000)
	for i := range maxStreams - 2 {
		msgs := listenOn(t, ctx, srv, fmt.Sprintf("reader-%d", i), `{"toolsListChanged":true}`)
		go func() { // ends when the stream ends (the body is closed with the test)
			for range msgs {
			}
		}()
	}
	stalled := openSmallBuffer(t, ctx, srv.url, "stalled", bigURI)
	defer stalled.Body.Close()
	paused := openSmallBuffer(t, ctx, srv.url, "paused", bigURI)
	defer paused.Body.Close()
	readP := make(chan struct{})
	pTail := make(chan string, 1)
	go func() { // P: waits for readP, then reads its stream to the end
		defer close(pTail)
		select {
		case <-readP:
		case <-ctx.Done():
			return
		}
		var tail tailBuffer
		_, _ = io.Copy(&tail, paused.Body)
		pTail <- tail.String()
	}()
	prom.waitFiring(t, "ListenStreamsNearCapacity")

	// Refusals: 3 over capacity (503), 20 naming a version the server
	// does not serve listens for (404 -32601 and 400 -32022).
	for i := range 3 {
		resp := post(t, ctx, srv.url, "subscriptions/listen", listenBody(fmt.Sprintf("over-%d", i), `{"toolsListChanged":true}`, "2026-07-28"))
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		resp.Body.Close()
	}
	for i := range 20 {
		version := []string{"2025-06-18", "1999-01-01"}[i%2]
		req := listencheck.NewRequest(t, ctx, srv.url, "subscriptions/listen", listenBody(fmt.Sprintf("bad-%d", i), `{"toolsListChanged":true}`, version))
		req.Header.Set("MCP-Protocol-Version", version)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		assert.Contains(t, []int{http.StatusNotFound, http.StatusBadRequest}, resp.StatusCode)
		resp.Body.Close()
	}

	// Publications: tools/list_changed for the readers, and resource
	// updates (about 60 KB each) until S's and P's queues have overflowed
	// (-overflow end_listener: both listeners fell behind).
	for range 3 {
		callTool(t, srv.url, "test_trigger_tool_change", `{}`)
	}
	update := `{"uri":"` + bigURI + `"}`
	for i := 0; hubFellBehind(t, srv) < 2; i++ {
		require.Less(t, i, 400, "S and P fall behind")
		callTool(t, srv.url, "trigger_resource_update", update)
	}
	// P reads now: the events written before, then the early ending. S
	// never does: its write deadline cuts it.
	close(readP)
	select {
	case tail := <-pTail:
		assert.Contains(t, tail, `"fell_behind"`, "P's stream ends with the early ending")
	case <-time.After(promWait):
		require.FailNow(t, "P's stream did not end")
	}

	// The bridge: malformed messages and messages of another origin with
	// gaps in its numbers (each gap, once the last resync is over, a
	// resync) on the NATS subject.
	spy, err := nats.Connect(ns.ClientURL())
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, spy.Publish(defaultChannel, []byte("not an envelope")))
	}
	for n := 1; n <= 15; n += 2 {
		before := brokerStats(t, srv).Resyncs
		env := fmt.Sprintf(`{"v":1,"o":"gapped","n":%d,"t":%d,"k":"tools"}`, n, time.Now().UnixMilli())
		require.NoError(t, spy.Publish(defaultChannel, []byte(env)))
		require.NoError(t, spy.Flush())
		if n > 1 {
			require.Eventually(t, func() bool { return brokerStats(t, srv).Resyncs > before },
				failsafe, 10*time.Millisecond, "a gap resyncs")
		}
	}
	spy.Close()

	// The broker goes down: the bridge reports it lost, and once the NATS
	// client's reconnect buffer (8 MiB) is full, publications fail.
	ns.Shutdown()
	ns.WaitForShutdown()
	for i := 0; brokerStats(t, srv).PublishErrors == 0; i++ {
		require.Less(t, i, 400, "publications fail with the broker down")
		callTool(t, srv.url, "trigger_resource_update", update)
	}
	prom.waitFiring(t, "ListenBridgeDisconnected")
	// It comes back: the bridge reconnects and resyncs.
	ns = startNATS(t, natsPort)
	require.Eventually(t, func() bool { return len(prom.query(t, `mcp_listen_bridge_disconnected == 0`)) == 1 },
		promWait, 100*time.Millisecond, "the bridge reconnects")

	// Every alert has fired (those on a gauge, near capacity and
	// disconnected, were seen firing above and have resolved since).
	var missing []string
	assert.Eventually(t, func() bool {
		prom.alerts(t)
		missing = missing[:0]
		for _, a := range alerts.names {
			if !prom.fired[a] {
				missing = append(missing, a)
			}
		}
		return len(missing) == 0
	}, promWait, 200*time.Millisecond, "every alert fires")
	require.Empty(t, missing, "alerts that never fired")
	t.Logf("alerts now: %v", prom.alerts(t))

	// Every dashboard query has a value above zero since the load began.
	end := time.Now()
	queries := 0
	for _, p := range readDashboard(t) {
		for _, expr := range p.exprs {
			queries++
			q := strings.NewReplacer("$__rate_interval", "10s", "$job", ".*", "$instance", ".*").Replace(expr)
			assert.True(t, prom.anyAboveZero(t, q, start, end), "panel %q: %s has no value above zero", p.title, q)
		}
	}
	t.Logf("%d dashboard queries checked over %v of load", queries, end.Sub(start).Round(time.Second))
}

// listenBody is a listen request naming version in its _meta.
func listenBody(id, filter, version string) string {
	return `{"jsonrpc":"2.0","id":"` + id + `","method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` +
		version + `","io.modelcontextprotocol/clientCapabilities":{}},"notifications":` + filter + `}}`
}

// openSmallBuffer opens a listen watching uri on a connection of its own
// whose receive buffer is 4 KiB, and returns it with its acknowledgement
// unread: a client that does not read fills the server's socket after a
// few events.
func openSmallBuffer(t *testing.T, ctx context.Context, url, id, uri string) *http.Response {
	t.Helper()
	dialer := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); err != nil {
			return err
		}
		return serr
	}}
	tr := &http.Transport{DialContext: dialer.DialContext, DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	req := listencheck.NewRequest(t, ctx, url, "subscriptions/listen",
		listenBody(id, `{"resourceSubscriptions":["`+uri+`"]}`, "2026-07-28"))
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return resp
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct{ b []byte }

func (w *tailBuffer) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	if len(w.b) > 4096 {
		w.b = append(w.b[:0], w.b[len(w.b)-4096:]...)
	}
	return len(p), nil
}

func (w *tailBuffer) String() string { return string(w.b) }

// hubFellBehind reads the hub's FellBehind counter from p's /debug/vars.
func hubFellBehind(t *testing.T, p *proc) uint64 {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + "/debug/vars")
	require.NoError(t, err)
	defer resp.Body.Close()
	var doc struct {
		Listen struct {
			Hub struct{ FellBehind uint64 }
		}
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	return doc.Listen.Hub.FellBehind
}

// startNATS starts an embedded NATS server on port (-1: any free port).
func startNATS(t *testing.T, port int) *natsserver.Server {
	t.Helper()
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true})
	require.NoError(t, err)
	ns.Start()
	require.True(t, ns.ReadyForConnections(failsafe))
	return ns
}

// alertRules is the shipped rules file and the alerts it defines.
type alertRules struct {
	text  string
	names []string
}

func readAlerts(t *testing.T) alertRules {
	t.Helper()
	b, err := os.ReadFile(alertsFile)
	require.NoError(t, err)
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s*- alert: (\w+)$`).FindAllStringSubmatch(string(b), -1) {
		names = append(names, m[1])
	}
	require.NotEmpty(t, names)
	return alertRules{text: string(b), names: names}
}

// forTest is the rules as the test loads them: every for: 1s, and the
// fan-out alert's threshold 0.
func (a alertRules) forTest(t *testing.T) string {
	t.Helper()
	const fanout = "rate(mcp_listen_fanout_duration_seconds_bucket[10m]))\n          ) > 0.1\n"
	require.Equal(t, 1, strings.Count(a.text, fanout), "the fan-out alert's threshold")
	s := strings.Replace(a.text, fanout, strings.TrimSuffix(fanout, " > 0.1\n")+" > 0\n", 1)
	return regexp.MustCompile(`(?m)^(\s+)for: \S+$`).ReplaceAllString(s, "${1}for: 1s")
}

// panel is a dashboard panel's title and queries.
type panel struct {
	title string
	exprs []string
}

func readDashboard(t *testing.T) []panel {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var d struct {
		Panels []struct {
			Type    string
			Title   string
			Targets []struct{ Expr string }
		}
	}
	require.NoError(t, json.Unmarshal(b, &d))
	var out []panel
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		pl := panel{title: p.Title}
		for _, tg := range p.Targets {
			pl.exprs = append(pl.exprs, tg.Expr)
		}
		require.NotEmpty(t, pl.exprs, p.Title)
		out = append(out, pl)
	}
	require.NotEmpty(t, out)
	return out
}

// promServer is a Prometheus process started by the test.
type promServer struct {
	base  string          // http://127.0.0.1:PORT
	fired map[string]bool // the alerts seen firing by alerts
}

// startPrometheus runs Prometheus on a free loopback port with a config
// and a storage directory of its own: a scrape of target (job mcplisten)
// and an evaluation of the rules every second. It is stopped with the
// test.
func startPrometheus(t *testing.T, bin, target string, rules alertRules) *promServer {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "alerts.yml"), []byte(rules.forTest(t)), 0o600))
	config := `global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - ` + filepath.Join(dir, "alerts.yml") + `
scrape_configs:
  - job_name: mcplisten
    static_configs:
      - targets: ["` + target + `"]
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--log.level=warn")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }() // ends when the process exits
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(failsafe):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("prometheus output:\n%s", logs.String())
		}
	})
	p := &promServer{base: "http://" + addr, fired: map[string]bool{}}
	require.Eventually(t, func() bool {
		resp, err := http.Get(p.base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, promWait, 50*time.Millisecond, "Prometheus is ready")
	return p
}

// api GETs a Prometheus HTTP API path and decodes its data into out.
func (p *promServer) api(t *testing.T, path string, params url.Values, out any) {
	t.Helper()
	resp, err := http.Get(p.base + path + "?" + params.Encode())
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Status string
		Error  string
		Data   json.RawMessage
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "success", body.Status, "%s %v: %s", path, params, body.Error)
	require.NoError(t, json.Unmarshal(body.Data, out))
}

// query returns the samples of an instant query, as their values.
func (p *promServer) query(t *testing.T, expr string) []string {
	t.Helper()
	var data struct {
		Result []struct {
			Value [2]any
		}
	}
	p.api(t, "/api/v1/query", url.Values{"query": {expr}}, &data)
	var out []string
	for _, r := range data.Result {
		out = append(out, fmt.Sprint(r.Value[1]))
	}
	return out
}

// anyAboveZero reports whether a range query over [start, end] has a
// value above zero in any of its series.
func (p *promServer) anyAboveZero(t *testing.T, expr string, start, end time.Time) bool {
	t.Helper()
	var data struct {
		Result []struct {
			Values [][2]any
		}
	}
	p.api(t, "/api/v1/query_range", url.Values{"query": {expr}, "step": {"1"},
		"start": {strconv.FormatInt(start.Unix(), 10)}, "end": {strconv.FormatInt(end.Unix()+1, 10)}}, &data)
	for _, r := range data.Result {
		for _, v := range r.Values {
			if f, err := strconv.ParseFloat(fmt.Sprint(v[1]), 64); err == nil && f > 0 {
				return true
			}
		}
	}
	return false
}

// alerts returns the state (pending, firing) of each active alert, and
// records those firing in p.fired.
func (p *promServer) alerts(t *testing.T) map[string]string {
	t.Helper()
	var data struct {
		Alerts []struct {
			Labels map[string]string
			State  string
		}
	}
	p.api(t, "/api/v1/alerts", nil, &data)
	out := map[string]string{}
	for _, a := range data.Alerts {
		if out[a.Labels["alertname"]] != "firing" {
			out[a.Labels["alertname"]] = a.State
		}
		if a.State == "firing" {
			p.fired[a.Labels["alertname"]] = true
		}
	}
	return out
}

// waitFiring waits until the alert fires.
func (p *promServer) waitFiring(t *testing.T, alert string) {
	t.Helper()
	require.Eventually(t, func() bool { return p.alerts(t)[alert] == "firing" },
		promWait, 100*time.Millisecond, "%s fires", alert)
}

// waitEvaluation waits until the rules have been evaluated after since.
func (p *promServer) waitEvaluation(t *testing.T, since time.Time) {
	t.Helper()
	require.Eventually(t, func() bool {
		var data struct {
			Groups []struct {
				LastEvaluation time.Time
			}
		}
		p.api(t, "/api/v1/rules", nil, &data)
		return len(data.Groups) == 1 && data.Groups[0].LastEvaluation.After(since)
	}, promWait, 100*time.Millisecond, "the rules are evaluated")
}
