package hub_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

func newHub(t testing.TB, opts hub.Options) *hub.Hub {
	t.Helper()
	h, err := hub.New(opts)
	require.NoError(t, err)
	return h
}

func request(id string) *listen.Request {
	return &listen.Request{
		ID:              jsonrpc.StringID(id),
		ProtocolVersion: spec.ProtocolVersion,
		Transport:       listen.Transport{Kind: "direct"},
	}
}

// openStream opens a hub listener directly (as listen.Open would) and checks
// that the filter is accepted verbatim.
func openStream(t testing.TB, h *hub.Hub, id string, f listen.Filter) listen.Stream {
	t.Helper()
	accepted, s, err := h.Open(context.Background(), request(id), f)
	require.NoError(t, err)
	require.Equal(t, f, accepted)
	return s
}

type result struct {
	ev  listen.Event
	err error
}

// pull starts one Next on s in a goroutine; its result arrives on the
// returned channel.
func pull(s listen.Stream) <-chan result {
	ch := make(chan result, 1)
	go func() {
		ev, err := s.Next()
		ch <- result{ev, err}
	}()
	return ch
}

// requireBlocked asserts that a pull has not returned. Call synctest.Wait
// first so that "not yet" means "blocked".
func requireBlocked(t *testing.T, ch <-chan result) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("pull returned %+v, want it blocked", r)
	default:
	}
}

// seqEvent returns a tools list change carrying seq in its metadata.
func seqEvent(seq int) listen.Event {
	return listen.ToolsListChanged().WithMetadata(map[string]any{"seq": seq})
}

func seqOf(t testing.TB, ev listen.Event) int {
	t.Helper()
	n, ok := ev.Metadata["seq"].(int)
	require.True(t, ok, "event without seq: %+v", ev)
	return n
}

func mustNext(t testing.TB, s listen.Stream) listen.Event {
	t.Helper()
	ev, err := s.Next()
	require.NoError(t, err)
	return ev
}

func uri(prefix string, i int) string { return "file:///" + prefix + "/" + strconv.Itoa(i) }

// hookSet is what a test's recorder implements: every hook of Options.
type hookSet interface {
	OnOpen(hub.OpenInfo)
	OnPublish(hub.PublishInfo)
	OnOverflow(hub.OverflowInfo)
	OnShutdown(hub.ShutdownInfo)
	OnClose(hub.CloseInfo)
}

// withHooks returns o with its On* fields set to h's methods.
func withHooks(o hub.Options, h hookSet) hub.Options {
	o.OnOpen, o.OnPublish, o.OnOverflow, o.OnShutdown, o.OnClose = h.OnOpen, h.OnPublish, h.OnOverflow, h.OnShutdown, h.OnClose
	return o
}

// recorder records every hook call.
type recorder struct {
	mu        sync.Mutex
	opens     []hub.OpenInfo
	publishes []hub.PublishInfo
	overflows []hub.OverflowInfo
	completes []hub.ShutdownInfo
	closes    []hub.CloseInfo
}

func (r *recorder) OnOpen(i hub.OpenInfo) { r.mu.Lock(); r.opens = append(r.opens, i); r.mu.Unlock() }
func (r *recorder) OnPublish(i hub.PublishInfo) {
	r.mu.Lock()
	r.publishes = append(r.publishes, i)
	r.mu.Unlock()
}
func (r *recorder) OnOverflow(i hub.OverflowInfo) {
	r.mu.Lock()
	r.overflows = append(r.overflows, i)
	r.mu.Unlock()
}
func (r *recorder) OnShutdown(i hub.ShutdownInfo) {
	r.mu.Lock()
	r.completes = append(r.completes, i)
	r.mu.Unlock()
}
func (r *recorder) OnClose(i hub.CloseInfo) {
	r.mu.Lock()
	r.closes = append(r.closes, i)
	r.mu.Unlock()
}

func (r *recorder) closeInfos() []hub.CloseInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hub.CloseInfo(nil), r.closes...)
}

// serverOptions advertises every core capability and, when reg is set, its
// extensions.
func serverOptions(reg *listen.ExtensionRegistry) *listen.Options {
	caps := listen.Capabilities{
		ToolsListChanged:     true,
		PromptsListChanged:   true,
		ResourcesListChanged: true, ResourcesSubscribe: true,
	}
	if reg != nil {
		caps.Extensions = map[string]any{tasksID: map[string]any{}}
	}
	return &listen.Options{Capabilities: caps, Extensions: reg}
}

// listenRequest is a full listen request for listen.Open.
func listenRequest(id string, f listen.Filter, withTasks bool) *listen.Request {
	req := request(id)
	req.Notifications = f
	req.ClientCapabilities = map[string]any{}
	if withTasks {
		req.ClientCapabilities["extensions"] = map[string]any{tasksID: map[string]any{}}
	}
	return req
}

const tasksID = "io.modelcontextprotocol/tasks"

// tasksExt is a minimal tasks extension owning the taskIds filter key.
type tasksExt struct{}

func (tasksExt) ID() string                   { return tasksID }
func (tasksExt) SupportsProtocol(string) bool { return true }
func (tasksExt) SubscriptionFilter(_ context.Context, _ *listen.Request, requested listen.Filter) (listen.Filter, error) {
	if v, ok := requested["taskIds"]; ok {
		return listen.Filter{"taskIds": v}, nil
	}
	return nil, nil
}
func (tasksExt) ShapeSubscriptionEvent(ev listen.Event, _ listen.Filter, _ listen.Settings) (string, map[string]any, error) {
	return "notifications/tasks/status", map[string]any{"taskId": ev.Payload}, nil
}

func tasksRegistry(t testing.TB) *listen.ExtensionRegistry {
	t.Helper()
	reg, err := listen.NewExtensionRegistry(tasksExt{})
	require.NoError(t, err)
	return reg
}
