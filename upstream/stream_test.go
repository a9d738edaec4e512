package upstream_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/testkit"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/upstream"
)

// Against this library's own server: the acknowledgement narrows the
// filter to what the upstream advertises, notifications come in order
// with their URI, and a graceful shutdown is a completion.
func TestOpenServed(t *testing.T) {
	s := newServer(t, listen.Capabilities{ToolsListChanged: true, ResourcesSubscribe: true}, 0)
	ctx := context.Background()
	filter := listen.Filter{spec.KeyToolsListChanged: true, spec.KeyPromptsListChanged: true,
		spec.KeyResourceSubscriptions: []any{"file:///a.txt"}}
	st, err := upstream.Open(ctx, &upstream.HTTP{URL: s.URL}, filter, upstream.OpenOptions{})
	require.NoError(t, err)
	defer st.Close()
	assert.Equal(t, listen.Filter{spec.KeyToolsListChanged: true, spec.KeyResourceSubscriptions: []any{"file:///a.txt"}}, st.Accepted())

	s.hub.ToolsListChanged()
	_, err = s.hub.ResourceUpdated("file:///a.txt")
	require.NoError(t, err)
	n, err := st.Next()
	require.NoError(t, err)
	assert.Equal(t, spec.MethodToolsListChanged, n.Method)
	assert.Equal(t, listen.KindToolsListChanged, n.Kind())
	n, err = st.Next()
	require.NoError(t, err)
	assert.Equal(t, listen.KindResourceUpdated, n.Kind())
	assert.Equal(t, "file:///a.txt", n.URI)

	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	require.NoError(t, s.handler.Shutdown(sctx))
	_, err = st.Next()
	assert.ErrorIs(t, err, upstream.ErrCompleted)
	_, err = st.Next()
	assert.ErrorIs(t, err, upstream.ErrClosed, "a stream that ended stays ended")
}

// Each way an open can fail is told apart.
func TestOpenFails(t *testing.T) {
	jsonError := func(status int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}
	}
	tagged := func(method, params string) string {
		return `{"jsonrpc":"2.0","method":"` + method + `","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":ID}` + params + `}}`
	}
	for _, tc := range []struct {
		name    string
		handler http.Handler
		want    error
		code    int
	}{
		{"method not found", jsonError(404, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`), &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound}, -32601},
		{"error on the stream", sse(event(`{"jsonrpc":"2.0","id":ID,"error":{"code":-32602,"message":"Invalid params"}}`), false), &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams}, -32602},
		{"completed at once", sse(event(`{"jsonrpc":"2.0","id":ID,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":ID}}}`), false), upstream.ErrCompleted, 0},
		{"ack accepts more", sse(event(tagged(spec.MethodAcknowledged, `,"notifications":{"toolsListChanged":true,"promptsListChanged":true}`)), true), upstream.ErrProtocol, 0},
		{"not the ack first", sse(event(tagged(spec.MethodToolsListChanged, ``)), true), upstream.ErrProtocol, 0},
		{"another subscription's ack", sse(event(strings.Replace(tagged(spec.MethodAcknowledged, `,"notifications":{}`), "ID", `"other"`, 1)), true), upstream.ErrProtocol, 0},
		{"not JSON", sse(event(`{`), true), upstream.ErrProtocol, 0},
		{"too large", sse(event(strings.Repeat("x", 100<<10)), true), upstream.ErrTooLarge, 0},
		{"cut before the ack", sse(": hello\n\n", false), upstream.ErrDropped, 0},
		{"no ack in time", sse(": hello\n\n", true), upstream.ErrAckTimeout, 0},
		{"server error", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }), upstream.ErrDropped, 0},
		{"not an MCP endpoint", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(404) }), upstream.ErrProtocol, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(tc.handler)
			defer ts.Close()
			defer ts.CloseClientConnections()
			_, err := upstream.Open(context.Background(), &upstream.HTTP{URL: ts.URL, MaxMessageBytes: 64 << 10},
				listen.Filter{spec.KeyToolsListChanged: true}, upstream.OpenOptions{AckTimeout: 300 * time.Millisecond})
			require.ErrorIs(t, err, tc.want)
			var e *jsonrpc.Error
			if tc.code != 0 {
				require.True(t, errors.As(err, &e))
				assert.Equal(t, tc.code, e.Code)
			} else {
				assert.False(t, errors.As(err, &e), "not an error of the upstream's: %v", err)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		ts := httptest.NewServer(http.NotFoundHandler())
		url := ts.URL
		ts.Close()
		_, err := upstream.Open(context.Background(), &upstream.HTTP{URL: url}, listen.Filter{spec.KeyToolsListChanged: true}, upstream.OpenOptions{})
		assert.ErrorIs(t, err, upstream.ErrDropped)
	})
}

// After the acknowledgement, the stream's end says what happened.
func TestStreamEnds(t *testing.T) {
	ack := event(ackTools)
	for _, tc := range []struct {
		name string
		body string
		hold bool
		idle time.Duration
		want error
	}{
		{"completion", ack + event(`{"jsonrpc":"2.0","id":ID,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":ID}}}`), false, 0, upstream.ErrCompleted},
		{"error", ack + event(`{"jsonrpc":"2.0","id":ID,"error":{"code":-32603,"message":"Subscription source failed"}}`), false, 0, &jsonrpc.Error{Code: jsonrpc.CodeInternalError}},
		{"connection closed", ack, false, 0, upstream.ErrDropped},
		{"cut inside an event", ack + "event: message\ndata: {", false, 0, upstream.ErrDropped},
		{"silent past the idle timeout", ack, true, 200 * time.Millisecond, upstream.ErrSilent},
		{"a second ack", ack + ack, true, 0, upstream.ErrProtocol},
		{"a kind not asked for is still delivered", ack + event(`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":ID}}}`), false, 0, nil},
		{"resources/updated without uri", ack + event(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":ID}}}`), true, 0, upstream.ErrProtocol},
		{"a request on the stream", ack + event(`{"jsonrpc":"2.0","id":7,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":ID}}}`), true, 0, upstream.ErrProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(sse(tc.body, tc.hold))
			defer ts.Close()
			defer ts.CloseClientConnections()
			st, err := upstream.Open(context.Background(), &upstream.HTTP{URL: ts.URL, IdleTimeout: tc.idle},
				listen.Filter{spec.KeyToolsListChanged: true}, upstream.OpenOptions{})
			require.NoError(t, err)
			defer st.Close()
			_, err = st.Next()
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

// The automatic idle timeout learned on one stream arms the transport's
// later streams from their start: a path stalled before a new stream's
// first keep-alive is still noticed.
func TestIdleTimeoutLearnedAcrossStreams(t *testing.T) {
	s := newServer(t, all, 100*time.Millisecond)
	p := testkit.NewProxy(t, strings.TrimPrefix(s.URL, "http://"))
	tr := &upstream.HTTP{URL: "http://" + p.Addr()}
	f := listen.Filter{spec.KeyToolsListChanged: true}
	first, err := upstream.Open(context.Background(), tr, f, upstream.OpenOptions{})
	require.NoError(t, err)
	read := make(chan error, 1)
	go func() { // reads the keep-alives; ends at Close
		_, err := first.Next()
		read <- err
	}()
	testkit.Recv(t, s.keepAlives, wait)
	testkit.Recv(t, s.keepAlives, wait) // the first has been read
	first.Close()
	assert.ErrorIs(t, testkit.Recv(t, read, wait), upstream.ErrClosed)

	second, err := upstream.Open(context.Background(), tr, f, upstream.OpenOptions{})
	require.NoError(t, err)
	defer second.Close()
	p.Stall()
	ended := make(chan error, 1)
	go func() { // ends with the stream
		_, err := second.Next()
		ended <- err
	}()
	assert.ErrorIs(t, testkit.Recv(t, ended, wait), upstream.ErrSilent)
}
