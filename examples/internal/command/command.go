// Package command holds what the example server commands built on the
// go-sdk adapter share (examples/server; examples/stdio uses the log
// hooks), so that each main.go shows only its own wiring (the servers made
// to be copied, examples/gosdk and examples/mcpgo, stand alone):
//
//	f := command.Flags(flag.CommandLine) // before flag.Parse
//	...
//	logger := f.Logger()
//	if err := command.CheckBind(f.Addr, f.Hosts()); err != nil { ... }
//	ctx, stop := f.Context() // SIGINT, SIGTERM or -lifetime
//	defer stop()
//	m, metrics, err := command.NewMetrics(f.Metrics)
//	... // the hub, the handler, with f.ListenOptions(logger), f.HTTPOptions() and m
//	err = f.Serve(ctx, logger, handler, metrics, handler.Shutdown)
//
// CheckBind, called first, refuses a non-loopback -addr without
// -allowed-hosts. Serve listens on -addr, serves the handler at /mcp,
// the readiness at /readyz, expvar at /debug/vars, the metrics at /metrics
// and, with -pprof, net/http/pprof, and prints "listening on
// http://ADDR/mcp" on standard output once it listens (the tests and .ci/run
// wait for that line). When ctx ends it drains: /readyz answers 503, the
// handler's Shutdown refuses new listens (503 with Retry-After) and sends
// every open listen its completion result, spread over -drain
// (listen.Options.DrainWindow, set by ListenOptions) so that the clients
// re-listen on the other instances at a steady rate, within DrainDeadline;
// then the HTTP server's Shutdown.
//
// Serve runs the HTTP server on one goroutine of its own, which has ended
// when Serve returns.
package command

import (
	"context"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/adapter"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/streamhttp"
)

// DrainTimeout is the margin of the drain beyond -drain (see
// DrainDeadline).
const DrainTimeout = 5 * time.Second

// HTTPFlags are the flags of an example server over HTTP.
type HTTPFlags struct {
	// Addr is -addr, the address to listen on (host:port).
	Addr string
	// AllowedHosts and AllowedOrigins are -allowed-hosts and
	// -allowed-origins, comma-separated (see Hosts and Origins).
	AllowedHosts, AllowedOrigins string
	// Lifetime is -lifetime: drain and exit by itself after this long.
	Lifetime time.Duration
	// Quiet is -quiet: log warnings only.
	Quiet bool
	// MaxStreams is -max-streams (listen.Options.MaxStreams);
	// MaxStreamsPerClient is -max-streams-per-client
	// (listen.Options.MaxStreamsPerKey, by client address).
	MaxStreams, MaxStreamsPerClient int
	// MaxURIBytes is -max-uri-bytes (listen.Options.MaxURIBytes).
	MaxURIBytes int
	// Pprof is -pprof: serve net/http/pprof at /debug/pprof/.
	Pprof bool
	// Metrics is -metrics: serve the OpenTelemetry metrics at /metrics.
	Metrics bool
	// SessionIdle is -session-idle (adapter.SessionOptions.IdleTimeout:
	// the idle time after which an older client's session ends).
	SessionIdle time.Duration
	// Drain is -drain (listen.Options.DrainWindow): on SIGTERM, the open
	// streams' completions are spread over this long.
	Drain time.Duration
}

// Flags registers the HTTP flags on fs and returns the HTTPFlags they fill
// in once fs is parsed.
func Flags(fs *flag.FlagSet) *HTTPFlags {
	f := &HTTPFlags{}
	fs.StringVar(&f.Addr, "addr", "127.0.0.1:8080", "address to listen on (host:port); a non-loopback address needs -allowed-hosts")
	fs.StringVar(&f.AllowedHosts, "allowed-hosts", "", "comma-separated Host values the server answers to (name, or name:port); required with a non-loopback -addr, against DNS rebinding")
	fs.StringVar(&f.AllowedOrigins, "allowed-origins", "", "comma-separated browser origins (scheme://host[:port]) allowed to make cross-origin requests")
	fs.DurationVar(&f.Lifetime, "lifetime", 0, "drain and exit by itself after this long (0: run until signalled)")
	fs.BoolVar(&f.Quiet, "quiet", false, "log warnings only")
	fs.IntVar(&f.MaxStreams, "max-streams", 20000, "most listen streams served at once (listen.Options.MaxStreams)")
	fs.IntVar(&f.MaxStreamsPerClient, "max-streams-per-client", 0, "most listen streams served at once for one client address (listen.Options.MaxStreamsPerKey; 0: a quarter of -max-streams; -1: no bound)")
	fs.IntVar(&f.MaxURIBytes, "max-uri-bytes", 0, "longest resource URI a listen may name, in bytes (listen.Options.MaxURIBytes; 0: the library's default, 4,096)")
	fs.BoolVar(&f.Pprof, "pprof", false, "serve net/http/pprof at /debug/pprof/")
	fs.BoolVar(&f.Metrics, "metrics", false, "serve OpenTelemetry metrics in the Prometheus text format at /metrics")
	fs.DurationVar(&f.SessionIdle, "session-idle", 0, "end an older client's session after this long idle (adapter.SessionOptions.IdleTimeout; 0: the library's default, 30m)")
	fs.DurationVar(&f.Drain, "drain", 0, "on SIGINT or SIGTERM, spread the open streams' completions over this long, so that their clients re-listen elsewhere at a steady rate (listen.Options.DrainWindow; 0: all at once)")
	return f
}

// Hosts returns -allowed-hosts as a list.
func (f *HTTPFlags) Hosts() []string { return SplitList(f.AllowedHosts) }

// Origins returns -allowed-origins as a list.
func (f *HTTPFlags) Origins() []string { return SplitList(f.AllowedOrigins) }

// Logger returns the server's logger: text on standard error, at Info, or
// at Warn with -quiet.
func (f *HTTPFlags) Logger() *slog.Logger {
	level := slog.LevelInfo
	if f.Quiet {
		level = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// Context returns the server's context: it ends on SIGINT or SIGTERM, or
// after -lifetime. stop releases it.
func (f *HTTPFlags) Context() (ctx context.Context, stop context.CancelFunc) {
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if f.Lifetime <= 0 {
		return ctx, stopSignals
	}
	ctx, cancel := context.WithTimeout(ctx, f.Lifetime)
	return ctx, func() { cancel(); stopSignals() }
}

// ListenOptions returns the listen policy's options the flags set
// (MaxStreams, MaxURIBytes, DrainWindow), with every listen opened and
// closed logged at Info.
func (f *HTTPFlags) ListenOptions(logger *slog.Logger) listen.Options {
	return listen.Options{
		MaxStreams:       f.MaxStreams,
		MaxStreamsPerKey: f.MaxStreamsPerClient,
		MaxURIBytes:      f.MaxURIBytes,
		DrainWindow:      f.Drain,
		OnOpen:           LogOpen(logger),
		OnClose:          LogClose(logger),
	}
}

// HTTPOptions returns the listen handler's options the flags set
// (AllowedHosts, AllowedOrigins).
func (f *HTTPFlags) HTTPOptions() streamhttp.Options {
	return streamhttp.Options{
		AllowedHosts:   f.Hosts(),
		AllowedOrigins: f.Origins(),
	}
}

// DrainDeadline is how long Serve gives the drain: -drain plus
// DrainTimeout, or plus an eighth of -drain if that is more (the library
// shortens the window to 90% of the time its Shutdown is given, keeping
// the rest for the last writes).
func (f *HTTPFlags) DrainDeadline() time.Duration {
	return f.Drain + max(DrainTimeout, f.Drain/8)
}

// Sessions returns the options of the older clients' sessions the flags
// set (IdleTimeout).
func (f *HTTPFlags) Sessions() adapter.SessionOptions {
	return adapter.SessionOptions{IdleTimeout: f.SessionIdle}
}

// Serve serves mcp at /mcp until ctx ends, then drains (see the package
// documentation). It returns an error if -addr cannot be listened on, or if
// the HTTP server stops by itself; a drain that did not end in time is
// logged.
func (f *HTTPFlags) Serve(ctx context.Context, logger *slog.Logger, mcp, metrics http.Handler, drain func(context.Context) error) error {
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp)
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ctx.Err() != nil { // draining: route new clients elsewhere
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	mux.Handle("/debug/vars", expvar.Handler())
	if metrics != nil {
		mux.Handle("/metrics", metrics)
	}
	if f.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}

	ln, err := net.Listen("tcp", f.Addr)
	if err != nil {
		return err
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
		return fmt.Errorf("the HTTP server stopped: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), f.DrainDeadline())
	defer cancel()
	if err := drain(sctx); err != nil {
		logger.Warn("listen streams did not all end in time", "err", err)
	}
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = hs.Close()
	}
	<-served
	return nil
}

// CheckBind refuses a non-loopback address without an allow-list of host
// names: a server reachable from other machines must not answer requests
// whose Host a DNS rebinding attack chose.
func CheckBind(addr string, allowedHosts []string) error {
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

// SplitList splits a comma-separated flag value, leaving out empty items.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// LogOpen returns an OnOpen hook that logs each listen opened, with what
// it was acknowledged, at Info.
func LogOpen(logger *slog.Logger) func(*listen.Subscription) {
	return func(sub *listen.Subscription) {
		if !logger.Enabled(context.Background(), slog.LevelInfo) {
			return // encoding the filter (up to 128 KiB) for nothing would cost more than the listen
		}
		b, _ := sub.Acknowledgement() // the accepted filter, under params.notifications
		logger.Info("listen opened", "id", sub.ID().Raw(), "acknowledgement", string(b))
	}
}

// LogClose returns an OnClose hook that logs each listen closed, with its
// close reason, at Info.
func LogClose(logger *slog.Logger) func(*listen.Subscription, error) {
	return func(sub *listen.Subscription, reason error) {
		logger.Info("listen closed", "id", sub.ID().Raw(), "reason", listen.Classify(reason), "detail", reason)
	}
}

// LogPublish returns an adapter's OnRepublish hook that logs each change
// published into the hub, with the hub's report, at Info.
func LogPublish(logger *slog.Logger) func(method, uri string, r hub.Report) {
	return func(method, uri string, r hub.Report) {
		logger.Info("publish", "method", method, "uri", uri, "matched", r.Matched,
			"delivered", r.Delivered, "buffered", r.Buffered, "dropped", r.Dropped)
	}
}
