package gosdk

import (
	"context"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

// HandlerOptions configure NewHandler.
type HandlerOptions struct {
	// Options configure the Bridge: the hub, listen.Options (Extensions,
	// CanRead), the logger.
	Options
	// HTTP configures the listen handler (limits, keep-alives, write
	// deadlines, hooks; see streamhttp.Options). NewHandler sets three of its
	// fields: Listen to Bridge.ListenOptions (built from Options.Listen),
	// SupportedVersions to the go-sdk server's versions, and RequireHeaders
	// to true (the go-sdk requires both headers on 2026-07-28 requests too).
	HTTP streamhttp.Options
	// SDK configures the go-sdk's StreamableHTTPHandler, which serves every
	// request that is not a listen. Nil means the go-sdk's defaults.
	// Stateless is always set: the go-sdk serves protocol 2026-07-28 only
	// in stateless mode.
	SDK *mcp.StreamableHTTPOptions
	// WrapSource, if set, wraps the Bridge's source before the listen
	// handler serves it (an instrumented source, such as the otel module's
	// Metrics.Source).
	WrapSource func(listen.Source) listen.Source
}

// Handler serves one MCP Streamable HTTP endpoint for a go-sdk server:
// subscriptions/listen with this library (streamhttp, from the Bridge's
// hub), everything else with the go-sdk's StreamableHTTPHandler.
//
// A POST goes to the listen handler when its Mcp-Method header is
// subscriptions/listen and its MCP-Protocol-Version header is 2026-07-28
// (which NewBridge made sure the server serves); every other request, including a
// listen naming another or an unknown version, goes to the go-sdk, so that
// the endpoint answers with one voice: the -32022 error for an unsupported
// version, with its list of supported versions, is the go-sdk's own, byte
// for byte.
//
// Shutdown ends it. A Handler is safe for concurrent use.
type Handler struct {
	bridge *Bridge
	listen *streamhttp.Handler
	sdk    http.Handler
}

// NewHandler returns the Handler for server: one call adds
// subscriptions/listen to a go-sdk server over HTTP, with the go-sdk's own
// changes (AddTool, RemovePrompts, ResourceUpdated, ...) reaching every
// listen that asked for them (see Bridge).
//
//	h, err := gosdk.NewHandler(server, gosdk.HandlerOptions{})
//	if err != nil { ... }
//	http.Handle("/mcp", h)
//	... // on the way out: h.Shutdown(ctx)
//
// It fails as NewBridge does.
func NewHandler(server *mcp.Server, opts HandlerOptions) (*Handler, error) {
	b, err := NewBridge(context.Background(), server, opts.Options)
	if err != nil {
		return nil, err
	}
	ho := opts.HTTP
	ho.Listen = b.ListenOptions()
	ho.SupportedVersions = b.Versions()
	ho.RequireHeaders = true
	sdkOpts := mcp.StreamableHTTPOptions{}
	if opts.SDK != nil {
		sdkOpts = *opts.SDK
	}
	sdkOpts.Stateless = true
	src := b.Source()
	if opts.WrapSource != nil {
		src = opts.WrapSource(src)
	}
	lh, err := streamhttp.New(src, ho)
	if err != nil {
		_ = b.Close()
		return nil, err
	}
	h := &Handler{
		bridge: b,
		listen: lh,
		sdk:    mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &sdkOpts),
	}
	return h, nil
}

// ServeHTTP routes r (see Handler).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if streamhttp.IsListen(r) &&
		strings.TrimSpace(r.Header.Get(streamhttp.HeaderProtocolVersion)) == spec.ProtocolVersion {
		h.listen.ServeHTTP(w, r)
		return
	}
	h.sdk.ServeHTTP(w, r)
}

// Shutdown ends every listen stream gracefully (each gets its completion
// result; new listens are refused with 503), waits for them as
// streamhttp.Handler.Shutdown does, then closes the Bridge. It returns
// ctx's error if the streams did not all end in time (the Bridge is closed
// all the same). The go-sdk's handler needs no shutdown: stop the
// http.Server too. Shutdown is idempotent.
func (h *Handler) Shutdown(ctx context.Context) error {
	err := h.listen.Shutdown(ctx)
	_ = h.bridge.Close()
	return err
}

// Bridge returns the Handler's Bridge (capabilities, counters).
func (h *Handler) Bridge() *Bridge { return h.bridge }

// Hub returns the hub the listens are served from.
func (h *Handler) Hub() *hub.Hub { return h.bridge.hub }

// Listen returns the listen handler (its Stats).
func (h *Handler) Listen() *streamhttp.Handler { return h.listen }
