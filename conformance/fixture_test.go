package conformance

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
	"github.com/stretchr/testify/require"
)

// The tasks extension (io.modelcontextprotocol/tasks) adds the filter key
// taskIds and the notification notifications/tasks.
const (
	tasksExtID  = "io.modelcontextprotocol/tasks"
	methodTasks = "notifications/tasks"
)

// Server capabilities: everything on, and the tasks extension advertised.
const (
	serverCaps = `{"tools":{"listChanged":true},"prompts":{"listChanged":true},` +
		`"resources":{"listChanged":true,"subscribe":true},"extensions":{"` + tasksExtID + `":{}}}`
	// serverCapsNoPrompts has no prompts.listChanged and no resources.subscribe.
	serverCapsNoPrompts = `{"tools":{"listChanged":true},"prompts":{},"resources":{"listChanged":true}}`
)

// Client capabilities: with and without the tasks extension declared.
const (
	clientTasks = `{"extensions":{"` + tasksExtID + `":{}}}`
	clientPlain = `{}`
)

// allCore requests every core notification type.
const allCore = `{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,` +
	`"resourceSubscriptions":["file:///project/src/main.rs","https://example.com/a?b=c&d=%20e#f"]}`

// watchedURI is one of the URIs allCore subscribes to.
const watchedURI = "file:///project/src/main.rs"

// serverInfo names the test server.
var serverInfo = listen.Implementation{Name: "listen-conformance", Version: "1.0.0"}

// listenRequest returns a subscriptions/listen request with the id token
// id, params.notifications filter and the client capabilities caps.
func listenRequest(id, filter, caps string) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"method":%q,"params":{"_meta":{`+
		`%q:%q,%q:%s,%q:{"name":"conformance-client","version":"1.0.0"}},"notifications":%s}}`,
		id, spec.MethodListen,
		spec.MetaProtocolVersion, spec.ProtocolVersion,
		spec.MetaClientCapabilities, caps,
		spec.MetaClientInfo, filter)
}

// serverOptions returns Options with the capabilities caps (JSON, checked
// against ServerCapabilities), the tasks extension registered and info.
func serverOptions(t testing.TB, caps string, info listen.Implementation) *listen.Options {
	t.Helper()
	require.NoError(t, validate(t, "ServerCapabilities", []byte(caps)), "test fixture")
	c, err := listen.CapabilitiesFrom(caps)
	require.NoError(t, err)
	reg, err := listen.NewExtensionRegistry(tasksExtension{})
	require.NoError(t, err)
	return &listen.Options{Capabilities: c, ServerInfo: info, Extensions: reg}
}

// parseRequest decodes a listen request the way a transport does. The
// request itself must conform to SubscriptionsListenRequest (a check of
// the test's input, not of the core).
func parseRequest(t testing.TB, reqJSON []byte) *listen.Request {
	t.Helper()
	require.NoError(t, validate(t, "SubscriptionsListenRequest", reqJSON), "test fixture: %s", reqJSON)
	req, err := listen.ParseRequest(reqJSON)
	require.NoError(t, err)
	return req
}

// open opens a subscription for reqJSON on src; it is closed when t ends.
func open(t testing.TB, reqJSON []byte, opts *listen.Options, src listen.Source) *listen.Subscription {
	t.Helper()
	sub, err := listen.Open(context.Background(), src, parseRequest(t, reqJSON), opts)
	require.NoError(t, err)
	t.Cleanup(func() { sub.Close(nil) })
	return sub
}

// requestedFilter returns params.notifications of a listen request.
func requestedFilter(t testing.TB, reqJSON []byte) []byte {
	t.Helper()
	f, err := member(reqJSON, "params", "notifications")
	require.NoError(t, err)
	return f
}

// chanStream is the test Stream: Next returns the events of a channel, then
// end (nil: listen.ErrClosed) once the channel is closed; ErrClosed after
// Close.
type chanStream struct {
	events <-chan listen.Event
	end    error
	done   chan struct{}
	once   sync.Once

	mu     sync.Mutex
	reason error
}

func (s *chanStream) Next() (listen.Event, error) {
	select {
	case <-s.done:
		return listen.Event{}, listen.ErrClosed
	default:
	}
	select {
	case ev, ok := <-s.events:
		if ok {
			return ev, nil
		}
		if s.end != nil {
			return listen.Event{}, s.end
		}
		return listen.Event{}, listen.ErrClosed
	case <-s.done:
		return listen.Event{}, listen.ErrClosed
	}
}

func (s *chanStream) Close(reason error) {
	s.once.Do(func() {
		s.mu.Lock()
		s.reason = reason
		s.mu.Unlock()
		close(s.done)
	})
}

// closeReason returns the reason the stream was closed with.
func (s *chanStream) closeReason() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

var _ listen.Stream = (*chanStream)(nil)

// testSource is the test Source: it accepts the whole supported filter and
// serves events from a channel (a nil channel blocks until Close).
type testSource struct {
	events <-chan listen.Event
	end    error

	mu     sync.Mutex
	stream *chanStream
}

func (s *testSource) source() listen.Source {
	return listentest.SourceFunc(func(_ context.Context, _ *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
		st := &chanStream{events: s.events, end: s.end, done: make(chan struct{})}
		s.mu.Lock()
		s.stream = st
		s.mu.Unlock()
		return supported, st, nil
	})
}

// opened returns the last stream the source opened.
func (s *testSource) opened() *chanStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stream
}

// idleSource is a source whose stream never yields an event.
func idleSource() listen.Source { return (&testSource{}).source() }

// tasksExtension is a minimal io.modelcontextprotocol/tasks: it owns the
// requested taskIds (refusing with -32021 when the client did not declare
// the extension) and shapes a task payload into notifications/tasks.
type tasksExtension struct{}

var _ listen.SubscriptionExtension = tasksExtension{}

func (tasksExtension) ID() string { return tasksExtID }

func (tasksExtension) SupportsProtocol(v string) bool { return v == spec.ProtocolVersion }

func (tasksExtension) SubscriptionFilter(_ context.Context, req *listen.Request, requested listen.Filter) (listen.Filter, error) {
	ids, ok := requested["taskIds"]
	if !ok {
		return nil, nil
	}
	exts, _ := req.ClientCapabilities["extensions"].(map[string]any)
	if _, declared := exts[tasksExtID]; !declared {
		return nil, jsonrpc.NewError(jsonrpc.CodeMissingRequiredClientCapability,
			"Missing required client capability: "+tasksExtID).
			WithData(map[string]any{"requiredCapabilities": map[string]any{
				"extensions": map[string]any{tasksExtID: map[string]any{}},
			}})
	}
	return listen.Filter{"taskIds": ids}, nil
}

func (tasksExtension) ShapeSubscriptionEvent(ev listen.Event, _ listen.Filter, _ listen.Settings) (string, map[string]any, error) {
	task, ok := ev.Payload.(map[string]any)
	if !ok {
		return "", nil, fmt.Errorf("tasks: payload %T is not a task", ev.Payload)
	}
	return methodTasks, maps.Clone(task), nil
}

// taskEvent returns a notifications/tasks event for the task id.
func taskEvent(id, status string) listen.Event {
	return listen.ExtensionEvent(tasksExtID, listen.Filter{"taskIds": []any{id}}, map[string]any{
		"taskId":        id,
		"status":        status,
		"createdAt":     "2026-07-28T10:00:00Z",
		"lastUpdatedAt": "2026-07-28T10:00:05Z",
		"ttl":           60000,
	})
}
