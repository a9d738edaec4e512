// Command mcpgobench measures subscriptions/listen on mark3labs/mcp-go
// servers (the release the bench module requires), with this library's
// adapter (package mcpgo) and without it (mcp-go's own listen), and writes OUT/mcpgo.md. Linux only. Run it from
// the repository root:
//
//	go run ./bench/cmd/mcpgobench [-n 10000] [-runs 5] [-changes 200] [-gosdk] [-out-dir bench/results]
//
// It measures, in one run:
//
//  1. the delay from an mcp-go call to the notification read by an HTTP
//     client over loopback, one listen, in this process: AddTool/DeleteTools
//     and SendNotificationToAllClients(notifications/resources/updated)
//     behind mcpgo.NewHandler, and AddTool/DeleteTools with mcp-go's own
//     listen (which never delivers resources/updated); -changes changes per
//     kind and run, -runs runs, each on a fresh server;
//  2. the fan-out to -n streams on fresh server processes taking turns in
//     rotated order (bench/internal/harness): examples/mcpgo (the adapter)
//     and bench/cmd/mcpgoserver (plain mcp-go, the same tools), and with
//     -gosdk also examples/server and bench/cmd/gosdkserver, so that the
//     go-sdk figures are beside them from the same run.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplisten/listen/bench/internal/harness"
	fixture "github.com/mcplisten/listen/bench/internal/mcpgofixture"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/mcpgo"
)

// The servers of the fan-out.
var (
	mcpgoOurs  = harness.Kind{ID: "mcpgo", Name: "mcpgo", Label: "mcp-go + this library (examples/mcpgo)", Pkg: "./examples/mcpgo"}
	mcpgoPlain = harness.Kind{ID: "mcpgo-plain", Name: "mcp-go", Label: "plain mcp-go (bench/cmd/mcpgoserver)", Pkg: "./bench/cmd/mcpgoserver"}
)

func main() { harness.Main("mcpgobench", run) }

func run(ctx context.Context, args []string, log io.Writer) error {
	fs := flag.NewFlagSet("mcpgobench", flag.ContinueOnError)
	fs.SetOutput(log)
	n := fs.Int("n", 10000, "streams of the fan-out")
	runs := fs.Int("runs", 5, "runs of each measurement (fresh servers)")
	triggers := fs.Int("triggers", 5, "measured triggers per fan-out run")
	changes := fs.Int("changes", 200, "changes per kind and run of the delay measurement")
	withSDK := fs.Bool("gosdk", true, "also run the fan-out on examples/server and bench/cmd/gosdkserver")
	skipFanout := fs.Bool("skip-fanout", false, "measure the delay only")
	outDir := fs.String("out-dir", "bench/results", "directory for mcpgo.md (relative: to the repository root)")
	repo := fs.String("repo", "", "repository root (default: found from the working directory)")
	if _, err := harness.ParseArgs(fs, args); err != nil {
		return err
	}
	if *n < 1 || *runs < 1 || *triggers < 1 || *changes < 2 {
		return errors.New("-n, -runs, -triggers must be positive, -changes at least 2")
	}
	root, out, err := harness.Dirs(*repo, *outDir)
	if err != nil {
		return err
	}
	logf := harness.Logf(log)

	rep := &report{Command: "go run ./bench/cmd/mcpgobench " + strings.Join(args, " "), Started: time.Now(), LoadStart: harness.LoadAverage(), Runs: *runs, N: *n, Changes: *changes, Triggers: *triggers}
	rep.Load = append(rep.Load, "start: "+rep.LoadStart)
	for r := range *runs {
		for _, k := range delayKinds {
			logf("delay %s run %d", k.name, r+1)
			d, err := measureDelay(ctx, k, *changes)
			if err != nil {
				return fmt.Errorf("delay %s: %w", k.name, err)
			}
			rep.addDelay(k.name, d)
		}
	}
	rep.Load = append(rep.Load, "after the delay runs: "+harness.LoadAverage())

	if !*skipFanout {
		kinds := []harness.Kind{mcpgoOurs, mcpgoPlain}
		if *withSDK {
			kinds = append(kinds, harness.Ours, harness.GoSDK)
		}
		if err := rep.fanout(ctx, root, kinds, *n, *runs, *triggers, logf); err != nil {
			return err
		}
		rep.Load = append(rep.Load, "after the fan-out runs: "+harness.LoadAverage())
	}
	rep.Finished = time.Now()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	md := rep.markdown()
	if err := os.WriteFile(filepath.Join(out, "mcpgo.md"), []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Print(md)
	return nil
}

// delayKind is one change whose delay is measured.
type delayKind struct {
	name string
	// ours: behind mcpgo.NewHandler, else mcp-go's own StreamableHTTPServer.
	ours bool
	// method is the notification the change causes.
	method string
}

var delayKinds = []delayKind{
	{"mcpgo: AddTool/DeleteTools", true, mcp.MethodNotificationToolsListChanged},
	{"mcpgo: SendNotificationToAllClients(resources/updated)", true, mcp.MethodNotificationResourceUpdated},
	{"plain mcp-go: AddTool/DeleteTools", false, mcp.MethodNotificationToolsListChanged},
}

// measureDelay runs changes changes of kind k on a fresh in-process server
// and returns each one's delay, from just before the mcp-go call to the
// client's read of the notification.
func measureDelay(ctx context.Context, k delayKind, changes int) ([]time.Duration, error) {
	srv := fixture.New("mcpgobench", "0")
	var h http.Handler
	var shutdown func(context.Context) error
	if k.ours {
		mh, err := mcpgo.NewHandler(srv, mcpgo.HandlerOptions{Options: mcpgo.Options{Logger: slog.New(slog.DiscardHandler)}})
		if err != nil {
			return nil, err
		}
		h, shutdown = mh, mh.Shutdown
	} else {
		sh := server.NewStreamableHTTPServer(srv)
		h, shutdown = sh, sh.Shutdown
	}
	ts := httptest.NewServer(h)
	defer ts.Close()
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	arrivals, err := openListen(lctx, ts.URL, k.method)
	if err != nil {
		return nil, err
	}
	delays := make([]time.Duration, 0, changes)
	for i := range changes {
		start := time.Now()
		switch {
		case k.method == mcp.MethodNotificationResourceUpdated:
			srv.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": fixture.ReadmeURI})
		case i%2 == 0:
			srv.AddTool(mcp.NewTool("delay_tool"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(""), nil
			})
		default:
			srv.DeleteTools("delay_tool")
		}
		select {
		case at, ok := <-arrivals:
			if !ok {
				return nil, errors.New("the listen ended")
			}
			delays = append(delays, at.Sub(start))
		case <-time.After(10 * time.Second):
			return nil, fmt.Errorf("change %d: no %s within 10 s", i, k.method)
		}
	}
	cancel()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = shutdown(sctx)
	return delays, nil
}

// openListen opens a listen for method's kind and returns the arrival time
// of each notification of that method, read by a goroutine that ends with
// ctx (or the stream).
func openListen(ctx context.Context, url, method string) (<-chan time.Time, error) {
	filter := map[string]any{"toolsListChanged": true}
	if method == mcp.MethodNotificationResourceUpdated {
		filter = map[string]any{"resourceSubscriptions": []any{fixture.ReadmeURI}}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": map[string]any{
		"notifications": filter,
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		},
	}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	r := listentest.NewSSEReader(resp.Body)
	first, err := r.Data()
	if err != nil || !bytes.Contains(first, []byte("notifications/subscriptions/acknowledged")) {
		resp.Body.Close()
		return nil, fmt.Errorf("no acknowledgement: %q %v", first, err)
	}
	out := make(chan time.Time, 16)
	pat := []byte(`"` + method + `"`)
	go func() { // ends with the stream (ctx's end cancels the request)
		defer close(out)
		defer resp.Body.Close()
		for {
			d, err := r.Data()
			if err != nil {
				return
			}
			if bytes.Contains(d, pat) {
				out <- time.Now()
			}
		}
	}()
	return out, nil
}

// report is the benchmark's results.
type report struct {
	Command           string
	Started, Finished time.Time
	LoadStart         string
	Load              []string
	Runs, N           int
	Changes, Triggers int
	// delays: kind name → per run: the delays in µs.
	delayOrder []string
	delays     map[string][][]float64
	// fan-out: kind → runs.
	kinds  []*harness.Server
	fanRun map[string][]*harness.FanoutRun
	errs   []string
}

func (r *report) addDelay(kind string, d []time.Duration) {
	if r.delays == nil {
		r.delays = map[string][][]float64{}
	}
	if _, ok := r.delays[kind]; !ok {
		r.delayOrder = append(r.delayOrder, kind)
	}
	us := make([]float64, len(d))
	for i, x := range d {
		us[i] = float64(x) / 1e3
	}
	r.delays[kind] = append(r.delays[kind], us)
}

// fanout runs the fan-out on fresh processes of kinds, taking turns.
func (r *report) fanout(ctx context.Context, root string, kinds []harness.Kind, n, runs, triggers int, logf func(string, ...any)) error {
	if _, err := harness.RaiseNoFile(uint64(n + 1024)); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "mcpgobench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, k := range kinds {
		logf("building %s", k.Pkg)
		s, err := harness.Build(ctx, root, tmp, k, "", n)
		if err != nil {
			return err
		}
		r.kinds = append(r.kinds, s)
	}
	cfg := harness.Default()
	cfg.Ns, cfg.Runs, cfg.Triggers = []int{n}, runs, triggers
	cfg.Log = logf
	r.fanRun = map[string][]*harness.FanoutRun{}
	for run := range runs {
		for j := range r.kinds {
			s := r.kinds[(j+run)%len(r.kinds)]
			logf("fanout %s N=%d run %d", s.Kind().ID, n, run+1)
			fr, err := s.Fanout(ctx, &cfg, tmp, n, run)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				r.errs = append(r.errs, fmt.Sprintf("%s run %d: %v", s.Kind().ID, run+1, err))
				logf("  error: %v", err)
			}
			if fr != nil {
				r.fanRun[s.Kind().ID] = append(r.fanRun[s.Kind().ID], fr)
				if len(fr.Triggers) > 0 {
					logf("  last stream %v, CPU/notification %.1f µs", fr.Triggers[len(fr.Triggers)-1].Last.Round(time.Microsecond), cpuPerNote(fr))
				}
			}
		}
	}
	return nil
}

func cpuPerNote(fr *harness.FanoutRun) float64 {
	var total time.Duration
	for _, t := range fr.Triggers {
		total += t.ServerCPU
	}
	if len(fr.Triggers) == 0 {
		return math.NaN()
	}
	return float64(total) / 1e3 / float64(fr.N*len(fr.Triggers))
}

// trig is the median over a run's measured triggers of f, in ms.
func trig(f func(harness.TriggerStats) time.Duration) func(*harness.FanoutRun) float64 {
	return func(fr *harness.FanoutRun) float64 {
		if len(fr.Triggers) == 0 {
			return math.NaN()
		}
		v := make([]float64, len(fr.Triggers))
		for i, t := range fr.Triggers {
			v[i] = float64(f(t)) / 1e6
		}
		return harness.Summarize(v).Median
	}
}

// fanMetrics are the fan-out's rows.
var fanMetrics = []struct {
	name string
	f    func(*harness.FanoutRun) float64
}{
	{"Fan-out latency, last stream (ms)", trig(func(t harness.TriggerStats) time.Duration { return t.Last })},
	{"Fan-out latency, p50 (ms)", trig(func(t harness.TriggerStats) time.Duration { return t.P50 })},
	{"Fan-out latency, first stream (ms)", trig(func(t harness.TriggerStats) time.Duration { return t.First })},
	{"Trigger tools/call round trip (ms)", trig(func(t harness.TriggerStats) time.Duration { return t.Call })},
	{"Server CPU per delivered notification (µs)", cpuPerNote},
	{"RSS per open stream, after a settle (KB)", func(fr *harness.FanoutRun) float64 {
		if fr.Opened == 0 {
			return math.NaN()
		}
		return float64(fr.Settled.RSSKB-fr.Before.RSSKB) * 1.024 / float64(fr.Opened)
	}},
	{"Goroutines per open stream", func(fr *harness.FanoutRun) float64 {
		if fr.Opened == 0 || fr.GoroutinesSet < 0 || fr.GoroutinesBefore < 0 {
			return math.NaN()
		}
		return float64(fr.GoroutinesSet-fr.GoroutinesBefore) / float64(fr.Opened)
	}},
	{"Open rate (listens/s)", func(fr *harness.FanoutRun) float64 { return fr.OpenRate }},
}

func (r *report) markdown() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# subscriptions/listen on mcp-go %s: this library's adapter and mcp-go alone\n\n", mcpgoVersion())
	w("Generated by `bench/cmd/mcpgobench`; do not edit by hand. Command, run from the repository root:\n\n    %s\n\n", strings.TrimSpace(r.Command))
	w("Run on %s, took %v; %s, %d CPUs. Load average (1, 5, 15 min): %s. Medians [min–max] over %d runs.\n\n",
		r.Started.UTC().Format("2006-01-02 15:04 UTC"), r.Finished.Sub(r.Started).Round(time.Second), runtime.Version(), runtime.NumCPU(), strings.Join(r.Load, "; "), r.Runs)

	w("## Delay from the mcp-go call to the notification read by an HTTP client\n\n")
	w("One listen over loopback HTTP/1.1, server and client in one process; %d changes per kind and run, each run on a fresh server. Each run's percentiles over its changes; the cells give the median [min–max] of each over the %d runs, in µs.\n\n", r.Changes, r.Runs)
	w("| Change | p10 | p50 | p90 | max |\n|---|---|---|---|---|\n")
	for _, k := range r.delayOrder {
		var p10, p50, p90, pmax []float64
		for _, run := range r.delays[k] {
			p10 = append(p10, harness.Quantile(run, 0.1))
			p50 = append(p50, harness.Quantile(run, 0.5))
			p90 = append(p90, harness.Quantile(run, 0.9))
			pmax = append(pmax, harness.Quantile(run, 1))
		}
		w("| %s | %s | %s | %s | %s |\n", k, cell(p10), cell(p50), cell(p90), cell(pmax))
	}
	w("| plain mcp-go: SendNotificationToAllClients(resources/updated) | never delivered | | | |\n\n")

	if len(r.kinds) > 0 {
		w("## Fan-out to %s streams\n\n", commas(r.N))
		w("Fresh server processes on loopback HTTP/1.1, taking turns in rotated order, clients in this process (bench/internal/harness, as listenbench). A run: %s listens for toolsListChanged, then %d measured `test_trigger_tool_change` calls after 1 warm-up; its latencies are the median over its triggers, from just before the call to each stream's notification. The ratios are paired by run.\n\n", commas(r.N), r.Triggers)
		w("| Measure |")
		for _, s := range r.kinds {
			w(" %s |", s.Kind().Name)
		}
		w(" mcpgo ÷ mcp-go |\n|---|")
		for range r.kinds {
			w("---|")
		}
		w("---|\n")
		for _, m := range fanMetrics {
			w("| %s |", m.name)
			for _, s := range r.kinds {
				var v []float64
				for _, fr := range r.fanRun[s.Kind().ID] {
					if x := m.f(fr); !math.IsNaN(x) {
						v = append(v, x)
					}
				}
				w(" %s |", cell(v))
			}
			var ratio []float64
			ours, plain := r.fanRun[mcpgoOurs.ID], r.fanRun[mcpgoPlain.ID]
			for i := range min(len(ours), len(plain)) {
				if a, b := m.f(ours[i]), m.f(plain[i]); !math.IsNaN(a) && !math.IsNaN(b) && b != 0 {
					ratio = append(ratio, a/b)
				}
			}
			w(" %s |\n", cell(ratio))
		}
		w("\nServers:\n\n")
		for _, s := range r.kinds {
			w("- **%s**: %s, started with `-addr 127.0.0.1:0 -quiet -lifetime 1h %s`.\n", s.Kind().Name, s.Kind().Label, strings.Join(s.Args(), " "))
		}
		for id, runs := range r.fanRun {
			for _, fr := range runs {
				for _, p := range fr.Problems {
					r.errs = append(r.errs, id+": "+p)
				}
			}
		}
		if len(r.errs) > 0 {
			w("\nProblems:\n\n")
			for _, e := range r.errs {
				w("- %s\n", e)
			}
		}
	}
	return b.String()
}

// cell formats the median [min–max] of v (n/a when empty).
func cell(v []float64) string {
	if len(v) == 0 {
		return "n/a"
	}
	s := harness.Summarize(v)
	if len(v) == 1 {
		return num(s.Median)
	}
	return fmt.Sprintf("%s [%s–%s]", num(s.Median), num(s.Min), num(s.Max))
}

// num gives three significant digits.
func num(x float64) string {
	switch a := math.Abs(x); {
	case a >= 1000:
		return commas(int(math.Round(x)))
	case a >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strconv.FormatFloat(x, 'f', 3, 64)
}

func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// mcpgoVersion returns the mark3labs/mcp-go release this program was built
// with.
func mcpgoVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == "github.com/mark3labs/mcp-go" {
				if m.Replace != nil {
					m = m.Replace
				}
				return m.Version
			}
		}
	}
	return "(unknown release)"
}
