package streamhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

// withParams builds a listen request whose params are given raw.
func withParams(id, params string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":` + params + `}`
}

const goodMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// versioned builds a listen request naming protocol version v.
func versioned(v string) string {
	return withParams(`"v"`, `{"notifications":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"`+v+`","io.modelcontextprotocol/clientCapabilities":{}}}`)
}

// headers returns the conforming listen headers changed by kv pairs (an
// empty value deletes the header).
func headers(kv ...string) http.Header {
	h := listenHeaders()
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			h.Del(kv[i])
		} else {
			h.Set(kv[i], kv[i+1])
		}
	}
	return h
}

func TestRequestErrors(t *testing.T) {
	manyURIs := make([]string, spec.MaxResourceSubscriptions+1)
	for i := range manyURIs {
		manyURIs[i] = `"test://r/` + strings.Repeat("x", i%3) + `"`
	}
	tests := []struct {
		name    string
		method  string
		body    string
		header  http.Header
		status  int
		id      string // the echoed id token; "" means no id member
		code    int
		message string
		data    string // exact data JSON, if any
	}{
		{name: "GET", method: http.MethodGet, header: headers(),
			status: 405, code: -32600, message: streamhttp.MsgMethodNotAllowed},
		{name: "DELETE", method: http.MethodDelete, header: headers(),
			status: 405, code: -32600, message: streamhttp.MsgMethodNotAllowed},
		{name: "cross-origin browser request", body: listenBody(`"o"`, `{}`),
			header: headers("Origin", "http://evil.example"),
			status: 403, code: -32600, message: streamhttp.MsgForbidden},
		{name: "cross-site fetch", body: listenBody(`"o"`, `{}`),
			header: headers("Sec-Fetch-Site", "cross-site"),
			status: 403, code: -32600, message: streamhttp.MsgForbidden},
		{name: "DNS rebinding: a foreign Host on a loopback address", body: listenBody(`"o"`, `{}`),
			header: headers("Host", "attacker.example:8080"),
			status: 403, code: -32600, message: streamhttp.MsgForbidden},
		{name: "authentication refused", body: listenBody(`"a"`, `{}`),
			header: headers("Authorization", "Bearer bad"),
			status: 401, code: -32600, message: streamhttp.MsgUnauthorized},
		{name: "authentication refused with a chosen status", body: listenBody(`"a"`, `{}`),
			header: headers("Authorization", "Bearer forbidden"),
			status: 403, code: -32600, message: streamhttp.MsgUnauthorized},
		{name: "body over the limit", body: listenBody(`"big"`, `{"pad":"`+strings.Repeat("x", 100<<10)+`"}`),
			header: headers(),
			status: 413, code: -32600, message: streamhttp.MsgBodyTooLarge},
		{name: "malformed JSON", body: `{"jsonrpc":"2.0","id":1,`, header: headers(),
			status: 400, code: -32700, message: "Parse error"},
		{name: "not a JSON-RPC object", body: `[1,2]`, header: headers(),
			status: 400, code: -32600, message: "Invalid request: expected a JSON-RPC object"},
		{name: "jsonrpc missing", body: `{"id":3,"method":"subscriptions/listen","params":{}}`, header: headers(),
			status: 400, id: `3`, code: -32600, message: `Invalid request: jsonrpc must be "2.0"`},
		{name: "listen without id", body: `{"jsonrpc":"2.0","method":"subscriptions/listen","params":{}}`, header: headers(),
			status: 400, code: -32600, message: "Invalid request: subscriptions/listen requires an id"},
		{name: "Mcp-Method mismatch", body: listenBody(`"m"`, `{}`),
			header: headers("Mcp-Method", "tools/call"),
			status: 400, id: `"m"`, code: -32020,
			message: "Header mismatch: Mcp-Method header value 'tools/call' does not match body value 'subscriptions/listen'"},
		{name: "another method", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}`,
			header: headers("Mcp-Method", "tools/call"),
			status: 404, id: `7`, code: -32601, message: "Method not found: tools/call"},
		// A long method is echoed in part: its first 128 bytes, cut back to
		// a character boundary ('y' and 63 'é' are 127), then "...".
		{name: "Mcp-Method mismatch, long body method", body: `{"jsonrpc":"2.0","id":8,"method":"` + strings.Repeat("x", 4000) + `"}`,
			header: headers(),
			status: 400, id: `8`, code: -32020,
			message: "Header mismatch: Mcp-Method header value 'subscriptions/listen' does not match body value '" + strings.Repeat("x", 128) + "...'"},
		{name: "another method, long", body: `{"jsonrpc":"2.0","id":8,"method":"y` + strings.Repeat("é", 4000) + `"}`,
			header: headers("Mcp-Method", "y"+strings.Repeat("é", 4000)),
			status: 404, id: `8`, code: -32601, message: "Method not found: y" + strings.Repeat("é", 63) + "..."},
		{name: "params not an object", body: withParams(`"p"`, `[1]`), header: headers(),
			status: 400, id: `"p"`, code: -32602, message: core.ParamsObject},
		{name: "params missing", body: `{"jsonrpc":"2.0","id":"p","method":"subscriptions/listen"}`, header: headers(),
			status: 400, id: `"p"`, code: -32602, message: core.ParamsObject},
		{name: "_meta missing", body: withParams(`"p"`, `{"notifications":{}}`), header: headers(),
			status: 400, id: `"p"`, code: -32602, message: core.MetaObject},
		{name: "_meta not an object", body: withParams(`"p"`, `{"notifications":{},"_meta":[]}`), header: headers(),
			status: 400, id: `"p"`, code: -32602, message: core.MetaObject},
		{name: "protocolVersion missing", body: withParams(`"p"`, `{"notifications":{},"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}`),
			header: headers(),
			status: 400, id: `"p"`, code: -32602, message: core.MetaProtocolVersion},
		{name: "protocolVersion not a string", body: withParams(`"p"`, `{"notifications":{},"_meta":{"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}}}`),
			header: headers(),
			status: 400, id: `"p"`, code: -32602, message: core.MetaProtocolVersion},
		{name: "clientCapabilities missing", body: withParams(`"p"`, `{"notifications":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`),
			header: headers(),
			status: 400, id: `"p"`, code: -32602, message: core.MetaCapabilities},
		{name: "notifications missing", body: withParams(`9`, `{`+goodMeta+`}`), header: headers(),
			status: 400, id: `9`, code: -32602, message: core.NotificationsObject},
		{name: "notifications not an object", body: withParams(`9`, `{"notifications":true,`+goodMeta+`}`), header: headers(),
			status: 400, id: `9`, code: -32602, message: core.NotificationsObject},
		{name: "flag not a boolean", body: listenBody(`9`, `{"toolsListChanged":"yes"}`), header: headers(),
			status: 400, id: `9`, code: -32602, message: "subscriptions/listen toolsListChanged must be a boolean"},
		{name: "resourceSubscriptions not a list", body: listenBody(`9`, `{"resourceSubscriptions":"test://a"}`), header: headers(),
			status: 400, id: `9`, code: -32602, message: core.URIsList},
		{name: "too many URIs", body: listenBody(`9`, `{"resourceSubscriptions":[`+strings.Join(manyURIs, ",")+`]}`), header: headers(),
			status: 400, id: `9`, code: -32602, message: core.URIsTooMany},
		{name: "relative URI", body: listenBody(`9`, `{"resourceSubscriptions":["readme"]}`), header: headers(),
			status: 400, id: `9`, code: -32602, message: core.URIsAbsolute},
		{name: "MCP-Protocol-Version mismatch", body: listenBody(`"h"`, `{}`),
			header: headers("MCP-Protocol-Version", "2025-11-25"),
			status: 400, id: `"h"`, code: -32020,
			message: "Header mismatch: MCP-Protocol-Version header value '2025-11-25' does not match body value '2026-07-28'"},
		{name: "unsupported future version", body: versioned("2099-01-01"),
			header: headers("MCP-Protocol-Version", "2099-01-01"),
			status: 400, id: `"v"`, code: -32022, message: core.UnsupportedVersion,
			data: `{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"],"requested":"2099-01-01"}`},
		{name: "unsupported malformed version", body: versioned("1.0"),
			header: headers("MCP-Protocol-Version", "1.0"),
			status: 400, id: `"v"`, code: -32022, message: core.UnsupportedVersion,
			data: `{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"],"requested":"1.0"}`},
		{name: "old version the server does not speak", body: versioned("2024-11-05"),
			header: headers("MCP-Protocol-Version", "2024-11-05"),
			status: 400, id: `"v"`, code: -32022, message: core.UnsupportedVersion,
			data: `{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"],"requested":"2024-11-05"}`},
		{name: "1900-01-01 (the specification's example)", body: versioned("1900-01-01"),
			header: headers("MCP-Protocol-Version", "1900-01-01"),
			status: 400, id: `"v"`, code: -32022, message: core.UnsupportedVersion,
			data: `{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"],"requested":"1900-01-01"}`},
		{name: "legacy version", body: versioned("2025-11-25"),
			header: headers("MCP-Protocol-Version", "2025-11-25"),
			status: 404, id: `"v"`, code: -32601, message: core.MethodNotFoundListen},
		{name: "legacy version without headers", body: versioned("2025-06-18"),
			header: headers("MCP-Protocol-Version", "", "Mcp-Method", ""),
			status: 404, id: `"v"`, code: -32601, message: core.MethodNotFoundListen},
	}

	src := listentest.NewSource()
	var mu sync.Mutex
	var reported []error
	e := newEnv(t, src, &config{
		MaxBodyBytes: 64 << 10,
		Authenticate: func(r *http.Request) (any, error) {
			switch r.Header.Get("Authorization") {
			case "Bearer bad":
				return nil, errors.New("bad token")
			case "Bearer forbidden":
				return nil, &streamhttp.AuthError{Status: http.StatusForbidden, Header: http.Header{"Www-Authenticate": {`Bearer error="insufficient_scope"`}}}
			}
			return "user", nil
		},
		OnRefuse: func(_ *listen.Request, err error) {
			mu.Lock()
			reported = append(reported, err)
			mu.Unlock()
		},
	}, envConfig{})

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			resp := e.do(t, method, tt.body, tt.header)
			assert.Equal(t, tt.status, resp.StatusCode)
			b := readError(t, resp)
			if tt.id == "" {
				assert.Nil(t, b.ID, "no id member")
			} else {
				assert.Equal(t, tt.id, string(b.ID))
			}
			assert.Equal(t, tt.code, b.Error.Code)
			assert.Equal(t, tt.message, b.Error.Message)
			if tt.data != "" {
				assert.JSONEq(t, tt.data, string(b.Error.Data))
			} else {
				assert.Nil(t, b.Error.Data)
			}
			switch tt.status {
			case 405:
				assert.Equal(t, "POST", resp.Header.Get("Allow"))
			case 403:
				if strings.Contains(tt.name, "authentication") {
					assert.Equal(t, `Bearer error="insufficient_scope"`, resp.Header.Get("WWW-Authenticate"))
				}
			}
			assert.Empty(t, resp.Header.Get("Mcp-Session-Id"))
		})
	}
	assert.Empty(t, src.Streams(), "no refused listen may open the source")
	mu.Lock()
	assert.Len(t, reported, len(tests), "OnRefuse is called for every refusal")
	mu.Unlock()
	assert.Zero(t, e.h.Server().Stats().Opened)
}

// A body over the limit is refused whether or not its length was announced.
func TestBodyLimitChunked(t *testing.T) {
	e := newEnv(t, nil, &config{MaxBodyBytes: 1 << 10}, envConfig{})
	body := listenBody(`"big"`, `{"pad":"`+strings.Repeat("x", 4<<10)+`"}`)
	req, err := http.NewRequest(http.MethodPost, e.ts.URL, io.MultiReader(strings.NewReader(body)))
	require.NoError(t, err)
	req.Header = listenHeaders()
	require.EqualValues(t, 0, req.ContentLength, "unknown length: sent chunked")
	resp, err := e.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	b := readError(t, resp)
	assert.Equal(t, streamhttp.MsgBodyTooLarge, b.Error.Message)
}

// RequireHeaders makes both MCP headers mandatory.
func TestRequireHeaders(t *testing.T) {
	e := newEnv(t, nil, &config{RequireHeaders: true}, envConfig{})
	for _, tt := range []struct {
		name, drop, message string
		id                  string
	}{
		{"Mcp-Method", "Mcp-Method", "Header mismatch: missing Mcp-Method header", `"r"`},
		{"MCP-Protocol-Version", "MCP-Protocol-Version", "Header mismatch: missing MCP-Protocol-Version header", `"r"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.do(t, http.MethodPost, listenBody(`"r"`, `{}`), headers(tt.drop, ""))
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
			b := readError(t, resp)
			assert.Equal(t, -32020, b.Error.Code)
			assert.Equal(t, tt.message, b.Error.Message)
			assert.Equal(t, tt.id, string(b.ID))
		})
	}
	// With both headers the listen streams.
	s := e.listen(t, `"ok"`, `{}`)
	ack := s.message(t)
	assert.Equal(t, spec.MethodAcknowledged, ack["method"])
	streamOf(t, e.src, "ok").End()
	s.message(t)
	s.end(t)
}

// Without RequireHeaders, a listen with neither MCP header still streams.
func TestHeadersOptional(t *testing.T) {
	e := newEnv(t, nil, nil, envConfig{})
	resp := e.do(t, http.MethodPost, listenBody(`1`, `{}`), headers("MCP-Protocol-Version", "", "Mcp-Method", ""))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s := newSSE(resp)
	assert.Equal(t, spec.MethodAcknowledged, s.message(t)["method"])
	streamOf(t, e.src, "1").End()
	s.message(t)
	s.end(t)
}

// A client notification POSTed to the listen endpoint is accepted and
// ignored (Streamable HTTP has no client notifications).
func TestNotificationAccepted(t *testing.T) {
	e := newEnv(t, nil, nil, envConfig{})
	resp := e.do(t, http.MethodPost,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}}`,
		headers("Mcp-Method", "notifications/cancelled"))
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Empty(t, raw)
	assert.Empty(t, e.src.Streams())
}

// Errors of listen.Open keep their code, get a matching status and echo the
// id; an internal error keeps its cause private (it goes to OnRefuse only).
func TestOpenErrors(t *testing.T) {
	boom := errors.New("database down")
	tests := []struct {
		name    string
		openErr error
		accept  func(listen.Filter) listen.Filter
		status  int
		code    int
		message string
		data    string
	}{
		{name: "source error", openErr: boom,
			status: 500, code: -32603, message: core.SourceFailedToOpen},
		{name: "source wire error", openErr: jsonrpc.NewError(jsonrpc.CodeMissingRequiredClientCapability, "Server requires the tasks capability").
			WithData(map[string]any{"requiredCapabilities": map[string]any{"tasks": map[string]any{}}}),
			status: 400, code: -32021, message: "Server requires the tasks capability",
			data: `{"requiredCapabilities":{"tasks":{}}}`},
		{name: "source overclaims", accept: func(listen.Filter) listen.Filter { return listen.Filter{"promptsListChanged": true} },
			status: 500, code: -32603, message: core.SourceOverclaimed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := listentest.NewSource()
			src.OpenErr = tt.openErr
			src.Accept = tt.accept
			var got error
			e := newEnv(t, src, &config{
				OnRefuse: func(_ *listen.Request, err error) { got = err },
			}, envConfig{})
			resp := e.do(t, http.MethodPost, listenBody(`"e"`, `{"toolsListChanged":true}`), headers())
			assert.Equal(t, tt.status, resp.StatusCode)
			b := readError(t, resp)
			assert.Equal(t, `"e"`, string(b.ID))
			assert.Equal(t, tt.code, b.Error.Code)
			assert.Equal(t, tt.message, b.Error.Message)
			if tt.data != "" {
				assert.JSONEq(t, tt.data, string(b.Error.Data))
			} else {
				assert.Nil(t, b.Error.Data)
			}
			recv(t, e.served, "the handler's return")
			if tt.openErr == boom {
				assert.ErrorIs(t, got, boom, "OnError sees the private cause")
				assert.NotContains(t, string(mustJSON(t, b)), "database")
			}
			if tt.accept != nil {
				// The overclaiming stream was opened and is closed as failed.
				st := recv(t, src.Opened(), "the overclaiming stream")
				assert.ErrorIs(t, reasonOf(t, st), listen.ErrFailed)
			}
			st := e.h.Server().Stats()
			assert.Zero(t, st.Active)
			assert.Zero(t, st.Opened)
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestDefaultCheckOrigin(t *testing.T) {
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	public := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 443}
	tests := []struct {
		name   string
		local  net.Addr
		host   string
		header http.Header
		ok     bool
	}{
		{"localhost", loopback, "localhost:8080", nil, true},
		{"LOCALHOST without port", loopback, "LOCALHOST", nil, true},
		{"loopback IPv4", loopback, "127.0.0.1:8080", nil, true},
		{"loopback IPv6", &net.TCPAddr{IP: net.IPv6loopback, Port: 8080}, "[::1]:8080", nil, true},
		{"rebinding", loopback, "attacker.example:8080", nil, false},
		{"rebinding to a private IP", loopback, "10.0.0.1", nil, false},
		{"rebinding on IPv6 loopback", &net.TCPAddr{IP: net.IPv6loopback, Port: 8080}, "attacker.example:8080", nil, false},
		{"rebinding on IPv4 loopback as IPv6", &net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1"), Port: 8080}, "attacker.example", nil, false},
		{"a Unix socket, any Host", &net.UnixAddr{Name: "/run/mcp.sock", Net: "unix"}, "attacker.example", nil, true},
		{"public server, any Host", public, "mcp.example.com", nil, true},
		{"no local address", nil, "mcp.example.com", nil, true},
		{"same-origin browser", public, "mcp.example.com", http.Header{"Origin": {"https://mcp.example.com"}}, true},
		{"cross-origin browser", public, "mcp.example.com", http.Header{"Origin": {"https://evil.example"}}, false},
		{"cross-site fetch", public, "mcp.example.com", http.Header{"Sec-Fetch-Site": {"cross-site"}}, false},
		{"same-origin fetch", public, "mcp.example.com", http.Header{"Sec-Fetch-Site": {"same-origin"}, "Origin": {"https://mcp.example.com"}}, true},
		{"cross-origin GET", public, "mcp.example.com", http.Header{"Origin": {"https://evil.example"}, "X-Method": {"GET"}}, false},
		{"cross-site OPTIONS", public, "mcp.example.com", http.Header{"Sec-Fetch-Site": {"cross-site"}, "X-Method": {"OPTIONS"}}, false},
		{"same-site fetch", public, "mcp.example.com", http.Header{"Sec-Fetch-Site": {"same-site"}}, false},
		{"null origin", public, "mcp.example.com", http.Header{"Origin": {"null"}}, false},
		{"same-origin GET", public, "mcp.example.com", http.Header{"Origin": {"https://mcp.example.com"}, "X-Method": {"GET"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := http.MethodPost
			if m := tt.header.Get("X-Method"); m != "" {
				method = m
			}
			r := httptest.NewRequest(method, "http://"+tt.host+"/mcp", nil)
			r.Host = tt.host
			if tt.local != nil {
				r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, tt.local))
			}
			for k, vs := range tt.header {
				r.Header[k] = vs
			}
			err := streamhttp.DefaultCheckOrigin(r)
			if tt.ok {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}

// The default body limit (256 KiB) takes the largest listen the core
// accepts by default (1,000 URIs, a 128 KiB filter) and refuses a body one
// byte over it with 413.
func TestDefaultBodyLimit(t *testing.T) {
	e := newEnv(t, nil, nil, envConfig{})
	uris := make([]string, spec.MaxResourceSubscriptions)
	for i := range uris {
		uris[i] = fmt.Sprintf("test://r/%0119d", i) // 128 bytes
	}
	filter := mustJSON(t, map[string]any{spec.KeyResourceSubscriptions: uris})
	require.Greater(t, len(filter), 127<<10)
	require.LessOrEqual(t, len(filter), 128<<10)
	s := e.listen(t, `"largest"`, string(filter))
	assert.Equal(t, spec.MethodAcknowledged, s.message(t)["method"])
	streamOf(t, e.src, "largest").End()
	s.message(t)
	s.end(t)

	small := listenBody(`"over"`, `{}`)
	pad := strings.Repeat(" ", streamhttp.DefaultMaxBodyBytes+1-len(small))
	resp := e.do(t, http.MethodPost, small+pad, listenHeaders())
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Equal(t, streamhttp.MsgBodyTooLarge, readError(t, resp).Error.Message)
}

// AllowedHosts and AllowedOrigins, through Handler.CheckOrigin (what
// ServeHTTP and Front apply): the Host must be listed (a bare name matches
// any port), whatever the local address; a listed origin may make
// cross-origin requests, others may not; a same-origin request always
// passes. With a custom CheckOrigin, AllowedHosts still applies first.
func TestAllowedHostsAndOrigins(t *testing.T) {
	public := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 443}
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	h := newHandler(t, listentest.NewSource(), config{
		AllowedHosts:   []string{"mcp.example.com", "LOCALHOST:8080", "[::1]:8080", "10.0.0.1"},
		AllowedOrigins: []string{"https://App.example", "http://localhost:6274", "https://tools.example:443"},
	})
	tests := []struct {
		name   string
		local  net.Addr
		host   string
		origin string
		site   string
		ok     bool
	}{
		{"listed name, any port", public, "mcp.example.com:8443", "", "", true},
		{"listed name, no port", public, "MCP.example.com", "", "", true},
		{"rebinding to a public bind", public, "attacker.example:8443", "", "", false},
		{"rebinding with a matching Origin", public, "attacker.example:8443", "http://attacker.example:8443", "same-origin", false},
		{"listed name and port", loopback, "localhost:8080", "", "", true},
		{"listed name, other port", loopback, "localhost:9090", "", "", false},
		{"loopback IP not listed", loopback, "127.0.0.1:8080", "", "", false},
		{"IPv6 listed", loopback, "[::1]:8080", "", "", true},
		{"private IP listed (replaces the loopback rule)", loopback, "10.0.0.1", "", "", true},
		{"listed origin, cross-site", public, "mcp.example.com", "https://app.example", "cross-site", true},
		{"listed origin with its default port", public, "mcp.example.com", "https://tools.example", "cross-site", true},
		{"listed origin on loopback", loopback, "localhost:8080", "http://localhost:6274", "same-site", true},
		{"unlisted origin", public, "mcp.example.com", "https://evil.example", "", false},
		{"unlisted origin, cross-site", public, "mcp.example.com", "https://evil.example", "cross-site", false},
		{"listed origin on another scheme", public, "mcp.example.com", "http://app.example", "", false},
		{"same origin", public, "mcp.example.com", "https://mcp.example.com", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "http://x/mcp", nil)
			r.Host = tt.host
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, tt.local))
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			if tt.site != "" {
				r.Header.Set("Sec-Fetch-Site", tt.site)
			}
			if err := h.CheckOrigin(r); tt.ok {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}

	custom := newHandler(t, listentest.NewSource(), config{
		AllowedHosts: []string{"mcp.example.com"},
		CheckOrigin:  func(r *http.Request) error { return nil },
	})
	r := httptest.NewRequest(http.MethodPost, "http://attacker.example/mcp", nil)
	assert.Error(t, custom.CheckOrigin(r), "AllowedHosts applies before a custom CheckOrigin")
	r.Host = "mcp.example.com"
	assert.NoError(t, custom.CheckOrigin(r))
}

// New refuses malformed AllowedHosts and AllowedOrigins, and AllowedOrigins
// with a custom CheckOrigin.
func TestAllowListErrors(t *testing.T) {
	tests := []struct {
		name string
		opts config
		want string
	}{
		{"empty host", config{AllowedHosts: []string{""}},
			`streamhttp: invalid options: AllowedHosts: "" is not a host or host:port`},
		{"URL as a host", config{AllowedHosts: []string{"https://mcp.example.com"}},
			`streamhttp: invalid options: AllowedHosts: "https://mcp.example.com" is not a host or host:port`},
		{"bad port", config{AllowedHosts: []string{"mcp.example.com:http"}},
			`streamhttp: invalid options: AllowedHosts: "mcp.example.com:http" has an invalid port`},
		{"host as an origin", config{AllowedOrigins: []string{"app.example"}},
			`streamhttp: invalid options: AllowedOrigins: "app.example" is not an origin (scheme://host[:port])`},
		{"origin with a path", config{AllowedOrigins: []string{"https://app.example/ui"}},
			`streamhttp: invalid options: AllowedOrigins: "https://app.example/ui" is not an origin (scheme://host[:port])`},
		{"AllowedOrigins with CheckOrigin", config{AllowedOrigins: []string{"https://app.example"},
			CheckOrigin: func(*http.Request) error { return nil }},
			"streamhttp: invalid options: AllowedOrigins is part of the default origin check: it cannot be combined with CheckOrigin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := tt.opts.build(listentest.NewSource())
			assert.Nil(t, h)
			require.EqualError(t, err, tt.want)
			assert.ErrorIs(t, err, streamhttp.ErrInvalidOptions)
		})
	}
}
