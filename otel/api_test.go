package otel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
	listenotel "github.com/mcplisten/listen/otel"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/stdio"
	"github.com/mcplisten/listen/streamhttp"
)

// The exact messages of streamhttp's refusals these tests compare.
const (
	msgBodyTooLarge = "Request body too large"
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
			assert.Nil(t, m.HubHooks(nil))
			slog := hub.SlogHooks(nil)
			assert.Equal(t, slog, m.HubHooks(slog))
			h, err := hub.New(hub.Options{})
			require.NoError(t, err)
			assert.Same(t, h, m.Source(h))
			assert.Nil(t, m.Transport("stdio"))
			m.Transport("stdio").OnOpen(nil) // a nil Transport records nothing
			var hopts streamhttp.Options
			m.InstrumentHTTP(&hopts)
			assert.Nil(t, hopts.OnOpen)
			assert.Nil(t, hopts.OnClose)
			assert.Nil(t, hopts.OnError)
			assert.Nil(t, hopts.OnKeepAlive)
			var sopts listen.Options
			m.InstrumentStdio(&sopts)
			assert.Nil(t, sopts.OnOpen)
			assert.Nil(t, sopts.OnClose)
			assert.Nil(t, sopts.OnRefuse)
		})
	}
}

func TestRefusalCause(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{jsonrpc.NewError(jsonrpc.CodeInternalError, spec.MsgCapacityExhausted).WithCause(listen.ErrOverloaded), listenotel.CauseCapacity},
		{jsonrpc.NewError(jsonrpc.CodeInternalError, spec.MsgCapacityExhausted), listenotel.CauseCapacity},
		{jsonrpc.NewError(jsonrpc.CodeInternalError, spec.MsgCapacityExhausted).WithCause(listen.Failed(listen.ErrOverloaded)), listenotel.CauseCapacity},
		{jsonrpc.NewError(jsonrpc.CodeInternalError, streamhttp.MsgShuttingDown).WithCause(listen.ErrShutdown), listenotel.CauseShutdown},
		{jsonrpc.NewError(jsonrpc.CodeInvalidRequest, streamhttp.MsgUnauthorized).WithCause(errors.New("no token")), listenotel.CauseAuth},
		{jsonrpc.NewError(jsonrpc.CodeInvalidRequest, streamhttp.MsgUnauthorized).WithCause(&streamhttp.AuthError{Status: 403}), listenotel.CauseAuth},
		{jsonrpc.NewError(jsonrpc.CodeInvalidRequest, streamhttp.MsgForbidden), listenotel.CauseAuth},
		{&streamhttp.AuthError{}, listenotel.CauseAuth},
		{jsonrpc.NewError(jsonrpc.CodeParseError, "Parse error"), listenotel.CauseValidation},
		{jsonrpc.NewError(jsonrpc.CodeInvalidRequest, msgBodyTooLarge), listenotel.CauseValidation},
		{jsonrpc.NewError(jsonrpc.CodeInvalidRequest, spec.MsgDuplicateID), listenotel.CauseValidation},
		{jsonrpc.NewError(jsonrpc.CodeInvalidParams, spec.MsgNotificationsObject), listenotel.CauseValidation},
		{jsonrpc.NewError(jsonrpc.CodeMethodNotFound, spec.MsgMethodNotFoundListen), listenotel.CauseValidation},
		{jsonrpc.NewError(jsonrpc.CodeHeaderMismatch, "Header mismatch: missing Mcp-Method header"), listenotel.CauseValidation},
		{spec.UnsupportedVersionError(nil, "2099-01-01"), listenotel.CauseValidation},
		{jsonrpc.NewError(jsonrpc.CodeMissingRequiredClientCapability, "Missing required client capability"), listenotel.CauseValidation},
		{jsonrpc.NewError(jsonrpc.CodeInternalError, spec.MsgSourceFailedToOpen).WithCause(errors.New("db down")), listenotel.CauseError},
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

// InstrumentHTTP and InstrumentStdio record, then call the hooks that were
// set before.
func TestInstrumentChainsHooks(t *testing.T) {
	m, reader := newMetrics(t)
	var calls []string
	hopts := streamhttp.Options{
		OnOpen:      func(*listen.Subscription) { calls = append(calls, "http open") },
		OnClose:     func(*listen.Subscription, error) { calls = append(calls, "http close") },
		OnError:     func(*http.Request, int, error) { calls = append(calls, "http error") },
		OnKeepAlive: func(*listen.Subscription) { calls = append(calls, "http keep-alive") },
	}
	m.InstrumentHTTP(&hopts)
	hopts.OnOpen(nil)
	hopts.OnKeepAlive(nil)
	hopts.OnError(nil, http.StatusServiceUnavailable, jsonrpc.NewError(jsonrpc.CodeInternalError, spec.MsgCapacityExhausted))
	hopts.OnClose(nil, listen.ErrShutdown)
	sopts := listen.Options{
		OnOpen:   func(*listen.Subscription) { calls = append(calls, "stdio open") },
		OnClose:  func(*listen.Subscription, error) { calls = append(calls, "stdio close") },
		OnRefuse: func(*listen.Request, error) { calls = append(calls, "stdio error") },
	}
	m.InstrumentStdio(&sopts)
	sopts.OnOpen(nil)
	sopts.OnRefuse(nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, spec.MsgNotificationsObject))
	sopts.OnClose(nil, listen.Cancelled(""))
	assert.Equal(t, []string{"http open", "http keep-alive", "http error", "http close",
		"stdio open", "stdio error", "stdio close"}, calls)

	const h, s = "mcp.listen.transport=streamable_http", "mcp.listen.transport=stdio"
	assert.Equal(t, map[string]int64{
		"mcp.listen.streams.open{" + h + "}":                                         0,
		"mcp.listen.streams.capacity{" + h + "}":                                     streamhttp.DefaultMaxStreams,
		"mcp.listen.streams.opened{" + h + "}":                                       1,
		"mcp.listen.keepalives.sent{" + h + "}":                                      1,
		"mcp.listen.requests.refused{mcp.listen.refusal.cause=capacity," + h + "}":   1,
		"mcp.listen.streams.closed{mcp.listen.close.reason=shutdown," + h + "}":      1,
		"mcp.listen.streams.open{" + s + "}":                                         0,
		"mcp.listen.streams.opened{" + s + "}":                                       1,
		"mcp.listen.requests.refused{mcp.listen.refusal.cause=validation," + s + "}": 1,
		"mcp.listen.streams.closed{mcp.listen.close.reason=cancelled," + s + "}":     1,
	}, series(t, reader))
}

// HubHooks records, then calls the hooks it wraps.
func TestHubHooksChain(t *testing.T) {
	m, reader := newMetrics(t)
	rec := &hubRecorder{}
	h, err := hub.New(hub.Options{MaxBuffer: 1, Overflow: hub.DropNewest, Hooks: m.HubHooks(rec)})
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
