package mcpgo

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"slices"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/adapter"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

// HandlerOptions configure NewHandler.
type HandlerOptions struct {
	// Options configure the Bridge: the hub, the listen.Options (every
	// field but the three read from the server: see Options.Listen), the
	// logger.
	Options
	// HTTP configures the endpoint (Origin and Host rules, limits,
	// keep-alives, write deadlines, hooks; see streamhttp.Options). Its
	// Authenticate gives each listen its principal (listen.Request.Auth,
	// which CanRead gets): mcp-go's WithHTTPContextFunc, in SDK, never runs
	// for a listen, and NewHandler logs a warning when SDK sets one and
	// Authenticate is nil (see the package documentation, Auth).
	// NewHandler sets three of its fields (see adapter.HandlerOptions.HTTP):
	// Listen, SupportedVersions to the versions mcp-go's
	// StreamableHTTPServer serves, and RequireHeaders to true (mcp-go
	// requires both headers on 2026-07-28 requests too).
	HTTP streamhttp.Options
	// SDK are the options of mcp-go's StreamableHTTPServer, which serves
	// every request that is not a listen (stateful sessions for older
	// clients, as mcp-go defaults to, and stateless 2026-07-28 requests,
	// on the same URL). NewHandler adds
	// server.WithDisableLocalhostProtection(true): the endpoint's Host rule
	// is HTTP's (AllowedHosts, or the same loopback rule), applied to every
	// request before mcp-go sees it.
	//
	// Each initialize an older client sends makes an mcp-go session (about
	// 10 KB of heap with v1.2.1) that mcp-go keeps until a DELETE of its
	// id, Shutdown or, with server.WithSessionIdleTTL, its own idle sweep:
	// the session registered with the MCPServer (MCPServer.RegisterSession;
	// every broadcast visits it) and the same session in the
	// StreamableHTTPServer's active sessions. mcp-go's default session id manager
	// (StatelessGeneratingSessionIdManager) keeps nothing: it checks an id's
	// format only. Sessions bounds and expires these sessions in front of
	// mcp-go.
	SDK []server.StreamableHTTPOption
	// Sessions bound and expire the sessions of older clients in front of
	// mcp-go (streamhttp.Sessions), as gosdk.HandlerOptions.Sessions does
	// for the go-sdk: at most Max open at once (default 10,000) and
	// MaxPerClient per client (default 1,000; ClientKey, if nil, is
	// streamhttp.ClientAddr, the connection's address: behind a reverse
	// proxy, give one that reads the address your proxy forwards), so that
	// a flood from one client cannot take every slot; an initialize beyond
	// them is answered 429 (the client's share: -32603
	// streamhttp.MsgTooManyClientSessions) or 503 (every slot:
	// MsgTooManySessions), with Retry-After, and never reaches mcp-go. A
	// slot is free as soon as its session is deleted or expires. A session
	// no request has used for IdleTimeout (default 30 minutes; an open GET
	// stream is use) is ended in mcp-go: a DELETE of its id is served to the
	// StreamableHTTPServer (which unregisters the session from the
	// MCPServer and drops its per-session state), and if that is refused (a
	// SessionIdManager that does not allow termination) the session is
	// unregistered with MCPServer.UnregisterSession, which leaves the
	// StreamableHTTPServer's entry for it. What a SessionIdManager of your
	// own keeps (InsecureStatefulSessionIdManager: every id it issued or
	// terminated, for the life of the server) is not covered. A request
	// naming a session id that was never issued here, or has ended or
	// expired, is answered 404 before mcp-go sees it (mcp-go would serve a
	// GET stream for any well-formed id): route every request of a session
	// to the instance that issued it. GET streams, with a session id or
	// without (mcp-go then opens a session for the stream), are bounded by
	// MaxGetStreams (default 10,000) and MaxPerClient. 2026-07-28 requests
	// have no session and pass. End is set by NewHandler.
	Sessions streamhttp.SessionOptions
	// MaxBodyBytes bounds the body of every request of the endpoint but
	// listens, which HTTP.MaxBodyBytes bounds
	// (streamhttp.FrontOptions.MaxBodyBytes: a larger one is refused with
	// 413 before mcp-go, which reads bodies whole, sees it). Zero means
	// streamhttp.DefaultFrontMaxBodyBytes (512 KiB); negative is an error.
	// HTTP.ReadTimeout bounds the time to read it.
	MaxBodyBytes int64
	// WrapSource, if set, wraps the Bridge's source before the listen
	// handler serves it (an instrumented source, such as the otel module's
	// Metrics.Source).
	WrapSource func(listen.Source) listen.Source
}

// Handler serves one MCP Streamable HTTP endpoint for an mcp-go server:
// subscriptions/listen with this library, whatever version it names, and
// everything else with mcp-go's StreamableHTTPServer. It is the adapter
// package's Handler: see there for the front every request passes (a
// request naming in MCP-Protocol-Version a version mcp-go does not serve
// gets -32022, where mcp-go would answer some in plain text) and for
// Shutdown, which also ends mcp-go's sessions
// (StreamableHTTPServer.Shutdown: the GET streams of older clients). A
// request mcp-go answers keeps the client's id token exactly (see the
// package documentation, Ids).
type Handler = adapter.Handler

// NewHandler returns the Handler for s: one call adds subscriptions/listen
// to an mcp-go server over HTTP, with the server's own broadcasts (AddTool,
// DeletePrompts, SendNotificationToAllClients of resources/updated, ...)
// reaching every listen that asked for them (see NewBridge).
//
//	h, err := mcpgo.NewHandler(s, mcpgo.HandlerOptions{})
//	if err != nil { ... }
//	http.Handle("/mcp", h)
//	... // on the way out: h.Shutdown(ctx)
//
// It logs a warning (Options.Logger) if opts.SDK sets mcp-go's
// WithHTTPContextFunc and opts.HTTP.Authenticate is nil: the listens would
// all have a nil principal. It fails as NewBridge does, if mcp-go's
// StreamableHTTPServer, as opts.SDK configures it, does not serve protocol
// version 2026-07-28, if this mcp-go release answers no id as sent (an
// in-process probe: see the package documentation, Ids), for a negative
// MaxBodyBytes and for invalid opts.HTTP.
func NewHandler(s *server.MCPServer, opts HandlerOptions) (*Handler, error) {
	return newHandler(s, opts, false)
}

// newHandler is NewHandler; surrogateAll sends every id to mcp-go under a
// surrogate, as when the probe finds plain ids not answered as sent.
func newHandler(s *server.MCPServer, opts HandlerOptions, surrogateAll bool) (*Handler, error) {
	if s == nil {
		return nil, errors.New("mcpgo: nil *server.MCPServer")
	}
	sdk := server.NewStreamableHTTPServer(s, append(slices.Clip(opts.SDK), server.WithDisableLocalhostProtection(true))...)
	versions := server.FilterSupportedVersions(sdk)
	plainIDs, err := probeIDs(func(m json.RawMessage) []byte {
		b, _ := json.Marshal(s.HandleMessage(context.WithValue(context.Background(), bridgeKey{}, true), m))
		return b
	})
	if err == nil && !slices.Contains(versions, spec.ProtocolVersion) {
		err = fmt.Errorf("mcpgo: the StreamableHTTPServer does not serve protocol version %s, which subscriptions/listen needs (it serves %v)", spec.ProtocolVersion, versions)
	}
	var b *adapter.Bridge
	if err == nil {
		b, err = NewBridge(context.Background(), s, opts.Options)
	}
	if err != nil {
		_ = sdk.Shutdown(context.Background())
		return nil, err
	}
	log := cmp.Or(opts.Logger, slog.Default())
	if opts.HTTP.Authenticate == nil && setsContextFunc(sdk) {
		log.Warn("mcpgo: HandlerOptions.SDK sets mcp-go's WithHTTPContextFunc but HTTP.Authenticate is nil: " +
			"the context function never runs for a listen (listens never reach mcp-go), so every listen.Request.Auth, what CanRead gets, is nil; " +
			"set HTTP.Authenticate to hand listens their principal (see the mcpgo package documentation, Auth)")
	}
	if !plainIDs {
		log.Info("mcpgo: this mcp-go release does not answer every plain id as sent: every request with an id reaches it under a surrogate id")
	}
	x := &httpSDK{sdk: sdk, server: s, plainIDs: plainIDs && !surrogateAll}
	so := opts.Sessions
	so.End = x.endSessions
	serve := http.HandlerFunc(x.serve)
	return adapter.NewHandler(b, adapter.HandlerOptions{
		HTTP:         opts.HTTP,
		Sessions:     so,
		MaxBodyBytes: opts.MaxBodyBytes,
		WrapSource:   opts.WrapSource,
		Versions:     versions,
		Modern:       serve, // a 2026-07-28 request: mcp-go gives it no session
		Legacy:       serve,
		Close:        func(ctx context.Context) { _ = sdk.Shutdown(ctx) },
	})
}

// httpSDK is mcp-go's StreamableHTTPServer behind the Handler.
type httpSDK struct {
	sdk    *server.StreamableHTTPServer
	server *server.MCPServer
	// plainIDs is true if mcp-go answers plain ids as sent (probeIDs):
	// only the others then reach it under a surrogate.
	plainIDs bool
}

// setsContextFunc reports whether sdk has an HTTP context function
// (server.WithHTTPContextFunc, where mcp-go servers put a request's
// principal). mcp-go offers no accessor: the field is read by reflection
// (every supported release names it contextFunc; the tests, run on each,
// check it).
func setsContextFunc(sdk *server.StreamableHTTPServer) bool {
	f := reflect.ValueOf(sdk).Elem().FieldByName("contextFunc")
	return f.IsValid() && f.Kind() == reflect.Func && !f.IsNil()
}

// endSessions ends in mcp-go the sessions of ids (Sessions.End: they
// expired) with a DELETE of each, served to the StreamableHTTPServer, or,
// where that is refused, MCPServer.UnregisterSession.
func (x *httpSDK) endSessions(ids []string) {
	ctx := context.Background()
	for _, id := range ids {
		r, err := http.NewRequestWithContext(ctx, http.MethodDelete, "/", nil)
		if err != nil {
			continue
		}
		r.Header.Set(streamhttp.HeaderSessionID, id)
		w := &statusWriter{header: http.Header{}}
		x.sdk.ServeHTTP(w, r)
		if w.status >= 300 {
			x.server.UnregisterSession(ctx, id)
		}
	}
}

// statusWriter keeps a response's status and discards the rest.
type statusWriter struct {
	header http.Header
	status int
}

func (w *statusWriter) Header() http.Header { return w.header }

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(p), nil
}

// serve serves a request that is not a listen with mcp-go: under a
// surrogate id if mcp-go would not answer with the client's token.
func (x *httpSDK) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Body == nil {
		x.sdk.ServeHTTP(w, r)
		return
	}
	if m, parsed := streamhttp.FrontMessage(r); parsed && (!m.HasID || (x.plainIDs && plainID(json.RawMessage(m.ID.Raw())))) {
		// The front parsed the body: a notification, or a request mcp-go
		// answers with the client's id token, is passed on as read, without
		// copying or decoding the body again.
		x.sdk.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body) // in memory already: the front read it
	if err != nil {
		http.Error(w, "reading the request body failed", http.StatusBadRequest)
		return
	}
	if out, token, surrogate, ok := withSurrogate(body, !x.plainIDs); ok {
		body = out
		w = &idWriter{ResponseWriter: w, from: surrogate, to: token}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	x.sdk.ServeHTTP(w, r)
}
