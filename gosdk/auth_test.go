package gosdk_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/gosdk"
)

// requireToken is a go-sdk receiving middleware that refuses every request
// without a token, or without scope when scope is set.
func requireToken(scope string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ex := req.GetExtra()
			if ex == nil || ex.TokenInfo == nil {
				return nil, errors.New("unauthenticated")
			}
			if scope != "" && !slices.Contains(ex.TokenInfo.Scopes, scope) {
				return nil, errors.New("missing scope " + scope)
			}
			return next(ctx, method, req)
		}
	}
}

// recordingSource records the Auth of every listen it opens.
type recordingSource struct {
	listen.Source
	mu    sync.Mutex
	auths []any
}

func (s *recordingSource) Open(ctx context.Context, req *listen.Request, f listen.Filter) (listen.Filter, listen.Stream, error) {
	s.mu.Lock()
	s.auths = append(s.auths, req.Auth)
	s.mu.Unlock()
	return s.Source.Open(ctx, req, f)
}

// bearer is an http.RoundTripper that adds a bearer token.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// NewHandler composes with the go-sdk's auth: behind auth.RequireBearerToken
// and with a receiving middleware that refuses requests without a token,
// NewHandler works (the bridge's in-process calls carry Options.Token), a
// go-sdk client with a token is served, a listen's listen.Request.Auth is
// the go-sdk's *auth.TokenInfo with no extra wiring, and a listen whose
// token expires ends at the expiry with its completion result (reason
// listen.ErrExpired). Before, NewHandler failed behind such a
// middleware, Auth was nil, and nothing ended a stream at its token's
// expiry.
func TestHTTPBehindAuth(t *testing.T) {
	var shortExpiry time.Time
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		switch token {
		case "ann":
			return &auth.TokenInfo{UserID: "ann", Scopes: []string{"mcp"}, Expiration: time.Now().Add(time.Hour)}, nil
		case "short":
			return &auth.TokenInfo{UserID: "bob", Scopes: []string{"mcp"}, Expiration: shortExpiry}, nil
		}
		return nil, auth.ErrInvalidToken
	}
	srv := plainServer()
	srv.AddReceivingMiddleware(requireToken(""))
	rec := &recordingSource{}
	reasons := make(chan error, 4)
	h, err := gosdk.NewHandler(srv, gosdk.HandlerOptions{
		WrapSource: func(s listen.Source) listen.Source { rec.Source = s; return rec },
		Options:    gosdk.Options{Listen: listen.Options{OnClose: func(_ *listen.Subscription, reason error) { reasons <- reason }}},
	})
	require.NoError(t, err)
	ts := httptest.NewServer(auth.RequireBearerToken(verify, nil)(h))
	defer ts.Close()

	// A go-sdk client with a token: discover, its automatic listen, a call.
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
	})
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{"ann"}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	require.NoError(t, err)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	require.NoError(t, err)
	assert.Equal(t, "hi", res.Content[0].(*mcp.TextContent).Text)
	require.Eventually(t, func() bool { return h.Server().Stats().Active == 1 }, failsafe, failsafeTick)
	rec.mu.Lock()
	require.Len(t, rec.auths, 1)
	ti, ok := rec.auths[0].(*auth.TokenInfo)
	rec.mu.Unlock()
	require.True(t, ok, "listen.Request.Auth is the go-sdk's *auth.TokenInfo")
	assert.Equal(t, "ann", ti.UserID)

	// A listen whose token expires ends when it does.
	shortExpiry = time.Now().Add(300 * time.Millisecond)
	req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(
		`{"jsonrpc":"2.0","id":"s","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	resp, err := (&http.Client{Transport: bearer{"short"}}).Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	short := &stream{t: t, resp: resp, msgs: make(chan msg, 10), done: make(chan struct{})}
	go short.read()
	assert.Equal(t, "notifications/subscriptions/acknowledged", short.next().Method)
	assert.Equal(t, []string{"result"}, short.rest(), "the completion result at the expiry")
	assert.False(t, time.Now().Before(shortExpiry))
	assert.ErrorIs(t, <-reasons, listen.ErrExpired)

	// Without a token, RequireBearerToken refuses.
	resp = post(t, ts.URL, 1, "tools/list", "2026-07-28", nil)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	require.NoError(t, h.Shutdown(context.Background()))
	_ = cs.Close()
}

// A middleware that asks more of a token than BridgeToken carries makes
// NewHandler fail with one clear message (one prefix, naming Options.Token);
// an Options.Token it accepts makes it work. Before, the message repeated
// its prefix: "gosdk: server/discover: gosdk: server/discover: ...".
func TestHTTPBridgeToken(t *testing.T) {
	srv := plainServer()
	srv.AddReceivingMiddleware(requireToken("mcp"))
	_, err := gosdk.NewHandler(srv, gosdk.HandlerOptions{})
	require.Error(t, err)
	t.Log(err)
	assert.Equal(t, 1, strings.Count(err.Error(), "gosdk:"), "one prefix: %v", err)
	assert.Contains(t, err.Error(), "missing scope mcp")
	assert.Contains(t, err.Error(), "Options.Token")

	h, err := gosdk.NewHandler(srv, gosdk.HandlerOptions{Options: gosdk.Options{
		Token: &auth.TokenInfo{UserID: "mcplisten-gosdk", Scopes: []string{"mcp"}},
	}})
	require.NoError(t, err)
	require.NoError(t, h.Shutdown(context.Background()))
}

// Resources registered without a SubscribeHandler are reported when the
// handler is made, with the remedy: every listen would be acknowledged
// without its resourceSubscriptions. A server with one is not reported.
func TestHTTPWarnsWithoutSubscribeHandler(t *testing.T) {
	for _, withHandler := range []bool{false, true} {
		opts := &mcp.ServerOptions{}
		if withHandler {
			opts.SubscribeHandler = func(context.Context, *mcp.SubscribeRequest) error { return nil }
			opts.UnsubscribeHandler = func(context.Context, *mcp.UnsubscribeRequest) error { return nil }
		}
		srv := mcp.NewServer(&mcp.Implementation{Name: "r", Version: "0"}, opts)
		srv.AddResource(&mcp.Resource{URI: uriA, Name: "a"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
		logs := &logBuffer{}
		h, err := gosdk.NewHandler(srv, gosdk.HandlerOptions{Options: gosdk.Options{Logger: logs.Logger(slog.LevelWarn)}})
		require.NoError(t, err)
		const warning = "has resources but does not advertise resources.subscribe"
		if withHandler {
			assert.NotContains(t, logs.String(), warning)
		} else {
			assert.Contains(t, logs.String(), warning)
			assert.Contains(t, logs.String(), "SubscribeHandler")
		}
		require.NoError(t, h.Shutdown(context.Background()))
	}
}
