package streamhttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/mcplisten/listen"
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
	return ok && m == listen.MethodListen
}

// CapabilitiesFrom converts any server capabilities value to the
// listen.Capabilities a Handler narrows against, by encoding it as JSON: a
// go-sdk *mcp.ServerCapabilities, a map, a json.RawMessage of a
// server/discover "capabilities" object. Pass exactly the value the server
// advertises in server/discover. A nil value (or JSON null) gives empty
// capabilities; a value that is not a JSON object is an error.
func CapabilitiesFrom(v any) (listen.Capabilities, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("streamhttp: encoding capabilities: %w", err)
	}
	if string(raw) == "null" {
		return listen.Capabilities{}, nil
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, errNotObject
	}
	c, err := listen.ParseCapabilities(raw)
	if err != nil {
		return nil, fmt.Errorf("streamhttp: decoding capabilities: %w", err)
	}
	return c, nil
}

var errNotObject = errors.New("streamhttp: capabilities must be a JSON object")
