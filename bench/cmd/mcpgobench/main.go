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
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
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

	rep := &report{Command: "go run ./bench/cmd/mcpgobench " + strings.Join(args, " "), Started: time.Now(), Runs: *runs, N: *n, Changes: *changes, Triggers: *triggers}
	rep.Load = append(rep.Load, "start: "+harness.LoadAverage())
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

	kinds := []harness.Kind{mcpgoOurs, mcpgoPlain}
	if *withSDK {
		kinds = append(kinds, harness.Ours, harness.GoSDK)
	}
	if _, err := harness.RaiseNoFile(uint64(*n + 1024)); err != nil {
		return err
	}
	cfg := harness.Default()
	cfg.RepoRoot, cfg.Ns, cfg.Runs, cfg.Triggers, cfg.Log = root, []int{*n}, *runs, *triggers, logf
	if rep.fan, err = harness.Fanouts(ctx, cfg, kinds); err != nil {
		return err
	}
	rep.Load = append(rep.Load, "after the fan-out runs: "+harness.LoadAverage())
	rep.Finished = time.Now()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "mcpgo.md"), []byte(rep.markdown()), 0o644)
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
	resp, err := harness.Post(ctx, http.DefaultClient, url, 1, "subscriptions/listen", "", map[string]any{"notifications": filter})
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
	Load              []string
	Runs, N           int
	Changes, Triggers int
	// delays: kind name → per run: the delays in µs.
	delayOrder []string
	delays     map[string][][]float64
	fan        []*harness.ServerResult
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
		w("| %s |", k)
		for _, q := range []float64{0.1, 0.5, 0.9, 1} {
			var v []float64
			for _, run := range r.delays[k] {
				v = append(v, harness.Quantile(run, q))
			}
			w(" %s |", harness.Summarize(v))
		}
		w("\n")
	}
	w("| plain mcp-go: SendNotificationToAllClients(resources/updated) | never delivered | | | |\n\n")
	w("## Fan-out to %s streams\n\n", harness.Commas(r.N))
	w("Fresh server processes on loopback HTTP/1.1, taking turns in rotated order, clients in this process (bench/internal/harness, as listenbench). A run: %s listens for toolsListChanged, then %d measured `test_trigger_tool_change` calls after 1 warm-up; its latencies are the median over its triggers, from just before the call to each stream's notification. The ratios are paired by run.\n\n", harness.Commas(r.N), r.Triggers)
	pairs := [][2]int{{0, 1}}
	if len(r.fan) == 4 {
		pairs = append(pairs, [2]int{2, 3})
	}
	w("%s\nServers:\n\n", harness.Table(r.fan, 0, pairs...))
	for _, s := range r.fan {
		w("- **%s**: %s, started with `-addr 127.0.0.1:0 -quiet -lifetime 1h %s`.\n", s.Kind.Name, s.Kind.Label, strings.Join(s.Args, " "))
	}
	return b.String()
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
