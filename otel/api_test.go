package otel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	listenotel "github.com/mcplisten/listen/otel"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/stdio"
	"github.com/mcplisten/listen/streamhttp"
)

// Without a provider (or with the no-op one) nothing is wrapped: the hub
// keeps the hooks it was given, the transport the source and the options
// it was given.
func TestDisabled(t *testing.T) {
	for name, mp := range map[string]listenotel.Options{
		"nil":  {},
		"noop": {MeterProvider: noop.NewMeterProvider()},
	} {
		t.Run(name, func(t *testing.T) {
			m, err := listenotel.New(mp)
			require.NoError(t, err)
			assert.False(t, m.Enabled())
			var hubOpts hub.Options
			m.InstrumentHub(&hubOpts)
			assert.Nil(t, hubOpts.OnPublish)
			assert.Nil(t, hubOpts.OnOverflow)
			h, err := hub.New(hub.Options{})
			require.NoError(t, err)
			assert.Same(t, h, m.Source(h))
			assert.Nil(t, m.Transport("stdio"))
			m.Transport("stdio").OnOpen(nil) // a nil Transport records nothing
			var hopts streamhttp.Options
			m.InstrumentHTTP(&hopts)
			assert.Nil(t, hopts.OnKeepAlive)
			var lopts listen.Options
			m.Instrument(&lopts)
			assert.Nil(t, lopts.OnOpen)
			assert.Nil(t, lopts.OnClose)
			assert.Nil(t, lopts.OnRefuse)
		})
	}
}

func TestRefusalCause(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{jsonrpc.NewError(jsonrpc.CodeInternalError, "Server subscription capacity exhausted").WithCause(listen.ErrOverloaded), listenotel.CauseCapacity},
		{jsonrpc.NewError(jsonrpc.CodeInternalError, "Server subscription capacity exhausted").WithCause(listen.Failed(listen.ErrOverloaded)), listenotel.CauseCapacity},
		{jsonrpc.NewError(jsonrpc.CodeInternalError, "Server is shutting down").WithCause(listen.ErrShutdown), listenotel.CauseShutdown},
		{jsonrpc.NewError(jsonrpc.CodeInternalError, "Too many subscriptions open for this client").WithCause(listen.ErrOverQuota), listenotel.CauseQuota},
		{listen.ErrExpired, listenotel.CauseAuth},
		{jsonrpc.NewError(jsonrpc.CodeInvalidRequest, streamhttp.MsgUnauthorized).WithCause(errors.New("no token")), listenotel.CauseAuth},
		{jsonrpc.NewError(jsonrpc.CodeInvalidRequest, streamhttp.MsgUnauthorized).WithCause(&streamhttp.AuthError{Status: 403}), listenotel.CauseAuth},
		{jsonrpc.NewError(jsonrpc.CodeInvalidRequest, streamhttp.MsgForbidden), listenotel.CauseAuth},
		{&streamhttp.AuthError{}, listenotel.CauseAuth},
		{jsonrpc.NewError(jsonrpc.CodeParseError, "Parse error"), listenotel.CauseValidation},
		{jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "Request body too large"), listenotel.CauseValidation},
		{jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "Duplicate in-flight request id"), listenotel.CauseValidation},
		{jsonrpc.NewError(jsonrpc.CodeInvalidParams, "subscriptions/listen requires a notifications object"), listenotel.CauseValidation},
		{jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found: subscriptions/listen"), listenotel.CauseValidation},
		{jsonrpc.NewError(jsonrpc.CodeHeaderMismatch, "Header mismatch: missing Mcp-Method header"), listenotel.CauseValidation},
		{spec.UnsupportedVersionError(nil, "2099-01-01"), listenotel.CauseValidation},
		{jsonrpc.NewError(jsonrpc.CodeMissingRequiredClientCapability, "Missing required client capability"), listenotel.CauseValidation},
		{jsonrpc.NewError(jsonrpc.CodeInternalError, "Subscription source failed to open").WithCause(errors.New("db down")), listenotel.CauseError},
		{errors.New("not a wire error"), listenotel.CauseError},
		{nil, listenotel.CauseError},
	} {
		assert.Equal(t, tc.want, listenotel.RefusalCause(tc.err), "%v", tc.err)
	}
}

func TestClassesAreClassify(t *testing.T) {
	for _, tc := range []struct {
		reason error
		want   string
	}{
		{listen.ErrComplete, listenotel.ClassComplete},
		{listen.Cancelled("bye"), listenotel.ClassCancelled},
		{listen.Disconnected(io.EOF), listenotel.ClassDisconnected},
		{listen.Failed(errors.New("boom")), listenotel.ClassError},
		{listen.ErrShutdown, listenotel.ClassShutdown},
		{fmt.Errorf("drained: %w", listen.ErrShutdown), listenotel.ClassShutdown},
		{errors.New("who knows"), listenotel.ClassOther},
		{nil, listenotel.ClassOther},
		{listen.ErrRevoked, listenotel.ClassRevoked},
		{fmt.Errorf("%w: grant withdrawn", listen.ErrRevoked), listenotel.ClassRevoked},
		{listen.ErrExpired, listenotel.ClassExpired},
		{listen.ErrLifetime, listenotel.ClassLifetime},
		{listen.ErrFellBehind, listenotel.ClassFellBehind},
	} {
		assert.Equal(t, tc.want, listen.Classify(tc.reason), "%v", tc.reason)
	}
}

// Each early ending is a close reason of its own in the metrics.
func TestEarlyEndingsAreCloseReasons(t *testing.T) {
	m, reader := newMetrics(t)
	tr := m.Transport("test")
	for _, r := range []error{listen.ErrRevoked, listen.ErrExpired, listen.ErrLifetime, listen.ErrFellBehind, listen.ErrLifetime} {
		tr.OnOpen(nil)
		tr.OnClose(nil, r)
	}
	const tt = "mcp.listen.transport=test"
	assert.Equal(t, map[string]int64{
		"mcp.listen.streams.open{" + tt + "}":                                       0,
		"mcp.listen.streams.opened{" + tt + "}":                                     5,
		"mcp.listen.streams.closed{mcp.listen.close.reason=revoked," + tt + "}":     1,
		"mcp.listen.streams.closed{mcp.listen.close.reason=expired," + tt + "}":     1,
		"mcp.listen.streams.closed{mcp.listen.close.reason=lifetime," + tt + "}":    2,
		"mcp.listen.streams.closed{mcp.listen.close.reason=fell_behind," + tt + "}": 1,
	}, series(t, reader))
}

// A close counts as cut by the write deadline only when it is a disconnect
// caused by a missed deadline.
func TestWriteTimeouts(t *testing.T) {
	m, reader := newMetrics(t)
	tr := m.Transport("test")
	assert.Same(t, tr, m.Transport("test"))
	assert.Equal(t, "test", tr.Kind())
	reasons := []error{
		listen.Disconnected(os.ErrDeadlineExceeded),                              // cut (streamhttp)
		listen.Disconnected(fmt.Errorf("write tcp: %w", os.ErrDeadlineExceeded)), // cut
		listen.Disconnected(fmt.Errorf("%w (after 5s)", stdio.ErrWriteTimeout)),  // cut (stdio)
		listen.Disconnected(io.EOF),                                              // a client that left
		listen.Disconnected(listen.ErrOwnerGone),                                 // its owner ended
		listen.Failed(os.ErrDeadlineExceeded),                                    // a source's own timeout
		listen.ErrComplete,
	}
	for _, r := range reasons {
		tr.OnOpen(nil)
		tr.OnClose(nil, r)
	}
	const tt = "mcp.listen.transport=test"
	assert.Equal(t, map[string]int64{
		"mcp.listen.streams.open{" + tt + "}":                                        0,
		"mcp.listen.streams.opened{" + tt + "}":                                      7,
		"mcp.listen.streams.closed{mcp.listen.close.reason=disconnected," + tt + "}": 5,
		"mcp.listen.streams.closed{mcp.listen.close.reason=error," + tt + "}":        1,
		"mcp.listen.streams.closed{mcp.listen.close.reason=complete," + tt + "}":     1,
		"mcp.listen.streams.write_timeouts{" + tt + "}":                              3,
	}, series(t, reader))
}

// Instrument and InstrumentHTTP record, then call the hooks that were set
// before: the Server's streams and refusals under their transport kind
// (a refusal whose request could not be read under none), its capacity
// without a transport, Streamable HTTP's keep-alives.
func TestInstrumentChainsHooks(t *testing.T) {
	m, reader := newMetrics(t)
	var calls []string
	hopts := streamhttp.Options{
		OnKeepAlive: func(*listen.Subscription) { calls = append(calls, "http keep-alive") },
	}
	m.InstrumentHTTP(&hopts)
	lopts := listen.Options{
		OnOpen:   func(sub *listen.Subscription) { calls = append(calls, sub.TransportKind()+" open") },
		OnClose:  func(sub *listen.Subscription, _ error) { calls = append(calls, sub.TransportKind()+" close") },
		OnRefuse: func(*listen.Request, error) { calls = append(calls, "refuse") },
	}
	m.Instrument(&lopts)
	httpSub := openSub(t, streamhttp.TransportKind)
	stdioSub := openSub(t, stdio.TransportKind)

	lopts.OnOpen(httpSub)
	hopts.OnKeepAlive(httpSub)
	lopts.OnRefuse(&listen.Request{Transport: listen.Transport{Kind: streamhttp.TransportKind}},
		jsonrpc.NewError(jsonrpc.CodeInternalError, "Server subscription capacity exhausted").WithCause(listen.ErrOverloaded))
	lopts.OnClose(httpSub, listen.ErrShutdown)
	lopts.OnOpen(stdioSub)
	lopts.OnRefuse(&listen.Request{Transport: listen.Transport{Kind: stdio.TransportKind}},
		jsonrpc.NewError(jsonrpc.CodeInvalidParams, "subscriptions/listen requires a notifications object"))
	lopts.OnRefuse(nil, jsonrpc.NewError(jsonrpc.CodeParseError, "Parse error"))
	lopts.OnClose(stdioSub, listen.Cancelled(""))
	assert.Equal(t, []string{"streamable_http open", "http keep-alive", "refuse", "streamable_http close",
		"stdio open", "refuse", "refuse", "stdio close"}, calls)

	const h, s, none = "mcp.listen.transport=streamable_http", "mcp.listen.transport=stdio", "mcp.listen.transport="
	assert.Equal(t, map[string]int64{
		"mcp.listen.streams.capacity{}":                                                 defaultMaxStreams,
		"mcp.listen.streams.open{" + none + "}":                                         0,
		"mcp.listen.requests.refused{mcp.listen.refusal.cause=validation," + none + "}": 1,
		"mcp.listen.streams.open{" + h + "}":                                            0,
		"mcp.listen.streams.opened{" + h + "}":                                          1,
		"mcp.listen.keepalives.sent{" + h + "}":                                         1,
		"mcp.listen.requests.refused{mcp.listen.refusal.cause=capacity," + h + "}":      1,
		"mcp.listen.streams.closed{mcp.listen.close.reason=shutdown," + h + "}":         1,
		"mcp.listen.streams.open{" + s + "}":                                            0,
		"mcp.listen.streams.opened{" + s + "}":                                          1,
		"mcp.listen.requests.refused{mcp.listen.refusal.cause=validation," + s + "}":    1,
		"mcp.listen.streams.closed{mcp.listen.close.reason=cancelled," + s + "}":        1,
	}, series(t, reader))
}

// openSub opens a subscription of the given transport kind on a test
// source, closed at the end of the test.
func openSub(t *testing.T, kind string) *listen.Subscription {
	t.Helper()
	sub, err := listen.Open(context.Background(), listentest.NewSource(), &listen.Request{
		ID:                 jsonrpc.StringID(kind),
		ProtocolVersion:    spec.ProtocolVersion,
		Notifications:      listen.Filter{spec.KeyToolsListChanged: true},
		ClientCapabilities: map[string]any{},
		Transport:          listen.Transport{Kind: kind},
	}, &listen.Options{Capabilities: listen.Capabilities{ToolsListChanged: true}})
	require.NoError(t, err)
	t.Cleanup(func() { sub.Close(nil) })
	return sub
}

// InstrumentHub records, then calls the hooks it wraps, and leaves the
// others alone.
func TestInstrumentHubChains(t *testing.T) {
	m, reader := newMetrics(t)
	rec := &hubRecorder{}
	hopts := hub.Options{MaxBuffer: 1, Overflow: hub.DropNewest,
		OnOpen: rec.OnOpen, OnPublish: rec.OnPublish, OnOverflow: rec.OnOverflow, OnShutdown: rec.OnShutdown, OnClose: rec.OnClose}
	m.InstrumentHub(&hopts)
	h, err := hub.New(hopts)
	require.NoError(t, err)
	_, st, err := h.Open(context.Background(), nil, listen.Filter{spec.KeyResourceSubscriptions: []any{"file:///a"}})
	require.NoError(t, err)
	for range 3 {
		_, err := h.ResourceUpdated("file:///a")
		require.NoError(t, err)
	}
	h.PromptsListChanged() // matches nobody: published all the same
	ended, end := context.WithCancel(context.Background())
	end()
	_ = h.Shutdown(ended) // completes every listener now, waits for nothing
	st.Close(nil)
	assert.Equal(t, []string{"open", "publish", "publish", "overflow", "publish", "overflow", "publish", "shutdown", "close"}, rec.calls)
	const upd, pr = "mcp.listen.notification.kind=resource_updated", "mcp.listen.notification.kind=prompts_list_changed"
	assert.Equal(t, map[string]int64{
		"mcp.listen.notifications.published{" + upd + "}": 3,
		"mcp.listen.notifications.published{" + pr + "}":  1,
		"mcp.listen.notifications.dropped{" + upd + "}":   2,
		"mcp.listen.fanout.duration{" + upd + "}":         3,
		"mcp.listen.fanout.duration{" + pr + "}":          1,
	}, series(t, reader))
}

type hubRecorder struct{ calls []string }

func (r *hubRecorder) OnOpen(hub.OpenInfo)         { r.calls = append(r.calls, "open") }
func (r *hubRecorder) OnPublish(hub.PublishInfo)   { r.calls = append(r.calls, "publish") }
func (r *hubRecorder) OnOverflow(hub.OverflowInfo) { r.calls = append(r.calls, "overflow") }
func (r *hubRecorder) OnShutdown(hub.ShutdownInfo) { r.calls = append(r.calls, "shutdown") }
func (r *hubRecorder) OnClose(hub.CloseInfo)       { r.calls = append(r.calls, "close") }
