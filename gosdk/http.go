package gosdk

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/adapter"
	"github.com/mcplisten/listen/streamhttp"
)

// HandlerOptions configure NewHandler.
type HandlerOptions struct {
	// Options configure the Bridge: the hub, listen.Options (every field
	// but those read from the go-sdk server), the logger, the in-process
	// calls' token.
	Options
	// HTTP configures the listen handler and the endpoint's front, as
	// adapter.HandlerOptions.HTTP says (NewHandler sets its Listen,
	// SupportedVersions and RequireHeaders: the go-sdk requires both
	// headers on 2026-07-28 requests too). Authenticate, if nil, hands each
	// listen the go-sdk's *auth.TokenInfo of its request (set by
	// auth.RequireBearerToken in front of the Handler) as
	// listen.Request.Auth; Expiry, if nil, ends a listen's stream when that
	// token's Expiration passes (reason listen.ErrExpired).
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
	// but listens (adapter.HandlerOptions.MaxBodyBytes): zero means
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
	// streamhttp.MsgTooManySessions), with Retry-After, and nothing reaches
	// the go-sdk. The count is exact: a slot is free again as soon as its
	// session is deleted (DELETE answered), ends, or expires. A session no
	// request has used for IdleTimeout (default 30 minutes; an open GET
	// stream is use) is closed (ServerSession.Close). A request naming a
	// session id that was never issued, or has ended or expired, is
	// answered 404 before the go-sdk sees it; GET streams are bounded by
	// MaxGetStreams (default 10,000) and MaxPerClient. ClientKey, if nil, is
	// the UserID of the request's go-sdk TokenInfo (auth.RequireBearerToken
	// in front of the Handler), if it has one, else streamhttp.ClientAddr,
	// the connection's address: behind a reverse proxy without
	// authentication, every client has the proxy's address and shares one
	// client's share; give a ClientKey that reads the address your proxy
	// forwards. End is set by NewHandler.
	Sessions streamhttp.SessionOptions
	// WrapSource, if set, wraps the Bridge's source before the listen
	// handler serves it (an instrumented source, such as the otel module's
	// Metrics.Source).
	WrapSource func(listen.Source) listen.Source
}

// Handler serves one MCP Streamable HTTP endpoint for a go-sdk server:
// subscriptions/listen with this library, everything else with the go-sdk's
// StreamableHTTPHandlers (see HandlerOptions.SDK for which). It is the
// adapter package's Handler: see there for the front every request passes
// and for Shutdown, which also closes the go-sdk sessions that have a
// session id (clients of earlier versions; their GET streams end, so that
// http.Server.Shutdown can return).
type Handler = adapter.Handler

// NewHandler returns the Handler for server: one call adds
// subscriptions/listen to a go-sdk server over HTTP, with the go-sdk's own
// list changes (AddTool, RemovePrompts, ...) reaching every listen that
// asked for them, and Handler.ResourceUpdated reaching every listen and
// older client watching a resource (see NewBridge).
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
	if ho.Authenticate == nil {
		ho.Authenticate = tokenOf
	}
	if ho.Expiry == nil {
		ho.Expiry = tokenExpiry
	}
	getServer := func(*http.Request) *mcp.Server { return server }
	stateless := sdkOpts
	stateless.Stateless = true
	ao := adapter.HandlerOptions{
		HTTP:         ho,
		MaxBodyBytes: sdkOpts.MaxRequestBodyBytes,
		WrapSource:   opts.WrapSource,
		Modern:       mcp.NewStreamableHTTPHandler(getServer, &stateless),
	}
	if !sdkOpts.Stateless {
		ao.Legacy = mcp.NewStreamableHTTPHandler(getServer, &sdkOpts)
		ao.Sessions = opts.Sessions
		if ao.Sessions.ClientKey == nil {
			ao.Sessions.ClientKey = clientKey
		}
		ao.Sessions.End = func(ids []string) { endSessions(server, ids) }
		ao.Close = func(context.Context) { endSessions(server, nil) }
	}
	return adapter.NewHandler(b, ao)
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

// clientKey is the default Sessions.ClientKey: the UserID of the request's
// go-sdk TokenInfo, else the connection's address.
func clientKey(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil && ti.UserID != "" {
		return "user:" + ti.UserID
	}
	return streamhttp.ClientAddr(r)
}

// endSessions closes the go-sdk sessions of ids (Sessions.End: they
// expired), or, with ids nil, every one that has a session id (Shutdown),
// with one pass over the server's sessions.
func endSessions(server *mcp.Server, ids []string) {
	end := make(map[string]bool, len(ids))
	for _, id := range ids {
		end[id] = true
	}
	for ss := range server.Sessions() {
		if id := ss.ID(); id != "" && (ids == nil || end[id]) {
			_ = ss.Close()
		}
	}
}
