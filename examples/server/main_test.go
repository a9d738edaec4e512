package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen/examples/fixture"
	"github.com/mcplisten/listen/examples/internal/command"
	"github.com/mcplisten/listen/examples/internal/listencheck"
	"github.com/mcplisten/listen/hub"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func startServer(t *testing.T) (*server, string) {
	t.Helper()
	srv, err := newServer(slog.New(slog.NewTextHandler(io.Discard, nil)), &command.HTTPFlags{MaxStreams: 100}, tuning{}, nil)
	require.NoError(t, err)
	ts := httptest.NewServer(srv.handler)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, srv.handler.Shutdown(ctx))
		ts.Close()
	})
	return srv, ts.URL
}

// The official go-sdk v1.8.0 client, which we did not write, opens listens
// on our server and receives the acknowledgements and the notifications it
// asked for.
func TestGoSDKClientInterop(t *testing.T) {
	_, url := startServer(t)
	fixture.CheckClientListen(t, url)
}

// meta is the _meta of a request whose client declares no capabilities.
const meta = listencheck.Meta

func post(t *testing.T, ctx context.Context, url, method, body string) *http.Response {
	t.Helper()
	req := listencheck.NewRequest(t, ctx, url, method, body)
	if method == "tools/call" {
		var p struct {
			Params struct{ Name string } `json:"params"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &p))
		req.Header.Set("Mcp-Name", p.Params.Name)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

func callTool(t *testing.T, url, name, args string) {
	t.Helper()
	resp := post(t, t.Context(), url, "tools/call", `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{`+meta+`,"name":"`+name+`","arguments":`+args+`}}`)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.NotContains(t, string(b), `"error"`)
}

// Each listen stream gets exactly what it asked for, in order, and nothing
// else; the trigger tools change the go-sdk server only, and its own
// notifications reach the streams.
func TestListenStreamsGetOnlyWhatTheyAskedFor(t *testing.T) {
	_, url := startServer(t)
	listencheck.OnlyWhatAsked(t,
		func(ctx context.Context, method, body string) *http.Response { return post(t, ctx, url, method, body) },
		func(name, args string) { callTool(t, url, name, args) },
		fixture.ReadmeURI)
}

// -overflow takes the hub's policies by name, and nothing else.
func TestOverflowFlag(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want hub.Overflow
		ok   bool
	}{
		{"drop_oldest", hub.DropOldest, true},
		{"drop_newest", hub.DropNewest, true},
		{"end_listener", hub.EndListener, true},
		{"End_Listener", 0, false},
		{"", 0, false},
	} {
		var o overflowFlag
		err := o.UnmarshalText([]byte(tt.in))
		require.Equal(t, tt.ok, err == nil, "%q: %v", tt.in, err)
		require.Equal(t, tt.want, hub.Overflow(o), tt.in)
		if tt.ok {
			b, _ := o.MarshalText()
			require.Equal(t, tt.in, string(b))
		}
	}
}
