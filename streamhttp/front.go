package streamhttp

import (
	"net/http"

	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// Front returns a handler for one MCP endpoint that sends every POST whose
// Mcp-Method header is "subscriptions/listen" to listenHandler (normally a
// *Handler) and every other request to other, such as the go-sdk's
// StreamableHTTPHandler. It routes on the header alone and never reads the
// body. A nil other answers every other request with 404. Front panics if
// listenHandler is nil.
//
// Every request Front routes gets the same Origin and Host protection, as
// MCP requires of every incoming request: a listen is checked by
// listenHandler (a *Handler checks it first), and every other request is
// checked by Front before other sees it, with listenHandler's check when
// it is a *Handler (Handler.CheckOrigin: its AllowedHosts, AllowedOrigins
// and CheckOrigin), else with DefaultCheckOrigin. A refused request is
// answered 403 with -32600 "Forbidden: invalid Origin or Host" and no id
// (reported to the *Handler's OnError), and other never sees it. FrontWith
// chooses another check, or none.
//
// MCP 2026-07-28 clients send Mcp-Method on every POST. A listen sent
// without it (an older or non-conforming client) goes to other.
func Front(listenHandler, other http.Handler) http.Handler {
	return FrontWith(listenHandler, other, FrontOptions{})
}

// FrontOptions configure the check FrontWith applies to the requests it
// routes to other. The zero value is Front's: listenHandler's check, or
// DefaultCheckOrigin.
type FrontOptions struct {
	// CheckOrigin, if set, checks every request routed to other instead
	// (an error refuses it with 403). When listenHandler is a *Handler
	// wrapped in middleware, pass that Handler's CheckOrigin method so that
	// both get the same rules.
	CheckOrigin func(r *http.Request) error
	// Unchecked routes the requests for other without any check. other must
	// then validate their Origin itself (the go-sdk's
	// StreamableHTTPOptions.CrossOriginProtection, for one).
	Unchecked bool
}

// FrontWith is Front with the check of the requests routed to other chosen
// by opts.
func FrontWith(listenHandler, other http.Handler, opts FrontOptions) http.Handler {
	if listenHandler == nil {
		panic("streamhttp: Front needs a listen handler")
	}
	if other == nil {
		other = http.NotFoundHandler()
	}
	f := &front{listen: listenHandler, other: other}
	f.h, _ = listenHandler.(*Handler)
	switch {
	case opts.Unchecked:
	case opts.CheckOrigin != nil:
		f.check = opts.CheckOrigin
	case f.h != nil:
		f.check = f.h.CheckOrigin
	default:
		f.check = DefaultCheckOrigin
	}
	return f
}

type front struct {
	listen, other http.Handler
	// h is listen, if it is a *Handler (its OnError hears of refusals).
	h *Handler
	// check checks the requests for other; nil: none.
	check func(r *http.Request) error
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if IsListen(r) {
		f.listen.ServeHTTP(w, r)
		return
	}
	if f.check != nil {
		if err := f.check(r); err != nil {
			refuse(http.StatusForbidden, jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, MsgForbidden).WithCause(err)).write(f.h, w, r)
			return
		}
	}
	f.other.ServeHTTP(w, r)
}

// IsListen reports whether r is routed as a listen by Front: a POST whose
// Mcp-Method header is exactly "subscriptions/listen" (header values are
// case-sensitive; surrounding spaces are ignored).
func IsListen(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	m, ok := header(r, HeaderMethod)
	return ok && m == spec.MethodListen
}
