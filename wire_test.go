package listen_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

func TestNotificationShapes(t *testing.T) {
	filter := listen.Filter{"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true, "resourceSubscriptions": []any{"file:///a", "test://x?a=1&b=2"}}
	tests := []struct {
		name string
		id   jsonrpc.ID
		ev   listen.Event
		want string // "" = drop
	}{
		{"tools, string id", jsonrpc.StringID("sub-1"), listen.ToolsListChanged(),
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"sub-1"}}}`},
		{"prompts, integer id", jsonrpc.IntID(7), listen.PromptsListChanged(),
			`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}`},
		{"resources list", jsonrpc.IntID(7), listen.ResourcesListChanged(),
			`{"jsonrpc":"2.0","method":"notifications/resources/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}`},
		{"resource updated", jsonrpc.StringID("s"), listen.ResourceUpdated("test://x?a=1&b=2"),
			`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"s"},"uri":"test://x?a=1&b=2"}}`},
		{"metadata over params _meta, id last", jsonrpc.StringID("s"),
			listen.ToolsListChanged().
				WithParams(map[string]any{"_meta": map[string]any{"a": 1, "b": 1, spec.MetaSubscriptionID: "forged"}, "extra": []any{true}}).
				WithMetadata(map[string]any{"b": 2, spec.MetaSubscriptionID: "forged-too"}),
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"a":1,"b":2,"io.modelcontextprotocol/subscriptionId":"s"},"extra":[true]}}`},
		{"params _meta that is not an object is ignored", jsonrpc.IntID(1),
			listen.PromptsListChanged().WithParams(map[string]any{"_meta": "nope"}),
			`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}`},
		{"uri always from the event", jsonrpc.IntID(1),
			listen.ResourceUpdated("file:///a").WithParams(map[string]any{"uri": "file:///evil", "title": "A"}),
			`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"title":"A","uri":"file:///a"}}`},
		{"pre-encoded JSON in params and metadata", jsonrpc.IntID(1),
			listen.ToolsListChanged().WithParams(map[string]any{"raw": json.RawMessage(`{"b":[1,2]}`)}).
				WithMetadata(map[string]any{"m": json.RawMessage(`"x"`)}),
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1,"m":"x"},"raw":{"b":[1,2]}}}`},
		{"pre-encoded params _meta is merged too", jsonrpc.IntID(1),
			listen.ToolsListChanged().WithParams(map[string]any{"_meta": json.RawMessage(`{"a":[1],"io.modelcontextprotocol/subscriptionId":"forged"}`)}),
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"a":[1],"io.modelcontextprotocol/subscriptionId":1}}}`},
		{"unrequested URI dropped", jsonrpc.IntID(1), listen.ResourceUpdated("file:///b"), ""},
		{"extension event without an owning extension dropped", jsonrpc.IntID(1),
			listen.ExtensionEvent("com.example/watch", listen.Filter{"watchIds": []any{"w1"}}, nil), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub := openSub(t, newTestSource(), tt.id, filter)
			defer sub.Close(nil)
			msg, err := sub.Notification(tt.ev)
			require.NoError(t, err)
			if tt.want == "" {
				assert.Nil(t, msg)
				return
			}
			assert.Equal(t, tt.want, string(msg))
		})
	}
}

func TestDropsOutsideTheFilter(t *testing.T) {
	sub := openSub(t, newTestSource(), jsonrpc.IntID(1), listen.Filter{"promptsListChanged": true})
	defer sub.Close(nil)
	for _, ev := range []listen.Event{listen.ToolsListChanged(), listen.ResourcesListChanged(), listen.ResourceUpdated("file:///a")} {
		msg, err := sub.Notification(ev)
		assert.NoError(t, err)
		assert.Nil(t, msg, ev.Kind.String())
	}
}

func TestInvalidEventIsAnErrorNotADrop(t *testing.T) {
	sub := openSub(t, newTestSource(), jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true})
	defer sub.Close(nil)
	_, err := sub.Notification(listen.ToolsListChanged().WithParams(map[string]any{"raw": json.RawMessage(`{bad`)}))
	assert.ErrorIs(t, err, listen.ErrInvalidEvent, "invalid pre-encoded JSON")
	_, err = sub.Notification(listen.ResourceUpdated("relative"))
	assert.ErrorIs(t, err, listen.ErrInvalidEvent)
	_, err = sub.Notification(listen.ToolsListChanged().WithMetadata(map[string]any{"x": func() {}}))
	assert.ErrorIs(t, err, listen.ErrInvalidEvent)

	failure := sub.Failure()
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Subscription source failed"}}`, string(failure))
}

func TestCompletionWithoutServerInfo(t *testing.T) {
	sub := openSub(t, newTestSource(), jsonrpc.IntID(1), listen.Filter{})
	defer sub.Close(nil)
	msg := sub.Completion()
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"resultType":"complete"}}`, string(msg))
}

func TestAckEchoesExtensionKeysVerbatim(t *testing.T) {
	src := newTestSource()
	src.accept = func(listen.Filter) listen.Filter {
		return listen.Filter{"toolsListChanged": true}
	}
	sub := openSub(t, src, jsonrpc.StringID("a"), listen.Filter{"toolsListChanged": true, "promptsListChanged": true})
	defer sub.Close(nil)
	ack, err := sub.Acknowledgement()
	require.NoError(t, err)
	assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"a"},"notifications":{"toolsListChanged":true}}}`, string(ack),
		"the ack carries what the source accepted, not what was supported")
}

// --- extensions ---

type watchExt struct {
	id       string
	key      string
	filter   func(requested listen.Filter) (listen.Filter, error)
	shape    func(ev listen.Event, owned listen.Filter) (string, map[string]any, error)
	versions []string
}

func (w *watchExt) ID() string { return w.id }
func (w *watchExt) SupportsProtocol(v string) bool {
	return w.versions == nil || v == w.versions[0]
}
func (w *watchExt) SubscriptionFilter(_ context.Context, _ *listen.Request, requested listen.Filter) (listen.Filter, error) {
	if w.filter != nil {
		return w.filter(requested)
	}
	if v, ok := requested[w.key]; ok {
		return listen.Filter{w.key: v}, nil
	}
	return nil, nil
}
func (w *watchExt) ShapeSubscriptionEvent(ev listen.Event, owned listen.Filter, settings listen.Settings) (string, map[string]any, error) {
	if w.shape != nil {
		return w.shape(ev, owned)
	}
	return "notifications/" + w.id, map[string]any{"watch": ev.Payload}, nil
}

type filterOnly struct{}

func (filterOnly) ID() string                   { return "com.example/half" }
func (filterOnly) SupportsProtocol(string) bool { return true }
func (filterOnly) SubscriptionFilter(context.Context, *listen.Request, listen.Filter) (listen.Filter, error) {
	return nil, nil
}

func TestRegistryNeedsBothHooks(t *testing.T) {
	_, err := listen.NewExtensionRegistry(filterOnly{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "must implement both SubscriptionFilter and ShapeSubscriptionEvent")
	_, err = listen.NewExtensionRegistry(&watchExt{id: "a"}, &watchExt{id: "a"})
	assert.Error(t, err)
}

func extCaps(ids ...string) listen.Capabilities {
	exts := map[string]any{}
	for _, id := range ids {
		exts[id] = map[string]any{}
	}
	c := allCaps
	c.Extensions = exts
	return c
}

func extRequest(id jsonrpc.ID, f listen.Filter, negotiated ...string) *listen.Request {
	req := request(id, f)
	exts := map[string]any{}
	for _, n := range negotiated {
		exts[n] = map[string]any{}
	}
	req.ClientCapabilities = map[string]any{"extensions": exts}
	return req
}

func TestExtensionEventsArriveWithTheExtensionsMethod(t *testing.T) {
	ext := &watchExt{id: "com.example/watch", key: "watchIds"}
	reg, err := listen.NewExtensionRegistry(ext)
	require.NoError(t, err)
	opts := &listen.Options{Capabilities: extCaps(ext.id), Extensions: reg}
	sub, err := listen.Open(context.Background(), newTestSource(),
		extRequest(jsonrpc.IntID(7), listen.Filter{"watchIds": []any{"w1"}, "toolsListChanged": true}, ext.id), opts)
	require.NoError(t, err)
	defer sub.Close(nil)
	assert.Equal(t, listen.Filter{"watchIds": []any{"w1"}, "toolsListChanged": true}, sub.Accepted())

	msg, err := sub.Notification(listen.ExtensionEvent(ext.id, listen.Filter{"watchIds": []any{"w2"}}, nil))
	require.NoError(t, err)
	assert.Nil(t, msg, "a selector outside the owned filter is dropped")

	msg, err = sub.Notification(listen.ExtensionEvent(ext.id, listen.Filter{"watchIds": []any{"w1"}}, map[string]any{"state": "done"}).
		WithMetadata(map[string]any{spec.MetaSubscriptionID: "forged"}))
	require.NoError(t, err)
	assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/com.example/watch","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"watch":{"state":"done"}}}`, string(msg))

	msg, err = sub.Notification(listen.ExtensionEvent("com.example/other", listen.Filter{"watchIds": []any{"w1"}}, nil))
	require.NoError(t, err)
	assert.Nil(t, msg, "an extension that owns nothing here is dropped")
}

func TestExtensionEventsNeedNegotiation(t *testing.T) {
	ext := &watchExt{id: "com.example/watch", key: "watchIds"}
	reg, _ := listen.NewExtensionRegistry(ext)
	sub, err := listen.Open(context.Background(), newTestSource(),
		extRequest(jsonrpc.IntID(7), listen.Filter{"watchIds": []any{"w1"}}), // client did not declare it
		&listen.Options{Capabilities: extCaps(ext.id), Extensions: reg})
	require.NoError(t, err)
	defer sub.Close(nil)
	msg, err := sub.Notification(listen.ExtensionEvent(ext.id, listen.Filter{"watchIds": []any{"w1"}}, nil))
	require.NoError(t, err)
	assert.Nil(t, msg)
}

func TestExtensionCandidates(t *testing.T) {
	ext := &watchExt{id: "com.example/watch", key: "watchIds"}
	reg, _ := listen.NewExtensionRegistry(ext)
	f := listen.Filter{"watchIds": []any{"w1"}}
	// Not advertised by the server: not a candidate, the key is omitted.
	sub, err := listen.Open(context.Background(), newTestSource(), extRequest(jsonrpc.IntID(1), f, ext.id), &listen.Options{Capabilities: allCaps, Extensions: reg})
	require.NoError(t, err)
	assert.Equal(t, listen.Filter{}, sub.Accepted())
	sub.Close(nil)
	// Not compatible with the protocol version.
	old := &watchExt{id: "com.example/watch", key: "watchIds", versions: []string{"2099-01-01"}}
	reg2, _ := listen.NewExtensionRegistry(old)
	sub, err = listen.Open(context.Background(), newTestSource(), extRequest(jsonrpc.IntID(1), f, ext.id), &listen.Options{Capabilities: extCaps(ext.id), Extensions: reg2})
	require.NoError(t, err)
	assert.Equal(t, listen.Filter{}, sub.Accepted())
	sub.Close(nil)
}

func TestExtensionFilterErrors(t *testing.T) {
	missing := jsonrpc.NewError(jsonrpc.CodeMissingRequiredClientCapability, "Missing required client capability").
		WithData(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}})
	tests := []struct {
		name string
		exts []listen.Extension
		req  listen.Filter
		code int
		msg  string
	}{
		{"non-JSON contribution", []listen.Extension{&watchExt{id: "a", filter: func(listen.Filter) (listen.Filter, error) {
			return listen.Filter{"watchIds": make(chan int)}, nil
		}}}, listen.Filter{"watchIds": []any{"w"}}, jsonrpc.CodeInternalError, core.ExtNonJSONFilter},
		{"unrequested contribution", []listen.Extension{&watchExt{id: "a", filter: func(listen.Filter) (listen.Filter, error) {
			return listen.Filter{"watchIds": []any{"other"}}, nil
		}}}, listen.Filter{"watchIds": []any{"w"}}, jsonrpc.CodeInternalError, core.ExtUnrequested},
		{"plain error", []listen.Extension{&watchExt{id: "a", filter: func(listen.Filter) (listen.Filter, error) {
			return nil, errors.New("nope")
		}}}, listen.Filter{}, jsonrpc.CodeInternalError, core.ExtInvalidFilter},
		{"panic", []listen.Extension{&watchExt{id: "a", filter: func(listen.Filter) (listen.Filter, error) {
			panic("x")
		}}}, listen.Filter{}, jsonrpc.CodeInternalError, core.ExtCallbackPanicked},
		{"*Error passes through (tasks -32021)", []listen.Extension{&watchExt{id: "a", filter: func(listen.Filter) (listen.Filter, error) {
			return nil, missing
		}}}, listen.Filter{"taskIds": []any{"t"}}, jsonrpc.CodeMissingRequiredClientCapability, "Missing required client capability"},
		{"extensions collide", []listen.Extension{&watchExt{id: "a", key: "k"}, &watchExt{id: "b", key: "k"}},
			listen.Filter{"k": []any{"x"}}, jsonrpc.CodeInternalError, core.ExtFiltersCollide},
		{"extension collides with core", []listen.Extension{&watchExt{id: "a", key: "toolsListChanged"}},
			listen.Filter{"toolsListChanged": true}, jsonrpc.CodeInternalError, core.ExtCollideWithCore},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, err := listen.NewExtensionRegistry(tt.exts...)
			require.NoError(t, err)
			ids := []string{}
			for _, e := range tt.exts {
				ids = append(ids, e.ID())
			}
			src := newTestSource()
			_, err = listen.Open(context.Background(), src, request(jsonrpc.IntID(1), tt.req), &listen.Options{Capabilities: extCaps(ids...), Extensions: reg})
			var we *jsonrpc.Error
			require.ErrorAs(t, err, &we)
			assert.Equal(t, tt.code, we.Code)
			assert.Equal(t, tt.msg, we.Message)
			b, _ := json.Marshal(we)
			if tt.code == jsonrpc.CodeInternalError {
				assert.NotContains(t, string(b), "data", "internal errors carry no data")
			}
			assert.Empty(t, src.opened, "no source open after a filter error")
		})
	}
}

func TestExtensionShapingErrors(t *testing.T) {
	tests := []struct {
		name  string
		shape func(listen.Event, listen.Filter) (string, map[string]any, error)
		msg   string
	}{
		{"empty method", func(listen.Event, listen.Filter) (string, map[string]any, error) { return "", nil, nil }, core.ExtInvalidEvent},
		{"a request method", func(listen.Event, listen.Filter) (string, map[string]any, error) { return "tools/list", nil, nil }, core.ExtInvalidEvent},
		{"a second acknowledgement", func(listen.Event, listen.Filter) (string, map[string]any, error) {
			return spec.MethodAcknowledged, nil, nil
		}, core.ExtInvalidEvent},
		{"a core notification", func(listen.Event, listen.Filter) (string, map[string]any, error) {
			return spec.MethodToolsListChanged, nil, nil
		}, core.ExtInvalidEvent},
		{"progress", func(listen.Event, listen.Filter) (string, map[string]any, error) {
			return "notifications/progress", nil, nil
		}, core.ExtInvalidEvent},
		{"non-JSON params", func(listen.Event, listen.Filter) (string, map[string]any, error) {
			return "notifications/x", map[string]any{"f": func() {}}, nil
		}, core.ExtNonJSONEvent},
		{"panic", func(listen.Event, listen.Filter) (string, map[string]any, error) { panic("shape") }, core.ExtCallbackPanicked},
		{"error", func(listen.Event, listen.Filter) (string, map[string]any, error) { return "", nil, fmt.Errorf("bad") }, core.ExtInvalidEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ext := &watchExt{id: "x", key: "watchIds", shape: tt.shape}
			reg, _ := listen.NewExtensionRegistry(ext)
			sub, err := listen.Open(context.Background(), newTestSource(), extRequest(jsonrpc.IntID(1), listen.Filter{"watchIds": []any{"w"}}, "x"),
				&listen.Options{Capabilities: extCaps("x"), Extensions: reg})
			require.NoError(t, err)
			defer sub.Close(nil)
			_, err = sub.Notification(listen.ExtensionEvent("x", listen.Filter{"watchIds": []any{"w"}}, nil))
			var we *jsonrpc.Error
			require.ErrorAs(t, err, &we)
			assert.Equal(t, tt.msg, we.Message)
		})
	}
}

// Per-extension projections: each extension owns only what the source
// accepted of its contribution.
func TestExtensionProjections(t *testing.T) {
	a := &watchExt{id: "a", key: "aIds"}
	b := &watchExt{id: "b", key: "bIds"}
	reg, _ := listen.NewExtensionRegistry(a, b)
	src := newTestSource()
	src.accept = func(sup listen.Filter) listen.Filter {
		return listen.Filter{"aIds": sup["aIds"]} // the source serves only a
	}
	sub, err := listen.Open(context.Background(), src, extRequest(jsonrpc.IntID(1), listen.Filter{"aIds": []any{"x"}, "bIds": []any{"y"}}, "a", "b"),
		&listen.Options{Capabilities: extCaps("a", "b"), Extensions: reg})
	require.NoError(t, err)
	defer sub.Close(nil)
	assert.Equal(t, listen.Filter{"aIds": []any{"x"}, "bIds": []any{"y"}}, <-src.opened)
	msg, err := sub.Notification(listen.ExtensionEvent("b", listen.Filter{"bIds": []any{"y"}}, 1))
	require.NoError(t, err)
	assert.Nil(t, msg, "b owns nothing the source accepted")
	msg, err = sub.Notification(listen.ExtensionEvent("a", listen.Filter{"aIds": []any{"x"}}, 1))
	require.NoError(t, err)
	assert.NotNil(t, msg)
}

// The acknowledgement echoes the accepted filter exactly as
// Accepted().MarshalJSON encodes it, whatever its parts: list changes, URIs
// in their order with duplicates, an empty URI list, one or two
// extensions' keys.
func TestAckIsTheAcceptedFilter(t *testing.T) {
	a := &watchExt{id: "com.example/a", key: "aIds"}
	b := &watchExt{id: "com.example/b", key: "bIds"}
	reg, err := listen.NewExtensionRegistry(a, b)
	require.NoError(t, err)
	opts := &listen.Options{Capabilities: extCaps(a.id, b.id), Extensions: reg}
	for _, f := range []listen.Filter{
		{},
		{"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true},
		{"resourceSubscriptions": []any{"file:///z", "file:///a", "file:///z"}},
		{"resourceSubscriptions": []any{}},
		{"aIds": []any{"x", "y"}, "toolsListChanged": true},
		{"aIds": []any{"x"}, "bIds": map[string]any{"n": json.Number("1")}, "resourceSubscriptions": []any{"file:///a"}},
	} {
		sub, err := listen.Open(context.Background(), newTestSource(), extRequest(jsonrpc.IntID(1), f, a.id, b.id), opts)
		require.NoError(t, err)
		ack, err := sub.Acknowledgement()
		require.NoError(t, err)
		want, err := sub.Accepted().MarshalJSON()
		require.NoError(t, err)
		var msg struct {
			Params struct {
				Notifications json.RawMessage `json:"notifications"`
			} `json:"params"`
		}
		require.NoError(t, json.Unmarshal(ack, &msg))
		assert.Equal(t, string(want), string(msg.Params.Notifications))
		assert.Equal(t, f, sub.Accepted(), "everything requested is accepted here")
		sub.Close(nil)
	}
}
