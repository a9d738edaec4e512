// Command mcpgo is examples/server built on mark3labs/mcp-go (v1.2.1)
// instead of the go-sdk: mcp-go serves server/discover, tools, prompts and
// resources (and its own sessions for clients of earlier protocol
// versions), and this library serves subscriptions/listen from a hub.Hub,
// in one handler (mcpgo.NewHandler) that also republishes every broadcast
// of the mcp-go server.
//
//	go run ./examples/mcpgo [-addr 127.0.0.1:8080]
//	go run ./examples/mcpgo -stdio
//
// The endpoint is http://ADDR/mcp. It has the same flags and tools as
// examples/server: test_trigger_tool_change and test_trigger_prompt_change
// change the mcp-go server's tool and prompt lists (AddTool/DeleteTools,
// AddPrompt/DeletePrompts), and trigger_resource_update {"uri": ...}
// broadcasts notifications/resources/updated
// (SendNotificationToAllClients); none of them calls this library: mcp-go's
// own broadcasts reach every listen stream that asked for them. Every
// listen opened and closed, and every publication, is logged with log/slog
// on stderr. /debug/vars (expvar) shows the hub's, the handler's and the
// bridge's counters and the goroutine count; -metrics serves the
// OpenTelemetry metrics in the Prometheus text format at /metrics; -pprof
// adds net/http/pprof at /debug/pprof/. -max-streams bounds the listen
// streams served at once (default 20,000); -max-uri-bytes raises the
// longest resource URI a listen may name. SIGINT or SIGTERM drains: every
// open listen stream gets its completion result.
//
// -broker nats://HOST:PORT or redis://HOST:PORT joins the other instances
// of the server on that broker (package examples/internal/broker), with
// -broker-key or -broker-key-file for signed messages, as examples/server
// does.
//
// With -stdio it serves the same server over standard input and output
// (mcpgo.NewStdio) instead, logging on stderr; the HTTP flags are then
// unused. It ends at the end of its input, or drains on SIGINT or SIGTERM.
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

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/examples/internal/broker"
	"github.com/mcplisten/listen/examples/mcpgo/fixture"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/mcpgo"
	listenotel "github.com/mcplisten/listen/otel"
	"github.com/mcplisten/listen/stdio"
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
	overStdio := flag.Bool("stdio", false, "serve over standard input and output instead of HTTP")
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

	m, metricsHandler, err := newMetrics(*metrics && !*overStdio)
	if err != nil {
		logger.Error("metrics setup failed", "err", err)
		os.Exit(1)
	}
	// The hub every listen is served from, joined to the other instances
	// with -broker.
	h, err := hub.New(hub.Options{Hooks: m.HubHooks(hub.SlogHooks(logger))})
	if err != nil {
		logger.Error("setup failed", "err", err)
		os.Exit(1)
	}
	leave, err := cluster.Join(h, logger, m)
	if err != nil {
		logger.Error("joining the other instances failed", "err", err)
		os.Exit(1)
	}
	defer leave()
	opts := mcpgo.Options{
		Hub:    h,
		Listen: listen.Options{MaxURIBytes: *maxURI},
		Logger: logger,
		OnRepublish: func(method, uri string, r hub.Report) {
			logger.Info("publish", "method", method, "uri", uri, "matched", r.Matched,
				"delivered", r.Delivered, "buffered", r.Buffered, "dropped", r.Dropped)
		},
	}
	if *overStdio {
		code := serveStdio(ctx, logger, opts)
		_ = leave()
		os.Exit(code)
	}

	if err := checkBind(*addr, hosts); err != nil {
		logger.Error("refusing to start", "err", err)
		os.Exit(2)
	}
	handler, err := newHandler(logger, opts, *maxStreams, m, hosts, origins)
	if err != nil {
		logger.Error("setup failed", "err", err)
		os.Exit(1)
	}
	expvar.Publish("listen", expvar.Func(func() any {
		return map[string]any{
			"hub":        h.Stats(),
			"http":       handler.Listen().Stats(),
			"mcpgo":      handler.Bridge().Stats(),
			"goroutines": runtime.NumGoroutine(),
		}
	}))

	mux := http.NewServeMux()
	mux.Handle("/mcp", requireSampling(handler, handler.Listen().CheckOrigin))
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
		ReadHeaderTimeout: 10 * time.Second, // request line and headers; the body is the handler's ReadTimeout
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
	// Drain: every open listen gets what is queued for it and its
	// completion result, mcp-go's sessions end, then the HTTP server stops.
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := handler.Shutdown(sctx); err != nil {
		logger.Warn("listen streams did not all end in time", "err", err)
	}
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = hs.Close()
	}
	logger.Info("stopped")
}

// newHandler builds the mcp-go server (its tools change the mcp-go server
// and call nothing of this library) and the one handler that serves it:
// listens with this library, everything else with mcp-go. m (nil: none)
// records the hub's, the handler's and the streams' OpenTelemetry metrics.
func newHandler(logger *slog.Logger, opts mcpgo.Options, maxStreams int, m *listenotel.Metrics, allowedHosts, allowedOrigins []string) (*mcpgo.Handler, error) {
	httpOpts := streamhttp.Options{
		MaxStreams:     maxStreams,
		AllowedHosts:   allowedHosts,
		AllowedOrigins: allowedOrigins,
		OnOpen:         logOpen(logger),
		OnClose:        logClose(logger),
	}
	m.InstrumentHTTP(&httpOpts)
	return mcpgo.NewHandler(fixture.New("mcplisten-example-mcpgo", "0.1.0"), mcpgo.HandlerOptions{
		Options: opts,
		HTTP:    httpOpts,
		// mcp-go logs through this logger too.
		SDK:        []mcpserver.StreamableHTTPOption{mcpserver.WithStreamableHTTPLogger(logger)},
		WrapSource: m.Source,
	})
}

// serveStdio serves the mcp-go server over standard input and output until
// the input ends or ctx does, and returns the exit status.
func serveStdio(ctx context.Context, logger *slog.Logger, opts mcpgo.Options) int {
	// A client may close its ends of our pipes (standard error included)
	// before we are done: a write then fails instead of killing the process.
	signal.Ignore(syscall.SIGPIPE)
	x, err := mcpgo.NewStdio(fixture.New("mcplisten-example-mcpgo", "0.1.0"), mcpgo.StdioOptions{
		Options: opts,
		Stdio:   stdio.Options{Logger: logger, OnOpen: logOpen(logger), OnClose: logClose(logger)},
		SDK:     []mcpserver.StdioOption{mcpserver.WithErrorLogger(slog.NewLogLogger(logger.Handler(), slog.LevelWarn))},
	})
	if err != nil {
		logger.Error("setup failed", "err", err)
		return 1
	}
	err = x.Run(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = x.Shutdown(sctx)
	if err != nil && ctx.Err() == nil {
		logger.Error("stdio server stopped", "err", err)
		return 1
	}
	logger.Info("stopped")
	return 0
}

func logOpen(logger *slog.Logger) func(*listen.Subscription) {
	return func(sub *listen.Subscription) {
		b, _ := sub.Accepted().MarshalJSON()
		logger.Info("listen opened", "id", sub.ID().Raw(), "accepted", string(b))
	}
}

func logClose(logger *slog.Logger) func(*listen.Subscription, error) {
	return func(sub *listen.Subscription, reason error) {
		logger.Info("listen closed", "id", sub.ID().Raw(), "reason", listen.Classify(reason), "detail", reason)
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
