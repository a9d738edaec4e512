// Command server is a complete MCP 2026-07-28 server on loopback: the
// official go-sdk (v1.8.0) serves server/discover, tools, prompts and
// resources, and this library serves subscriptions/listen from a hub.Hub,
// in one handler (gosdk.NewHandler) that also republishes every change the
// go-sdk server notifies.
//
//	go run ./examples/server [-addr 127.0.0.1:8080]
//
// The endpoint is http://ADDR/mcp, for clients of 2026-07-28 (listens) and
// of earlier versions (the go-sdk's sessions) alike. The tools
// test_trigger_tool_change and test_trigger_prompt_change change the go-sdk
// server's tool and prompt lists (AddTool/RemoveTools,
// AddPrompt/RemovePrompts; the go-sdk's own notifications reach every
// listen stream that asked for them), and trigger_resource_update
// {"uri": ...} calls gosdk.Handler.ResourceUpdated, which tells every
// listen watching the URI and every older client subscribed to it. Every
// listen opened and closed, and every publication, is logged with log/slog
// on stderr. Operators find the hub's and the handler's counters and the
// goroutine count at http://ADDR/debug/vars (expvar); -metrics serves the
// OpenTelemetry metrics of the listens, the hub and the handler (package
// github.com/mcplisten/listen/otel) in the Prometheus text format at
// http://ADDR/metrics; -pprof adds
// net/http/pprof at /debug/pprof/. -max-streams bounds the listen streams
// served at once (default 20,000); -max-uri-bytes raises the longest
// resource URI a listen may name (default 4,096 bytes; the benchmark's
// stalled-client scenario uses 64 KiB URIs to fill socket buffers). SIGINT
// or SIGTERM drains: every open listen stream gets its completion result.
// -broker nats://HOST:PORT or redis://HOST:PORT joins the other instances
// of the server on that broker (package examples/internal/broker), with
// -broker-key or -broker-key-file for signed messages: a change made
// through any instance then reaches the listens held by every instance.
package main

import (
	"context"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/examples/fixture"
	"github.com/mcplisten/listen/examples/internal/broker"
	"github.com/mcplisten/listen/gosdk"
	"github.com/mcplisten/listen/hub"
	listenotel "github.com/mcplisten/listen/otel"
	"github.com/mcplisten/listen/streamhttp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on (host:port); a non-loopback address needs -allowed-hosts")
	allowedHosts := flag.String("allowed-hosts", "", "comma-separated Host values the server answers to (name, or name:port); required with a non-loopback -addr, against DNS rebinding")
	allowedOrigins := flag.String("allowed-origins", "", "comma-separated browser origins (scheme://host[:port]) allowed to make cross-origin requests")
	lifetime := flag.Duration("lifetime", 0, "drain and exit by itself after this long (0: run until signalled)")
	quiet := flag.Bool("quiet", false, "log warnings only")
	maxStreams := flag.Int("max-streams", 20000, "most listen streams served at once (streamhttp.Options.MaxStreams)")
	maxURI := flag.Int("max-uri-bytes", 0, "longest resource URI a listen may name, in bytes (listen.Options.MaxURIBytes; 0: the library's default, 4,096)")
	profile := flag.Bool("pprof", false, "serve net/http/pprof at /debug/pprof/")
	metrics := flag.Bool("metrics", false, "serve OpenTelemetry metrics in the Prometheus text format at /metrics")
	cluster := broker.Flags(flag.CommandLine)
	flag.Parse()
	hosts, origins := splitList(*allowedHosts), splitList(*allowedOrigins)

	level := slog.LevelInfo
	if *quiet {
		level = slog.LevelWarn
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *lifetime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *lifetime)
		defer cancel()
	}

	if err := checkBind(*addr, hosts); err != nil {
		logger.Error("refusing to start", "err", err)
		os.Exit(2)
	}
	m, metricsHandler, err := newMetrics(*metrics)
	if err != nil {
		logger.Error("metrics setup failed", "err", err)
		os.Exit(1)
	}
	srv, err := newServer(logger, *maxStreams, *maxURI, m, hosts, origins)
	if err != nil {
		logger.Error("setup failed", "err", err)
		os.Exit(1)
	}
	expvar.Publish("listen", expvar.Func(srv.vars))
	leave, err := cluster.Join(srv.hub, logger, m)
	if err != nil {
		logger.Error("joining the other instances failed", "err", err)
		os.Exit(1)
	}
	defer leave()

	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.handler)
	mux.Handle("/debug/vars", expvar.Handler())
	if metricsHandler != nil {
		mux.Handle("/metrics", metricsHandler)
	}
	if *profile {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		logger.Error("listen failed", "err", err)
		os.Exit(1)
	}
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second, // request line and headers; the body is the listen handler's ReadTimeout
		IdleTimeout:       60 * time.Second, // idle keep-alive connections (an open stream is not idle)
		MaxHeaderBytes:    16 << 10,         // MCP headers plus a bearer token
		// No ReadTimeout or WriteTimeout: they would cut listen streams
		// served inside net/http.
	}
	served := make(chan error, 1)
	// Ends when hs.Shutdown (or Close) below closes the listener; both wait
	// for Serve to return.
	go func() { served <- hs.Serve(ln) }()
	fmt.Printf("listening on http://%s/mcp\n", ln.Addr())

	select {
	case <-ctx.Done():
	case err := <-served:
		logger.Error("server stopped", "err", err)
		os.Exit(1)
	}
	// Drain: every open listen gets its completion result, then the HTTP
	// server stops.
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.handler.Shutdown(sctx); err != nil {
		logger.Warn("listen streams did not all end in time", "err", err)
	}
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = hs.Close()
	}
	logger.Info("stopped")
}

// server is the example server's parts.
type server struct {
	hub     *hub.Hub
	handler *gosdk.Handler
}

// newServer builds the go-sdk server (its tools change the go-sdk server
// and call nothing of this library) and the one handler that serves it:
// listens with this library, everything else with the go-sdk. m (nil:
// none) records the hub's, the handler's and the streams' OpenTelemetry
// metrics.
func newServer(logger *slog.Logger, maxStreams, maxURIBytes int, m *listenotel.Metrics, allowedHosts, allowedOrigins []string) (*server, error) {
	// The hub's own hooks log overflows (Warn) and completions (Info); opens,
	// closes and publications are logged below with the request id.
	h, err := hub.New(hub.Options{Hooks: m.HubHooks(hub.SlogHooks(logger))})
	if err != nil {
		return nil, err
	}
	var handler *gosdk.Handler
	sdk := fixture.New(fixture.Options{
		Name:    "mcplisten-example",
		Version: "0.1.0",
		// go-sdk's own info logging would repeat ours; keep its warnings.
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		// One call reaches the listens and the go-sdk's own subscribers.
		ResourceUpdated: func(ctx context.Context, uri string) error { return handler.ResourceUpdated(ctx, uri) },
	})
	httpOpts := streamhttp.Options{
		MaxStreams:     maxStreams,
		AllowedHosts:   allowedHosts,
		AllowedOrigins: allowedOrigins,
		OnOpen: func(sub *listen.Subscription) {
			if !logger.Enabled(context.Background(), slog.LevelInfo) {
				return // -quiet: encoding the filter (up to 128 KiB) for nothing would cost more than the listen
			}
			b, _ := sub.Accepted().MarshalJSON()
			logger.Info("listen opened", "id", sub.ID().Raw(), "accepted", string(b))
		},
		OnClose: func(sub *listen.Subscription, reason error) {
			logger.Info("listen closed", "id", sub.ID().Raw(), "reason", listen.Classify(reason), "detail", reason)
		},
	}
	m.InstrumentHTTP(&httpOpts)
	handler, err = gosdk.NewHandler(sdk, gosdk.HandlerOptions{
		Options: gosdk.Options{
			Hub:    h,
			Listen: listen.Options{MaxURIBytes: maxURIBytes},
			Logger: logger,
			OnRepublish: func(method, uri string, r hub.Report) {
				logger.Info("publish", "method", method, "uri", uri, "matched", r.Matched,
					"delivered", r.Delivered, "buffered", r.Buffered, "dropped", r.Dropped)
			},
		},
		HTTP:       httpOpts,
		WrapSource: m.Source,
	})
	if err != nil {
		return nil, err
	}
	return &server{hub: h, handler: handler}, nil
}

// vars is what /debug/vars shows under "listen".
func (s *server) vars() any {
	return map[string]any{
		"hub":        s.hub.Stats(),
		"http":       s.handler.Listen().Stats(),
		"gosdk":      s.handler.Bridge().Stats(),
		"goroutines": runtime.NumGoroutine(),
	}
}

// checkBind refuses a non-loopback address without an allow-list of host
// names: a server reachable from other machines must not answer requests
// whose Host a DNS rebinding attack chose.
func checkBind(addr string, allowedHosts []string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-addr %q: %w", addr, err)
	}
	if host == "localhost" || len(allowedHosts) > 0 {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("-addr %s is not a loopback address: give -allowed-hosts with the names clients reach the server by (protection against DNS rebinding)", addr)
}

// splitList splits a comma-separated flag value.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
