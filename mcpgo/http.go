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
	// HTTP, MaxBodyBytes, WrapSource: see adapter.HandlerOptions (NewHandler
	// sets HTTP's Listen, SupportedVersions to the versions mcp-go's
	// StreamableHTTPServer serves, and RequireHeaders). HTTP.Authenticate
	// gives each listen its principal: mcp-go's WithHTTPContextFunc, in SDK,
	// never runs for a listen (see the package documentation, Auth).
	HTTP         streamhttp.Options
	MaxBodyBytes int64
	WrapSource   func(listen.Source) listen.Source
	// SDK are the options of mcp-go's StreamableHTTPServer, which serves
	// every request that is not a listen (stateful sessions for older
	// clients, and stateless 2026-07-28 requests, on the same URL).
	// NewHandler adds server.WithDisableLocalhostProtection(true): the
	// endpoint's Host rule is HTTP's, applied to every request before
	// mcp-go sees it. Each initialize makes an mcp-go session (about 10 KB
	// of heap with v1.2.1, visited by every broadcast) that mcp-go keeps
	// until a DELETE of its id, Shutdown, or its own idle sweep
	// (server.WithSessionIdleTTL): Sessions bounds and expires them.
	SDK []server.StreamableHTTPOption
	// Sessions bound and expire the sessions of older clients in front of
	// mcp-go, as adapter.HandlerOptions.Sessions says (mcp-go would serve a
	// GET stream for any well-formed id). An expired session is ended in
	// mcp-go with a DELETE of its id served to the StreamableHTTPServer,
	// or, if that is refused (a SessionIdManager that does not allow
	// termination), with MCPServer.UnregisterSession. What a
	// SessionIdManager of your own keeps is not covered. 2026-07-28
	// requests have no session and pass. End is set by NewHandler.
	Sessions adapter.SessionOptions
}

// Handler serves one MCP Streamable HTTP endpoint for an mcp-go server:
// listens with this library, everything else with mcp-go's
// StreamableHTTPServer, each answer with the client's id token exactly
// (see the package documentation, Ids). It is the adapter package's
// Handler; its Shutdown also shuts the StreamableHTTPServer down (the GET
// streams of older clients end).
type Handler = adapter.Handler

// NewHandler returns the Handler for s: one call adds subscriptions/listen
// to an mcp-go server over HTTP, with the server's own broadcasts reaching
// every listen that asked for them (see NewBridge). It warns if opts.SDK
// sets mcp-go's WithHTTPContextFunc and opts.HTTP.Authenticate is nil
// (every listen's principal would be nil). It fails as NewBridge does, if
// the StreamableHTTPServer, as opts.SDK configures it, does not serve
// 2026-07-28, if this mcp-go release answers no id as sent (see the
// package documentation, Ids), and for invalid options.
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
// (server.WithHTTPContextFunc). mcp-go offers no accessor: the field is read
// by reflection (every supported release names it contextFunc; the tests,
// run on each, check it).
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
		r.Header.Set("Mcp-Session-Id", id)
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
