// Command mcpgo is a complete mark3labs/mcp-go MCP server with
// subscriptions/listen, small enough to copy: an mcp-go server (server.go)
// and the one handler (mcpgo.NewHandler) that serves clients of 2026-07-28
// (listens, served by this library) and of earlier versions (mcp-go's own
// sessions) on one endpoint, or the same server over standard input and
// output (mcpgo.NewStdio) with -stdio.
//
//	go run ./examples/mcpgo [-addr 127.0.0.1:8080] [-token SECRET]
//	go run ./examples/mcpgo -stdio
//
// The endpoint is http://ADDR/mcp; the command prints "listening on
// http://ADDR/mcp" once it listens. test_trigger_tool_change and
// test_trigger_prompt_change change the mcp-go server's tool and prompt
// lists (AddTool/DeleteTools, AddPrompt/DeletePrompts), and
// trigger_resource_update {"uri": ...} broadcasts
// notifications/resources/updated (SendNotificationToAllClients); none of
// them calls this library: mcp-go's own broadcasts reach every listen that
// asked for them. The other tools are the diagnostic tools of the official
// conformance suite's server-stateless scenario, which passes against it.
//
// With -token, every HTTP request must carry "Authorization: Bearer TOKEN"
// (401 otherwise), and its principal reaches both sides: mcp-go's handlers
// through server.WithHTTPContextFunc (the whoami tool, added with -token,
// answers with it), the listens through streamhttp.Options.Authenticate
// (listen.Request.Auth, which CanRead gets), as the mcpgo package
// documentation's Auth recipe says.
//
// -quiet logs warnings only (on standard error); -lifetime drains and exits
// by itself after that long; -max-streams bounds the listen streams served
// at once; -pprof serves net/http/pprof at /debug/pprof/. SIGINT or SIGTERM
// drains: /readyz answers 503, new listens get 503 with Retry-After, every
// open listen gets what is queued for it and its completion result, spread
// over -drain (listen.Options.DrainWindow; 0, the default: all at once) so
// that its client re-listens on another instance at a steady rate; mcp-go's
// sessions end, then the HTTP server stops. With -stdio it ends at the end
// of its input, or drains on SIGINT or SIGTERM.
//
// It listens on a loopback address: elsewhere, list the names clients reach
// it by in streamhttp.Options.AllowedHosts (requests naming another Host
// are refused, against DNS rebinding).
package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/mcpgo"
	"github.com/mcplisten/listen/streamhttp"
)

// drainTimeout bounds the drain when the server stops, beyond -drain.
const drainTimeout = 5 * time.Second

// config is what the flags say.
type config struct {
	addr                     string
	token                    string
	maxStreams, maxPerClient int
	pprof                    bool
	drain                    time.Duration
}

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "address to listen on (a loopback one: see streamhttp.Options.AllowedHosts otherwise)")
	flag.StringVar(&cfg.token, "token", "", "bearer token every HTTP request must carry (none: no authentication)")
	flag.IntVar(&cfg.maxStreams, "max-streams", 20000, "most listen streams served at once (listen.Options.MaxStreams)")
	flag.IntVar(&cfg.maxPerClient, "max-streams-per-client", 0, "most listen streams served at once for one client address (listen.Options.MaxStreamsPerKey; 0: a quarter of -max-streams; -1: no bound)")
	flag.BoolVar(&cfg.pprof, "pprof", false, "serve net/http/pprof at /debug/pprof/")
	flag.DurationVar(&cfg.drain, "drain", 0, "on SIGINT or SIGTERM, spread the open listens' completions over this long (listen.Options.DrainWindow; 0: all at once)")
	overStdio := flag.Bool("stdio", false, "serve over standard input and output instead of HTTP")
	quiet := flag.Bool("quiet", false, "log warnings only")
	lifetime := flag.Duration("lifetime", 0, "drain and exit by itself after this long (0: run until signalled)")
	flag.Parse()

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

	var err error
	if *overStdio {
		err = serveStdio(ctx, logger)
	} else {
		err = serveHTTP(ctx, logger, cfg)
	}
	if err != nil {
		logger.Error("server stopped", "err", err)
		os.Exit(1)
	}
	logger.Info("stopped")
}

// serveHTTP serves the endpoint on cfg.addr until ctx ends, then drains.
func serveHTTP(ctx context.Context, logger *slog.Logger, cfg config) error {
	h, err := newHandler(logger, cfg)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	// Outermost first: the token check refuses every request without the
	// token (listens included); requireSampling answers one diagnostic
	// tool call of the conformance suite; h serves the rest.
	mux.Handle("/mcp", requireToken(cfg.token, requireSampling(h, h.Listen().CheckOrigin)))
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ctx.Err() != nil { // draining: route new clients elsewhere
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	if cfg.pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		_ = h.Shutdown(ctx)
		return err
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second, // the body is bounded by the handler
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10, // MCP headers plus a bearer token
		// No ReadTimeout or WriteTimeout: they would cut long-lived streams.
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }() // ends on srv.Shutdown, which waits for it
	fmt.Printf("listening on http://%s/mcp\n", ln.Addr())

	var stopped error
	select {
	case <-ctx.Done():
	case err := <-served:
		stopped = fmt.Errorf("the HTTP server stopped: %w", err)
	}
	// The window, plus a margin: the library keeps 10% of the time it is
	// given for the last writes, and would shorten the window otherwise.
	sctx, cancel := context.WithTimeout(context.Background(), cfg.drain+max(drainTimeout, cfg.drain/8))
	defer cancel()
	// Every open listen gets what is queued for it and its completion
	// result, spread over -drain; mcp-go's sessions end.
	if err := h.Shutdown(sctx); err != nil {
		logger.Warn("listen streams did not all end in time", "err", err)
	}
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = srv.Close()
	}
	if stopped == nil {
		<-served
	}
	return stopped
}

// newHandler builds the mcp-go server and the one handler that serves it:
// listens with this library, everything else with mcp-go.
func newHandler(logger *slog.Logger, cfg config) (*mcpgo.Handler, error) {
	var who func(*http.Request) (any, error) // nil without -token
	if cfg.token != "" {
		who = func(r *http.Request) (any, error) {
			if !validToken(r, cfg.token) {
				return nil, errors.New("no valid bearer token")
			}
			return principal{name: "token holder"}, nil
		}
	}
	opts := mcpgo.HandlerOptions{
		Options: mcpgo.Options{
			Logger: logger,
			Listen: listen.Options{
				// Resource updates reach a listen only if its principal may
				// read the resource (here: any authenticated one).
				CanRead: func(_ context.Context, req *listen.Request, _ string) bool {
					return who == nil || req.Auth != nil
				},
				DrainWindow:      cfg.drain,
				MaxStreams:       cfg.maxStreams,
				MaxStreamsPerKey: cfg.maxPerClient,
				OnOpen: func(sub *listen.Subscription) {
					logger.Info("listen opened", "id", sub.ID().Raw())
				},
				OnClose: func(sub *listen.Subscription, reason error) {
					logger.Info("listen closed", "id", sub.ID().Raw(), "reason", listen.Classify(reason))
				},
			},
			OnRepublish: func(method, uri string, r hub.Report) {
				logger.Info("published", "method", method, "uri", uri, "delivered", r.Delivered, "dropped", r.Dropped)
			},
		},
		HTTP: streamhttp.Options{
			// Listens: their principal (listen.Request.Auth), or 401.
			Authenticate: who,
		},
		// mcp-go logs through this logger too.
		SDK: []server.StreamableHTTPOption{server.WithStreamableHTTPLogger(logger)},
	}
	if who != nil {
		// Everything else: mcp-go's handlers find the principal in their
		// context (principalFrom). mcp-go never runs this for a listen.
		opts.SDK = append(opts.SDK, server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			if p, err := who(r); err == nil {
				ctx = context.WithValue(ctx, principalKey{}, p)
			}
			return ctx
		}))
	}
	s := newServer("mcplisten-example-mcpgo", "0.1.0")
	if who != nil {
		s.AddTool(mcp.NewTool("whoami", mcp.WithDescription("Says who the request was authenticated as")),
			func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				p, ok := principalFrom(ctx)
				if !ok {
					return mcp.NewToolResultError("no principal"), nil
				}
				return mcp.NewToolResultText(p.name), nil
			})
	}
	return mcpgo.NewHandler(s, opts)
}

// principal is who a request was authenticated as.
type principal struct{ name string }

// principalKey is the context key of the principal of a request mcp-go
// serves.
type principalKey struct{}

// principalFrom returns the principal of the request a tool handler of
// the mcp-go server serves (ok false without -token).
func principalFrom(ctx context.Context) (p principal, ok bool) {
	p, ok = ctx.Value(principalKey{}).(principal)
	return p, ok
}

// validToken reports whether r carries "Authorization: Bearer token".
func validToken(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// requireToken refuses every request without the bearer token (none with
// an empty token) with 401, before anything reads its body.
func requireToken(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !validToken(r, token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
			http.Error(w, "a bearer token is required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serveStdio serves the mcp-go server over standard input and output
// until the input ends or ctx does, then drains.
func serveStdio(ctx context.Context, logger *slog.Logger) error {
	// A client may close its ends of our pipes (standard error included)
	// before we are done: a write then fails instead of killing the process.
	signal.Ignore(syscall.SIGPIPE)
	x, err := mcpgo.NewStdio(newServer("mcplisten-example-mcpgo", "0.1.0"), mcpgo.StdioOptions{
		Options: mcpgo.Options{Logger: logger, Listen: listen.Options{Logger: logger}},
		// Standard output carries the protocol only: mcp-go logs on
		// standard error too.
		SDK: []server.StdioOption{server.WithErrorLogger(slog.NewLogLogger(logger.Handler(), slog.LevelWarn))},
	})
	if err != nil {
		return err
	}
	err = x.Run(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	_ = x.Shutdown(sctx)
	if ctx.Err() != nil {
		return nil // signalled: drained
	}
	return err
}
