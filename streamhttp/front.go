package streamhttp

import (
	"net/http"

	"github.com/mcplisten/listen/jsonrpc"
)

// Front returns a handler for one MCP endpoint that sends every POST whose
// Mcp-Method header is "subscriptions/listen" to listenHandler (normally a
// *Handler) and every other request to other, such as the go-sdk's
// StreamableHTTPHandler. It routes on the header alone and never reads the
// body. A nil other answers every other request with 404. Front panics if
// listenHandler is nil.
//
// MCP 2026-07-28 clients send Mcp-Method on every POST. A listen sent
// without it (an older or non-conforming client) goes to other.
func Front(listenHandler, other http.Handler) http.Handler {
	if listenHandler == nil {
		panic("streamhttp: Front needs a listen handler")
	}
	if other == nil {
		other = http.NotFoundHandler()
	}
	return &front{listen: listenHandler, other: other}
}

type front struct {
	listen, other http.Handler
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if IsListen(r) {
		f.listen.ServeHTTP(w, r)
		return
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
	return ok && m == jsonrpc.MethodListen
}
