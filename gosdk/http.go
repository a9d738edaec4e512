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
	// HTTP, WrapSource: see adapter.HandlerOptions (NewHandler sets HTTP's
	// Listen, SupportedVersions and RequireHeaders). Authenticate, if nil,
	// hands each listen the go-sdk's *auth.TokenInfo of its request (set by
	// auth.RequireBearerToken in front of the Handler) as
	// listen.Request.Auth; Expiry, if nil, ends a listen's stream when that
	// token's Expiration passes (reason listen.ErrExpired).
	HTTP       streamhttp.Options
	WrapSource func(listen.Source) listen.Source
	// SDK configures the go-sdk's StreamableHTTPHandlers, which serve every
	// request that is not a listen (nil: the go-sdk's defaults). With
	// Stateless false (the default), requests naming 2026-07-28 go to a
	// stateless handler, the go-sdk's only way to serve that version, and
	// everything else (initialize, Mcp-Session-Id, the GET stream, DELETE)
	// to a stateful one on the same server, so clients of earlier versions
	// keep their sessions; each lives until DELETE, Shutdown, or idle (see
	// Sessions; SessionTimeout, if set, is the go-sdk's own, counting only
	// POSTs). Stateless true serves every request statelessly.
	// MaxRequestBodyBytes is adapter.HandlerOptions.MaxBodyBytes (zero:
	// 512 KiB, not the go-sdk's 4 MiB; negative is an error).
	SDK *mcp.StreamableHTTPOptions
	// Sessions bound and expire the go-sdk sessions of older clients, as
	// adapter.HandlerOptions.Sessions says (an expired one is closed with
	// ServerSession.Close). ClientKey, if nil, is the UserID of the
	// request's go-sdk TokenInfo (auth.RequireBearerToken in front of the
	// Handler), if it has one, else the connection's address. End is set by
	// NewHandler.
	Sessions adapter.SessionOptions
}

// Handler serves one MCP Streamable HTTP endpoint for a go-sdk server:
// listens with this library, everything else with the go-sdk's
// StreamableHTTPHandlers (see HandlerOptions.SDK). It is the adapter
// package's Handler; its Shutdown also closes the go-sdk sessions that
// have a session id (the GET streams of older clients end).
type Handler = adapter.Handler

// NewHandler returns the Handler for server: one call adds
// subscriptions/listen to a go-sdk server over HTTP, with the go-sdk's own
// list changes reaching every listen that asked for them (see NewBridge).
// It fails as NewBridge does, for a negative SDK.MaxRequestBodyBytes, and
// for invalid HTTP options.
func NewHandler(server *mcp.Server, opts HandlerOptions) (*Handler, error) {
	sdkOpts := mcp.StreamableHTTPOptions{}
	if opts.SDK != nil {
		sdkOpts = *opts.SDK
	}
	if sdkOpts.MaxRequestBodyBytes < 0 {
		return nil, errors.New("gosdk: negative SDK.MaxRequestBodyBytes: every request body must be bounded")
	}
	if sdkOpts.MaxRequestBodyBytes == 0 {
		sdkOpts.MaxRequestBodyBytes = 512 << 10 // adapter.HandlerOptions.MaxBodyBytes' default
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
// go-sdk TokenInfo, else "" (the connection's address: see
// adapter.SessionOptions.ClientKey).
func clientKey(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil && ti.UserID != "" {
		return "user:" + ti.UserID
	}
	return ""
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
