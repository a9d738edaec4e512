package gosdk

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

// HandlerOptions configure NewHandler.
type HandlerOptions struct {
	// Options configure the Bridge: the hub, listen.Options (every field
	// but those read from the go-sdk server: see Options.Listen), the
	// logger, the in-process calls' token.
	Options
	// HTTP configures the listen handler (limits, keep-alives, write
	// deadlines, hooks; see streamhttp.Options). Its Origin and Host rules
	// (AllowedHosts, AllowedOrigins, CheckOrigin) and ReadTimeout apply to
	// every request of the endpoint. NewHandler sets three of its fields:
	// Listen to Bridge.ListenOptions (built from Options.Listen),
	// SupportedVersions to the go-sdk server's versions, and RequireHeaders
	// to true (the go-sdk requires both headers on 2026-07-28 requests too).
	// Authenticate, if nil, hands each listen the go-sdk's *auth.TokenInfo
	// of its request (set by auth.RequireBearerToken in front of the
	// Handler) as listen.Request.Auth; Expiry, if nil, ends a listen's
	// stream when that token's Expiration passes (see streamhttp.ErrExpired).
	HTTP streamhttp.Options
	// SDK configures the go-sdk's StreamableHTTPHandlers, which serve every
	// request that is not a listen. Nil means the go-sdk's defaults. With
	// Stateless false (the default) the endpoint serves both eras: requests
	// naming protocol 2026-07-28 (MCP-Protocol-Version, or the body's _meta
	// without that header) go to a stateless handler, the go-sdk's only way
	// to serve that version, and everything else (initialize, requests with
	// Mcp-Session-Id, the GET stream, DELETE, earlier versions) to a
	// stateful one on the same server, so clients of earlier versions keep
	// their sessions and notifications. Stateless true serves every request
	// statelessly (clients of earlier versions then have no session).
	// With Stateless false, each initialize makes a go-sdk session (its
	// state and its goroutine) that lives until DELETE, Shutdown, or
	// Sessions.IdleTimeout idle (see Sessions). SessionTimeout, if set, is
	// the go-sdk's own idle timeout besides (it counts only POSTs: a session
	// whose client only holds its GET stream open ends when it passes).
	// MaxRequestBodyBytes bounds the body of every request of the endpoint
	// but listens (streamhttp.FrontOptions.MaxBodyBytes): zero means
	// streamhttp.DefaultFrontMaxBodyBytes (512 KiB, not the go-sdk's 4 MiB);
	// negative (unbounded) is an error.
	SDK *mcp.StreamableHTTPOptions
	// Sessions bound and expire the go-sdk sessions (those with a session
	// id: the clients of earlier versions, see SDK), in front of the go-sdk
	// (streamhttp.Sessions): at most MaxPerClient open at once per client
	// (default 1,000) and Max in all (default 10,000), so that a flood from
	// one client cannot take every slot. An initialize beyond them is
	// answered 429 (the client's share: -32603
	// streamhttp.MsgTooManyClientSessions) or 503 (every slot:
	// MsgTooManySessions), with Retry-After, and nothing reaches the go-sdk.
	// The count is exact: a slot is free again as soon as its session is
	// deleted (DELETE answered), ends, or expires. A session no request has
	// used for IdleTimeout (default 30 minutes; an open GET stream is use) is
	// closed (ServerSession.Close). A request naming a session id that was
	// never issued, or has ended or expired, is answered 404 before the
	// go-sdk sees it; GET streams are bounded by MaxGetStreams (default
	// 10,000) and MaxPerClient. ClientKey, if nil, is the UserID of the
	// request's go-sdk TokenInfo (auth.RequireBearerToken in front of the
	// Handler), if it has one, else streamhttp.ClientAddr, the connection's
	// address: behind a reverse proxy without authentication, every client
	// has the proxy's address and shares one client's share; give a
	// ClientKey that reads the address your proxy forwards. End is set by
	// NewHandler.
	Sessions streamhttp.SessionOptions
	// WrapSource, if set, wraps the Bridge's source before the listen
	// handler serves it (an instrumented source, such as the otel module's
	// Metrics.Source).
	WrapSource func(listen.Source) listen.Source
}

// DefaultMaxSessions is the default of HandlerOptions.Sessions.Max
// (streamhttp.DefaultMaxSessions).
const DefaultMaxSessions = streamhttp.DefaultMaxSessions

// MsgTooManySessions is the message of the error (503) that refuses an
// initialize beyond HandlerOptions.Sessions.Max
// (streamhttp.MsgTooManySessions).
const MsgTooManySessions = streamhttp.MsgTooManySessions

// Handler serves one MCP Streamable HTTP endpoint for a go-sdk server:
// subscriptions/listen with this library (streamhttp, from the Bridge's
// hub), everything else with the go-sdk's StreamableHTTPHandlers.
//
// Every request passes the same front (streamhttp.FrontWith): the Origin
// and Host check of HTTP (403), a body bounded in bytes
// (SDK.MaxRequestBodyBytes, 413) and in time (HTTP.ReadTimeout, 408; no
// deadline once the body has been read, none on a GET or DELETE). Every
// subscriptions/listen, whatever its headers or version, is this library's:
// recognised by its Mcp-Method header or by its body, it is served, or
// refused, by the listen handler alone (a version the server speaks before
// 2026-07-28: 404 -32601; any other version it does not speak: 400 -32022
// with data.supported, the server's versions), under its limits, counters
// and Shutdown; it never reaches the go-sdk's own listen code. Any other
// request naming in MCP-Protocol-Version a version the server does not
// speak is answered 400 -32022 in the same form. The rest goes to the
// go-sdk (see HandlerOptions.SDK for which of its handlers).
//
// Shutdown ends it. A Handler is safe for concurrent use.
type Handler struct {
	bridge *Bridge
	listen *streamhttp.Handler
	front  http.Handler
	// stateless serves 2026-07-28 requests; stateful (nil when
	// SDK.Stateless) every other one.
	stateless, stateful http.Handler
	server              *mcp.Server
	versions            []string
	// sessions fronts stateful (nil when SDK.Stateless).
	sessions *streamhttp.Sessions
}

// NewHandler returns the Handler for server: one call adds
// subscriptions/listen to a go-sdk server over HTTP, with the go-sdk's own
// list changes (AddTool, RemovePrompts, ...) reaching every listen that
// asked for them, and Handler.ResourceUpdated reaching every listen and
// older client watching a resource (see Bridge).
//
//	h, err := gosdk.NewHandler(server, gosdk.HandlerOptions{})
//	if err != nil { ... }
//	http.Handle("/mcp", h)
//	... // on the way out: h.Shutdown(ctx)
//
// It fails as NewBridge does, for a negative SDK.MaxRequestBodyBytes, and
// as streamhttp.New does for invalid HTTP options.
func NewHandler(server *mcp.Server, opts HandlerOptions) (*Handler, error) {
	sdkOpts := mcp.StreamableHTTPOptions{}
	if opts.SDK != nil {
		sdkOpts = *opts.SDK
	}
	if sdkOpts.MaxRequestBodyBytes < 0 {
		return nil, errors.New("gosdk: negative SDK.MaxRequestBodyBytes: every request body must be bounded")
	}
	if sdkOpts.MaxRequestBodyBytes == 0 {
		sdkOpts.MaxRequestBodyBytes = streamhttp.DefaultFrontMaxBodyBytes
	}
	b, err := NewBridge(context.Background(), server, opts.Options)
	if err != nil {
		return nil, err
	}
	ho := opts.HTTP
	ho.Listen = b.ListenOptions()
	ho.SupportedVersions = b.Versions()
	ho.RequireHeaders = true
	if ho.Authenticate == nil {
		ho.Authenticate = tokenOf
	}
	if ho.Expiry == nil {
		ho.Expiry = tokenExpiry
	}
	src := b.Source()
	if opts.WrapSource != nil {
		src = opts.WrapSource(src)
	}
	lh, err := streamhttp.New(src, ho)
	if err != nil {
		_ = b.Close()
		return nil, err
	}
	h := &Handler{bridge: b, listen: lh, server: server, versions: b.Versions()}
	getServer := func(*http.Request) *mcp.Server { return server }
	stateless := sdkOpts
	stateless.Stateless = true
	h.stateless = mcp.NewStreamableHTTPHandler(getServer, &stateless)
	if !sdkOpts.Stateless {
		h.stateful = mcp.NewStreamableHTTPHandler(getServer, &sdkOpts)
		so := opts.Sessions
		if so.ClientKey == nil {
			so.ClientKey = clientKey
		}
		so.End = h.endSessions
		h.sessions = streamhttp.NewSessions(h.stateful, so)
	}
	h.front = streamhttp.FrontWith(lh, http.HandlerFunc(h.route), streamhttp.FrontOptions{
		MaxBodyBytes: sdkOpts.MaxRequestBodyBytes,
	})
	return h, nil
}

// tokenOf is the default HTTP.Authenticate: the go-sdk's TokenInfo of the
// request (auth.RequireBearerToken puts it in the context), or nil.
func tokenOf(r *http.Request) (any, error) {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return ti, nil
	}
	return nil, nil
}

// tokenExpiry is the default HTTP.Expiry: the Expiration of the listen's
// go-sdk TokenInfo, if it has one.
func tokenExpiry(_ *http.Request, a any) time.Time {
	if ti, ok := a.(*auth.TokenInfo); ok && ti != nil {
		return ti.Expiration
	}
	return time.Time{}
}

// ServeHTTP serves r (see Handler).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.front.ServeHTTP(w, r) }

// route sends a request that is not a listen, once the front has checked
// and read it, to the go-sdk handler of its era.
func (h *Handler) route(w http.ResponseWriter, r *http.Request) {
	v := strings.TrimSpace(r.Header.Get(streamhttp.HeaderProtocolVersion))
	if v != "" && !slices.Contains(h.versions, v) {
		m, _ := streamhttp.FrontMessage(r)
		writeError(w, http.StatusBadRequest, m.ID, spec.UnsupportedVersionError(h.versions, v))
		return
	}
	if h.stateful == nil || v >= spec.ProtocolVersion || (v == "" && namesVersion(r)) {
		h.stateless.ServeHTTP(w, r)
		return
	}
	h.sessions.ServeHTTP(w, r)
}

// clientKey is the default Sessions.ClientKey: the UserID of the request's
// go-sdk TokenInfo, else the connection's address.
func clientKey(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil && ti.UserID != "" {
		return "user:" + ti.UserID
	}
	return streamhttp.ClientAddr(r)
}

// endSessions closes the go-sdk sessions of ids (Sessions.End: they
// expired), with one pass over the server's sessions.
func (h *Handler) endSessions(ids []string) {
	end := make(map[string]bool, len(ids))
	for _, id := range ids {
		end[id] = true
	}
	for ss := range h.server.Sessions() {
		if id := ss.ID(); id != "" && end[id] {
			_ = ss.Close()
		}
	}
}

// namesVersion reports whether r's body, as the front parsed it, names a
// protocol version in its _meta: a request of 2026-07-28 or later sent
// without its MCP-Protocol-Version header, which the stateless handler
// answers (-32020: the header is required).
func namesVersion(r *http.Request) bool {
	m, ok := streamhttp.FrontMessage(r)
	if !ok || len(m.Params) == 0 {
		return false
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return false
	}
	_, named := p.Meta[spec.MetaProtocolVersion]
	return named
}

// writeError answers with a JSON-RPC error response.
func writeError(w http.ResponseWriter, status int, id jsonrpc.ID, err *jsonrpc.Error) {
	body := jsonrpc.ErrorResponse(id, err)
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	hdr.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// ResourceUpdated tells every listen and every older client watching uri
// that the resource changed, each exactly once (see Bridge.ResourceUpdated).
func (h *Handler) ResourceUpdated(ctx context.Context, uri string) error {
	return h.bridge.ResourceUpdated(ctx, uri)
}

// Shutdown ends every listen stream gracefully (each gets its completion
// result; new listens are refused with 503) and waits for them as
// streamhttp.Handler.Shutdown does; then it stops the sessions' expiry
// (Sessions.Close) and closes the go-sdk server's sessions that have a
// session id (those of the stateful handler: clients
// of earlier versions; their GET streams end, so that http.Server.Shutdown
// can return), and the Bridge. It returns ctx's error if the streams did not
// all end in time (the rest is closed all the same). Stop the http.Server
// after it. Shutdown is idempotent.
func (h *Handler) Shutdown(ctx context.Context) error {
	err := h.listen.Shutdown(ctx)
	if h.stateful != nil {
		h.sessions.Close()
		for ss := range h.server.Sessions() {
			if ss.ID() != "" {
				_ = ss.Close()
			}
		}
	}
	_ = h.bridge.Close()
	return err
}

// Bridge returns the Handler's Bridge (capabilities, counters).
func (h *Handler) Bridge() *Bridge { return h.bridge }

// Hub returns the hub the listens are served from.
func (h *Handler) Hub() *hub.Hub { return h.bridge.hub }

// Sessions returns what bounds and expires the go-sdk sessions (its
// Stats), or nil with SDK.Stateless.
func (h *Handler) Sessions() *streamhttp.Sessions { return h.sessions }

// Listen returns the listen handler (its Stats).
func (h *Handler) Listen() *streamhttp.Handler { return h.listen }
