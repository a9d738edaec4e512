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
// longest resource URI a listen may name; -session-idle sets the idle
// time after which an older client's session ends (default 30m). SIGINT or
// SIGTERM drains: every open listen stream gets its completion result.
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
	"expvar"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/examples/internal/broker"
	"github.com/mcplisten/listen/examples/internal/command"
	"github.com/mcplisten/listen/examples/mcpgo/fixture"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/mcpgo"
	listenotel "github.com/mcplisten/listen/otel"
	"github.com/mcplisten/listen/stdio"
)

func main() {
	flags := command.Flags(flag.CommandLine)
	overStdio := flag.Bool("stdio", false, "serve over standard input and output instead of HTTP")
	cluster := broker.Flags(flag.CommandLine)
	flag.Parse()
	logger := flags.Logger()
	ctx, stop := flags.Context()
	defer stop()

	m, metricsHandler, err := command.NewMetrics(flags.Metrics && !*overStdio)
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
		Hub:         h,
		Listen:      listen.Options{MaxURIBytes: flags.MaxURIBytes},
		Logger:      logger,
		OnRepublish: command.LogPublish(logger),
	}
	if *overStdio {
		code := serveStdio(ctx, logger, opts)
		_ = leave()
		os.Exit(code)
	}

	if err := command.CheckBind(flags.Addr, flags.Hosts()); err != nil {
		logger.Error("refusing to start", "err", err)
		os.Exit(2)
	}
	handler, err := newHandler(logger, opts, flags, m)
	if err != nil {
		logger.Error("setup failed", "err", err)
		os.Exit(1)
	}
	expvar.Publish("listen", expvar.Func(func() any {
		return map[string]any{
			"hub":        h.Stats(),
			"http":       handler.Listen().Stats(),
			"sessions":   handler.Sessions().Stats(),
			"mcpgo":      handler.Bridge().Stats(),
			"goroutines": runtime.NumGoroutine(),
		}
	}))

	// Until ctx ends; then the drain: every open listen gets what is queued
	// for it and its completion result, mcp-go's sessions end, then the
	// HTTP server stops.
	if err := flags.Serve(ctx, logger, requireSampling(handler, handler.Listen().CheckOrigin), metricsHandler, handler.Shutdown); err != nil {
		logger.Error("server stopped", "err", err)
		os.Exit(1)
	}
	logger.Info("stopped")
}

// newHandler builds the mcp-go server (its tools change the mcp-go server
// and call nothing of this library) and the one handler that serves it:
// listens with this library, everything else with mcp-go, with the listen
// handler's options the flags set. m (nil: none) records the hub's, the
// handler's and the streams' OpenTelemetry metrics.
func newHandler(logger *slog.Logger, opts mcpgo.Options, flags *command.HTTPFlags, m *listenotel.Metrics) (*mcpgo.Handler, error) {
	httpOpts := flags.HTTPOptions(logger)
	m.InstrumentHTTP(&httpOpts)
	return mcpgo.NewHandler(fixture.New("mcplisten-example-mcpgo", "0.1.0"), mcpgo.HandlerOptions{
		Options: opts,
		HTTP:    httpOpts,
		// mcp-go logs through this logger too.
		SDK:        []mcpserver.StreamableHTTPOption{mcpserver.WithStreamableHTTPLogger(logger)},
		Sessions:   flags.Sessions(),
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
		Stdio:   stdio.Options{Logger: logger, OnOpen: command.LogOpen(logger), OnClose: command.LogClose(logger)},
		SDK:     []mcpserver.StdioOption{mcpserver.WithErrorLogger(slog.NewLogLogger(logger.Handler(), slog.LevelWarn))},
	})
	if err != nil {
		logger.Error("setup failed", "err", err)
		return 1
	}
	err = x.Run(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), command.DrainTimeout)
	defer cancel()
	_ = x.Shutdown(sctx)
	if err != nil && ctx.Err() == nil {
		logger.Error("stdio server stopped", "err", err)
		return 1
	}
	logger.Info("stopped")
	return 0
}
