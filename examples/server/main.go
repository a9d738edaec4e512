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
// stalled-client scenario uses 64 KiB URIs to fill socket buffers);
// -session-idle sets the idle time after which an older client's session
// ends (default 30m; /debug/vars shows the sessions' counters);
// -write-timeout bounds each write to a stream (default 10 s: a client that
// stops reading is cut then); -max-buffer and -overflow set the hub's
// per-listener queue and what a full one does (drop_oldest, drop_newest, or
// end_listener: the stream ends early, "fell_behind"). SIGINT
// or SIGTERM drains: new listens get 503 with Retry-After, /readyz answers
// 503, and every open listen stream gets its completion result, spread
// over -drain (listen.Options.DrainWindow; default 0, all at once) so that
// the clients re-listen on the other instances at a steady rate.
// -broker nats://HOST:PORT or redis://HOST:PORT joins the other instances
// of the server on that broker (package examples/internal/broker), with
// -broker-key or -broker-key-file for signed messages: a change made
// through any instance then reaches the listens held by every instance.
package main

import (
	"context"
	"expvar"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/mcplisten/listen/examples/fixture"
	"github.com/mcplisten/listen/examples/internal/broker"
	"github.com/mcplisten/listen/examples/internal/command"
	"github.com/mcplisten/listen/gosdk"
	"github.com/mcplisten/listen/hub"
	listenotel "github.com/mcplisten/listen/otel"
)

func main() {
	flags := command.Flags(flag.CommandLine)
	cluster := broker.Flags(flag.CommandLine)
	var tune tuning
	flag.DurationVar(&tune.WriteTimeout, "write-timeout", 0, "bound of each write to a listen stream; a client that stops reading is cut when it expires (streamhttp.Options.WriteTimeout; 0: the library's default, 10s)")
	flag.IntVar(&tune.MaxBuffer, "max-buffer", 0, "events queued per listen stream before -overflow applies (hub.Options.MaxBuffer; 0: the library's default, 100)")
	flag.TextVar(&tune.Overflow, "overflow", overflowFlag(hub.DropOldest), "what a full listen queue does: drop_oldest, drop_newest or end_listener (hub.Options.Overflow)")
	flag.Parse()
	logger := flags.Logger()
	if err := command.CheckBind(flags.Addr, flags.Hosts()); err != nil {
		logger.Error("refusing to start", "err", err)
		os.Exit(2)
	}
	ctx, stop := flags.Context()
	defer stop()

	m, metricsHandler, err := command.NewMetrics(flags.Metrics)
	if err != nil {
		logger.Error("metrics setup failed", "err", err)
		os.Exit(1)
	}
	srv, err := newServer(logger, flags, tune, m)
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

	// Until ctx ends; then the drain: every open listen gets its completion
	// result, then the HTTP server stops.
	if err := flags.Serve(ctx, logger, srv.handler, metricsHandler, srv.handler.Shutdown); err != nil {
		logger.Error("server stopped", "err", err)
		os.Exit(1)
	}
	logger.Info("stopped")
}

// server is the example server's parts.
type server struct {
	hub     *hub.Hub
	handler *gosdk.Handler
}

// tuning is what this server's own flags set (beside command.HTTPFlags):
// the zero value is the library's defaults.
type tuning struct {
	// WriteTimeout is -write-timeout (streamhttp.Options.WriteTimeout).
	WriteTimeout time.Duration
	// MaxBuffer is -max-buffer (hub.Options.MaxBuffer).
	MaxBuffer int
	// Overflow is -overflow (hub.Options.Overflow).
	Overflow overflowFlag
}

// overflowFlag is a hub.Overflow read from its name.
type overflowFlag hub.Overflow

func (o overflowFlag) MarshalText() ([]byte, error) { return []byte(hub.Overflow(o).String()), nil }

func (o *overflowFlag) UnmarshalText(b []byte) error {
	for _, p := range []hub.Overflow{hub.DropOldest, hub.DropNewest, hub.EndListener} {
		if p.String() == string(b) {
			*o = overflowFlag(p)
			return nil
		}
	}
	return fmt.Errorf("%q is not drop_oldest, drop_newest or end_listener", b)
}

// newServer builds the go-sdk server (its tools change the go-sdk server
// and call nothing of this library but gosdk.Handler.ResourceUpdated) and
// the one handler that serves it: listens with this library, everything
// else with the go-sdk, with the listen options the flags set. m (nil:
// none) records the hub's, the handler's and the streams' OpenTelemetry
// metrics.
func newServer(logger *slog.Logger, flags *command.HTTPFlags, tune tuning, m *listenotel.Metrics) (*server, error) {
	// The hub's own logger logs overflows (Warn) and completions (Info);
	// opens, closes and publications are logged below with the request id.
	hopts := hub.Options{
		MaxBuffer: tune.MaxBuffer,
		Overflow:  hub.Overflow(tune.Overflow),
		Logger:    logger,
	}
	m.InstrumentHub(&hopts)
	h, err := hub.New(hopts)
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
	httpOpts := flags.HTTPOptions()
	httpOpts.WriteTimeout = tune.WriteTimeout
	m.InstrumentHTTP(&httpOpts)
	listenOpts := flags.ListenOptions(logger) // -max-streams, -max-uri-bytes, -drain, the log hooks
	m.Instrument(&listenOpts)                 // the streams, refusals and capacity, once for the Server
	handler, err = gosdk.NewHandler(sdk, gosdk.HandlerOptions{
		Options: gosdk.Options{
			Hub:         h,
			Listen:      listenOpts,
			Logger:      logger,
			OnRepublish: command.LogPublish(logger),
		},
		HTTP:       httpOpts,
		Sessions:   flags.Sessions(),
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
		"http":       s.handler.Server().Stats(),
		"sessions":   s.handler.SessionStats(),
		"gosdk":      s.handler.Bridge().Stats(),
		"goroutines": runtime.NumGoroutine(),
	}
}
