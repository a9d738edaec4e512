package streamhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

// Front sends listen POSTs (here by their Mcp-Method header; see
// TestFrontRoutesListenBodies for the body) to the listen handler and
// everything else to the other handler.
func TestFrontRouting(t *testing.T) {
	mark := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Routed", name)
			w.WriteHeader(http.StatusNoContent)
		})
	}
	f := streamhttp.Front(mark("listen"), mark("other"))
	tests := []struct {
		name   string
		method string
		header http.Header
		want   string
	}{
		{"listen POST", http.MethodPost, http.Header{"Mcp-Method": {"subscriptions/listen"}}, "listen"},
		{"header name in any case", http.MethodPost, http.Header{"MCP-METHOD": {"subscriptions/listen"}}, "listen"},
		{"tools/call POST", http.MethodPost, http.Header{"Mcp-Method": {"tools/call"}}, "other"},
		{"server/discover POST", http.MethodPost, http.Header{"Mcp-Method": {"server/discover"}}, "other"},
		{"POST without Mcp-Method", http.MethodPost, nil, "other"},
		{"header values are case-sensitive", http.MethodPost, http.Header{"Mcp-Method": {"Subscriptions/Listen"}}, "other"},
		{"GET with the listen header", http.MethodGet, http.Header{"Mcp-Method": {"subscriptions/listen"}}, "other"},
		{"DELETE", http.MethodDelete, nil, "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "/mcp", strings.NewReader(`{}`))
			for k, vs := range tt.header {
				for _, v := range vs {
					r.Header.Add(k, v)
				}
			}
			w := httptest.NewRecorder()
			f.ServeHTTP(w, r)
			assert.Equal(t, tt.want, w.Header().Get("X-Routed"))
			assert.Equal(t, tt.want == "listen", streamhttp.IsListen(r))
		})
	}

	nf := streamhttp.Front(mark("listen"), nil)
	w := httptest.NewRecorder()
	nf.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/mcp", nil))
	assert.Equal(t, http.StatusNotFound, w.Code)
	assert.Panics(t, func() { streamhttp.Front(nil, mark("other")) })
}

// Front protects every request it routes, not only listens: a cross-origin
// browser request, a DNS-rebinding Host and a Host outside the listen
// Handler's AllowedHosts are refused with 403 before the other handler sees
// them, with the Handler's own rules (reported to its Server's OnRefuse); FrontWith
// can choose another check or none. Before, only listens were checked: a
// cross-site tools/call reached the other handler and ran.
func TestFrontChecksEveryRequest(t *testing.T) {
	var reached []string
	other := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = append(reached, r.Header.Get("X-Case"))
		w.WriteHeader(http.StatusOK)
	})
	var reported []error
	h := newHandler(t, listentest.NewSource(), config{
		Listen:         listen.Options{Capabilities: caps()},
		AllowedOrigins: []string{"https://app.example"},
		OnRefuse:       func(_ *listen.Request, err error) { reported = append(reported, err) },
	})
	withH := streamhttp.Front(h, other)
	hosts := streamhttp.Front(newHandler(t, listentest.NewSource(), config{AllowedHosts: []string{"mcp.example.com"}}), other)
	wrapped := streamhttp.Front(http.HandlerFunc(h.ServeHTTP), other)
	unchecked := streamhttp.FrontWith(h, other, streamhttp.FrontOptions{Unchecked: true})
	custom := streamhttp.FrontWith(h, other, streamhttp.FrontOptions{CheckOrigin: func(r *http.Request) error {
		if r.Header.Get("X-Key") != "k" {
			return errors.New("no key")
		}
		return nil
	}})
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	tests := []struct {
		name    string
		f       http.Handler
		method  string
		host    string
		header  http.Header
		reaches bool
	}{
		{"cross-site tools/call", withH, http.MethodPost, "localhost:8080",
			http.Header{"Mcp-Method": {"tools/call"}, "Origin": {"http://evil.example"}, "Sec-Fetch-Site": {"cross-site"}}, false},
		{"cross-origin tools/call, no Sec-Fetch-Site", withH, http.MethodPost, "localhost:8080",
			http.Header{"Mcp-Method": {"tools/call"}, "Origin": {"http://evil.example"}}, false},
		{"Origin null", withH, http.MethodPost, "localhost:8080",
			http.Header{"Mcp-Method": {"tools/call"}, "Origin": {"null"}}, false},
		{"cross-origin GET", withH, http.MethodGet, "localhost:8080", http.Header{"Origin": {"http://evil.example"}}, false},
		{"DNS rebinding", withH, http.MethodPost, "attacker.example:8080", http.Header{"Mcp-Method": {"tools/call"}}, false},
		{"the Handler's AllowedOrigins", withH, http.MethodPost, "localhost:8080",
			http.Header{"Mcp-Method": {"tools/call"}, "Origin": {"https://app.example"}, "Sec-Fetch-Site": {"cross-site"}}, true},
		{"same-origin browser", withH, http.MethodPost, "localhost:8080",
			http.Header{"Mcp-Method": {"tools/call"}, "Origin": {"http://localhost:8080"}}, true},
		{"non-browser client", withH, http.MethodPost, "127.0.0.1:8080", http.Header{"Mcp-Method": {"server/discover"}}, true},
		{"the Handler's AllowedHosts", hosts, http.MethodPost, "mcp.example.com", http.Header{"Mcp-Method": {"tools/call"}}, true},
		{"a Host outside AllowedHosts", hosts, http.MethodPost, "localhost:8080", http.Header{"Mcp-Method": {"tools/call"}}, false},
		{"another listen handler: DefaultCheckOrigin", wrapped, http.MethodPost, "localhost:8080",
			http.Header{"Mcp-Method": {"tools/call"}, "Sec-Fetch-Site": {"cross-site"}}, false},
		{"unchecked", unchecked, http.MethodPost, "attacker.example:8080",
			http.Header{"Mcp-Method": {"tools/call"}, "Origin": {"http://evil.example"}}, true},
		{"custom check refuses", custom, http.MethodPost, "localhost:8080", http.Header{"Mcp-Method": {"tools/call"}}, false},
		{"custom check passes", custom, http.MethodPost, "attacker.example", http.Header{"Mcp-Method": {"tools/call"}, "X-Key": {"k"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reached, reported = nil, nil
			r := httptest.NewRequest(tt.method, "http://x/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`))
			r.Host = tt.host
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, loopback))
			for k, vs := range tt.header {
				r.Header[k] = vs
			}
			r.Header.Set("X-Case", tt.name)
			w := httptest.NewRecorder()
			tt.f.ServeHTTP(w, r)
			if tt.reaches {
				assert.Equal(t, http.StatusOK, w.Code)
				assert.Equal(t, []string{tt.name}, reached)
				return
			}
			assert.Empty(t, reached, "the other handler saw the request")
			assert.Equal(t, http.StatusForbidden, w.Code)
			assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
			assert.JSONEq(t, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"Forbidden: invalid Origin or Host"}}`, w.Body.String())
			if tt.f == withH {
				require.Len(t, reported, 1, "reported to the Server's OnRefuse")
				assert.Equal(t, streamhttp.MsgForbidden, jsonrpc.AsError(reported[0], "").Message)
			}
		})
	}
}

// Through Front over HTTP, a listen streams from our Handler while the other
// requests reach the existing server (here a stand-in for the go-sdk's
// StreamableHTTPHandler).
func TestFrontOverHTTP(t *testing.T) {
	sdk := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"echo":`+string(body)+`}}`)
	})
	e := newEnv(t, nil, nil, envConfig{wrap: func(h http.Handler) http.Handler { return streamhttp.Front(h, sdk) }})

	s := e.listen(t, `"f"`, `{"toolsListChanged":true}`)
	assert.Equal(t, spec.MethodAcknowledged, s.message(t)["method"])

	resp := e.do(t, http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		http.Header{"Mcp-Method": {"tools/list"}, "Content-Type": {"application/json"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var got struct {
		Result struct {
			Echo json.RawMessage `json:"echo"`
		} `json:"result"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, string(got.Result.Echo))

	streamOf(t, e.src, "f").End()
	assert.Equal(t, `"f"`, subID(t, s.message(t), "result"))
	s.end(t)
}

// New refuses a nil Source and invalid options with an error that names
// what is wrong.
func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		src  listen.Source
		opts config
		want string
	}{

		{"negative MaxBodyBytes", listentest.NewSource(), config{MaxBodyBytes: -5},
			"streamhttp: invalid options: MaxBodyBytes must not be negative (zero means the default), got -5"},
		{"negative ReadTimeout", listentest.NewSource(), config{ReadTimeout: -time.Second},
			"streamhttp: invalid options: ReadTimeout must not be negative (zero means the default), got -1s"},
		{"negative KeepAlive", listentest.NewSource(), config{KeepAlive: -time.Second},
			"streamhttp: invalid options: KeepAlive must not be negative (zero means the default), got -1s"},
		{"negative WriteTimeout", listentest.NewSource(), config{WriteTimeout: -1},
			"streamhttp: invalid options: WriteTimeout must not be negative (zero means the default), got -1ns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := tt.opts.build(tt.src)
			assert.Nil(t, h)
			require.EqualError(t, err, tt.want)
			if tt.src != nil {
				assert.ErrorIs(t, err, streamhttp.ErrInvalidOptions)
			}
		})
	}
}
