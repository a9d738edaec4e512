package listen_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
)

// --- params validation ---

func listenBody(id, notifications string) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":%s}}`, id, notifications)
}

func uriList(n int, prefix string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("%q", fmt.Sprintf("%s%d", prefix, i))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func TestParseListenRequestParams(t *testing.T) {
	tests := []struct {
		name string
		body []byte
		code int
		msg  string
	}{
		{"empty notifications is valid", listenBody(`1`, `{}`), 0, ""},
		{"unknown keys pass", listenBody(`"a"`, `{"taskIds":["t"],"com.example/x":{"y":1}}`), 0, ""},
		{"1000 URIs", listenBody(`1`, `{"resourceSubscriptions":`+uriList(1000, "file:///r/")+`}`), 0, ""},
		{"missing notifications", []byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`), -32602, core.NotificationsObject},
		{"notifications is a list", listenBody(`1`, `[]`), -32602, core.NotificationsObject},
		{"notifications is null", listenBody(`1`, `null`), -32602, core.NotificationsObject},
		{"non-boolean tools flag", listenBody(`1`, `{"toolsListChanged":"yes"}`), -32602, "subscriptions/listen toolsListChanged must be a boolean"},
		{"non-boolean prompts flag", listenBody(`1`, `{"promptsListChanged":1}`), -32602, "subscriptions/listen promptsListChanged must be a boolean"},
		{"non-boolean resources flag", listenBody(`1`, `{"resourcesListChanged":null}`), -32602, "subscriptions/listen resourcesListChanged must be a boolean"},
		{"resourceSubscriptions string", listenBody(`1`, `{"resourceSubscriptions":"file:///a"}`), -32602, core.URIsList},
		{"1001 URIs", listenBody(`1`, `{"resourceSubscriptions":`+uriList(1001, "file:///r/")+`}`), -32602, core.URIsTooMany},
		{"count is checked before elements", listenBody(`1`, `{"resourceSubscriptions":`+uriList(1001, "rel/")+`}`), -32602, core.URIsTooMany},
		{"relative URI", listenBody(`1`, `{"resourceSubscriptions":["file:///a","b/c"]}`), -32602, core.URIsAbsolute},
		{"non-string URI", listenBody(`1`, `{"resourceSubscriptions":[1]}`), -32602, core.URIsAbsolute},
		{"params not an object", []byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":[]}`), -32602, core.ParamsObject},
		{"no params", []byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen"}`), -32602, core.ParamsObject},
		{"no _meta", []byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{}}}`), -32602, core.MetaObject},
		{"_meta not an object", []byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":3,"notifications":{}}}`), -32602, core.MetaObject},
		{"no protocol version", []byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}},"notifications":{}}}`), -32602, core.MetaProtocolVersion},
		{"no client capabilities", []byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"notifications":{}}}`), -32602, core.MetaCapabilities},
		{"malformed JSON", []byte(`{"jsonrpc":`), -32700, "Parse error"},
		{"null id", listenBody(`null`, `{}`), -32600, "Invalid request: id must be a string or an integer"},
		{"fractional id", listenBody(`1.5`, `{}`), -32600, "Invalid request: id must be a string or an integer"},
		{"no id", []byte(`{"jsonrpc":"2.0","method":"subscriptions/listen","params":{}}`), -32600, "Invalid request: subscriptions/listen requires an id"},
		{"wrong jsonrpc", []byte(`{"jsonrpc":"1.0","id":1,"method":"subscriptions/listen","params":{}}`), -32600, `Invalid request: jsonrpc must be "2.0"`},
		{"other method", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`), -32601, "Method not found: tools/list"},
		{"long other method", []byte(`{"jsonrpc":"2.0","id":1,"method":"` + strings.Repeat("x", 5000) + `","params":{}}`), -32601, "Method not found: " + strings.Repeat("x", 128) + "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := listen.ParseRequest(tt.body)
			if tt.code == 0 {
				require.NoError(t, err)
				assert.Equal(t, spec.ProtocolVersion, req.ProtocolVersion)
				return
			}
			var we *jsonrpc.Error
			require.ErrorAs(t, err, &we)
			assert.Equal(t, tt.code, we.Code)
			assert.Equal(t, tt.msg, we.Message)
		})
	}
}

// listenParams is a listen request whose params are given whole.
func listenParams(params string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":` + params + `}`)
}

const metaJSON = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// The params' member names are matched exactly, as the envelope's are, and
// a name repeated in params, _meta or notifications is refused: another
// parser would read one of the two copies, this one the other.
func TestParseParamsMatchesMembersExactly(t *testing.T) {
	tests := []struct {
		name, params string
		msg          string
		tools        bool // when accepted: toolsListChanged requested
	}{
		{"exact", `{"_meta":` + metaJSON + `,"notifications":{"toolsListChanged":true}}`, "", true},
		{"escaped names", `{"\u005fmeta":` + metaJSON + `,"notific\u0061tions":{"toolsListChanged":true}}`, "", true},
		{"_META is not _meta", `{"_META":` + metaJSON + `,"notifications":{}}`, core.MetaObject, false},
		{"Notifications is not notifications", `{"_meta":` + metaJSON + `,"Notifications":{"toolsListChanged":true}}`, core.NotificationsObject, false},
		{"other-case keys beside the exact ones", `{"_meta":` + metaJSON + `,"notifications":{},"Notifications":{"toolsListChanged":true}}`, "", false},
		{"notifications twice", `{"_meta":` + metaJSON + `,"notifications":{"toolsListChanged":true},"notifications":{}}`, core.ParamsDuplicate, false},
		{"_meta twice", `{"_meta":` + metaJSON + `,"_meta":{},"notifications":{}}`, core.ParamsDuplicate, false},
		{"a flag twice", `{"_meta":` + metaJSON + `,"notifications":{"toolsListChanged":false,"toolsListChanged":true}}`, core.ParamsDuplicate, false},
		{"the version twice", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientCapabilities":{}},"notifications":{}}`, core.ParamsDuplicate, false},
		{"another params member twice", `{"_meta":` + metaJSON + `,"notifications":{},"x":1,"x":2}`, core.ParamsDuplicate, false},
		{"deeper objects may repeat", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"a":1,"a":2}},"notifications":{}}`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := listen.ParseRequest(listenParams(tt.params))
			if tt.msg != "" {
				var we *jsonrpc.Error
				require.ErrorAs(t, err, &we)
				assert.Equal(t, jsonrpc.CodeInvalidParams, we.Code)
				assert.Equal(t, tt.msg, we.Message)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, spec.ProtocolVersion, req.ProtocolVersion)
			assert.Equal(t, tt.tools, req.Notifications[spec.KeyToolsListChanged] == true)
		})
	}
}

// A resource URI is kept exactly as sent or refused: a lone surrogate
// escape or invalid UTF-8 would decode to U+FFFD, merging
// "file:///\ud800" with "file:///\udfff" and with "file:///\ufffd".
func TestParseParamsRefusesURIsThatDoNotDecodeExactly(t *testing.T) {
	for _, uri := range []string{`"file:///\ud800"`, `"file:///\udfff"`, `"file:///\ud800\u0041"`, "\"file:///\xff\"", `"file:///\ude00\ud83d"`} {
		_, err := listen.ParseRequest(listenBody(`1`, `{"resourceSubscriptions":["file:///ok",`+uri+`]}`))
		var we *jsonrpc.Error
		require.ErrorAs(t, err, &we, uri)
		assert.Equal(t, jsonrpc.CodeInvalidParams, we.Code)
		assert.Equal(t, core.URIsUnicode, we.Message, uri)
	}
	for uri, want := range map[string]string{
		`"file:///\ufffd"`:       "file:///\ufffd",
		`"file:///\ud83d\ude00"`: "file:///\U0001F600",
		`"file:///é"`:            "file:///é",
	} {
		req, err := listen.ParseRequest(listenBody(`1`, `{"resourceSubscriptions":[`+uri+`]}`))
		require.NoError(t, err, uri)
		assert.Equal(t, []any{want}, req.Notifications[spec.KeyResourceSubscriptions], uri)
	}
}

func TestValidateNotificationsDirectly(t *testing.T) {
	err := listen.ValidateNotifications(nil)
	assert.ErrorIs(t, err, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams})
	err = listen.ValidateNotifications(listen.Filter{"x": make(chan int)})
	var we *jsonrpc.Error
	require.ErrorAs(t, err, &we)
	assert.Equal(t, core.NotificationsJSON, we.Message)
	assert.NoError(t, listen.ValidateNotifications(listen.Filter{"resourceSubscriptions": []string{"file:///a"}}))
}

func TestRequestIDKeepsItsJSONType(t *testing.T) {
	for _, raw := range []string{`"listen-1"`, `7`, `-3`, `"7"`, `"with \"quotes\""`} {
		req, err := listen.ParseRequest(listenBody(raw, `{}`))
		require.NoError(t, err, raw)
		assert.Equal(t, raw, req.ID.Raw())
	}
	assert.Equal(t, `"a"`, jsonrpc.StringID("a").Raw())
	assert.Equal(t, `42`, jsonrpc.IntID(42).Raw())
}

// --- narrowing ---

func TestNarrowingAgainstCapabilities(t *testing.T) {
	tests := []struct {
		name string
		caps listen.Capabilities
		want listen.Filter
		req  listen.Filter
	}{
		{
			name: "only advertised kinds, requested false dropped",
			caps: listen.Capabilities{ToolsListChanged: true, ResourcesSubscribe: true},
			req:  listen.Filter{"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": false, "resourceSubscriptions": []any{"test://resource/one"}},
			want: listen.Filter{"toolsListChanged": true, "resourceSubscriptions": []any{"test://resource/one"}},
		},
		{
			name: "only boolean true capabilities count",
			caps: mustCapabilities(`{"tools":{"listChanged":"true"},"prompts":{"listChanged":1},"resources":{"listChanged":true,"subscribe":false}}`),
			req:  listen.Filter{"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true, "resourceSubscriptions": []any{"a:b"}},
			want: listen.Filter{"resourcesListChanged": true},
		},
		{
			name: "no capabilities: empty ack",
			caps: listen.Capabilities{},
			req:  listen.Filter{"toolsListChanged": true},
			want: listen.Filter{},
		},
		{
			name: "URI list kept in order, not deduplicated",
			caps: allCaps,
			req:  listen.Filter{"resourceSubscriptions": []any{"z:1", "a:1", "z:1"}},
			want: listen.Filter{"resourceSubscriptions": []any{"z:1", "a:1", "z:1"}},
		},
		{
			name: "unknown keys without an extension are omitted",
			caps: allCaps,
			req:  listen.Filter{"taskIds": []any{"t"}, "toolsListChanged": true},
			want: listen.Filter{"toolsListChanged": true},
		},
	}
	for _, tt := range tests {
		for _, asFunc := range []bool{false, true} {
			name := tt.name
			opts := &listen.Options{Capabilities: tt.caps}
			var asked []*listen.Request
			if asFunc {
				// The same capabilities stated by a function of the request
				// (Options.Capabilities then plays no part).
				name += " (CapabilitiesFor)"
				opts = &listen.Options{Capabilities: allCaps, CapabilitiesFor: func(_ context.Context, req *listen.Request) (listen.Capabilities, error) {
					asked = append(asked, req)
					return tt.caps, nil
				}}
			}
			t.Run(name, func(t *testing.T) {
				src := newTestSource()
				req := request(jsonrpc.IntID(1), tt.req)
				sub, err := listen.Open(context.Background(), src, req, opts)
				require.NoError(t, err)
				defer sub.Close(listen.ErrComplete)
				assert.Equal(t, tt.want, <-src.opened, "supported filter given to the source")
				assert.Equal(t, tt.want, sub.Accepted())
				if asFunc {
					assert.Equal(t, []*listen.Request{req}, asked, "asked once, about this request")
				}
			})
		}
	}
}

// CapabilitiesFor's failures refuse the listen: its own *jsonrpc.Error as
// it is, any other error or a panic as the internal "failed to open"; the
// source is not opened.
func TestCapabilitiesForFailures(t *testing.T) {
	refuse := jsonrpc.NewError(jsonrpc.CodeMissingRequiredClientCapability, "no")
	for _, tt := range []struct {
		name string
		fn   func(context.Context, *listen.Request) (listen.Capabilities, error)
		want *jsonrpc.Error
	}{
		{"wire error", func(context.Context, *listen.Request) (listen.Capabilities, error) {
			return listen.Capabilities{}, refuse
		}, refuse},
		{"other error", func(context.Context, *listen.Request) (listen.Capabilities, error) {
			return listen.Capabilities{}, errors.New("discover failed")
		}, jsonrpc.NewError(jsonrpc.CodeInternalError, core.SourceFailedToOpen)},
		{"panic", func(context.Context, *listen.Request) (listen.Capabilities, error) { panic("boom") },
			jsonrpc.NewError(jsonrpc.CodeInternalError, core.SourceFailedToOpen)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := newTestSource()
			_, err := listen.Open(context.Background(), src, request(jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true}),
				&listen.Options{CapabilitiesFor: tt.fn})
			var we *jsonrpc.Error
			require.ErrorAs(t, err, &we)
			assert.Equal(t, tt.want.Code, we.Code)
			assert.Equal(t, tt.want.Message, we.Message)
			assert.Empty(t, src.opened)
		})
	}
}

func TestCanReadLeavesOutUnreadableURIs(t *testing.T) {
	registered := map[string]bool{"test://static/readme": true, "test://static/data": true}
	opts := &listen.Options{
		Capabilities: allCaps,
		CanRead: func(_ context.Context, _ *listen.Request, uri string) bool {
			// The policy refuses data; unregistered URIs are not refused.
			return !registered[uri] || uri != "test://static/data"
		},
	}
	src := newTestSource()
	sub, err := listen.Open(context.Background(), src, request(jsonrpc.IntID(1), listen.Filter{
		"resourceSubscriptions": []any{"test://static/readme", "test://static/data", "test://unregistered/one"},
	}), opts)
	require.NoError(t, err)
	defer sub.Close(nil)
	assert.Equal(t, []string{"test://static/readme", "test://unregistered/one"}, listen.Strings(sub.Accepted(), "resourceSubscriptions"))
}

// Checklist 16: direct open narrows truthfully and shapes the whole stream.
func TestDirectLifecycleShapesTheStream(t *testing.T) {
	src := newTestSource()
	caps := listen.Capabilities{ToolsListChanged: true, ResourcesSubscribe: true}
	req := request(jsonrpc.StringID("sub-direct"), listen.Filter{
		"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": false,
		"resourceSubscriptions": []any{"test://resource/one"},
	})
	sub, err := listen.Open(context.Background(), src, req, &listen.Options{Capabilities: caps, ServerInfo: listen.Implementation{Name: "snodo-spike", Version: "0.1.0"}})
	require.NoError(t, err)

	ack, err := sub.Acknowledgement()
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged",
		"params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"sub-direct"},
		"notifications":{"toolsListChanged":true,"resourceSubscriptions":["test://resource/one"]}}}`, string(ack))

	msg, err := sub.Notification(listen.ResourceUpdated("test://resource/one").WithMetadata(map[string]any{"com.example/seq": 1}))
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/resources/updated",
		"params":{"uri":"test://resource/one","_meta":{"com.example/seq":1,"io.modelcontextprotocol/subscriptionId":"sub-direct"}}}`, string(msg))

	msg, err = sub.Notification(listen.ResourceUpdated("test://resource/two"))
	assert.NoError(t, err)
	assert.Nil(t, msg, "an unrequested URI is dropped")
	msg, err = sub.Notification(listen.PromptsListChanged())
	assert.NoError(t, err)
	assert.Nil(t, msg, "an unsupported kind is dropped")

	done := sub.Completion()
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":"sub-direct","result":{"resultType":"complete",
		"_meta":{"io.modelcontextprotocol/subscriptionId":"sub-direct",
		"io.modelcontextprotocol/serverInfo":{"name":"snodo-spike","version":"0.1.0"}}}}`, string(done))

	st := src.last()
	sub.Close(listen.ErrComplete)
	assert.Equal(t, listen.ErrComplete, <-st.closes)
}

// --- source open results ---

type openFunc = listentest.SourceFunc

func TestSourceOpenResults(t *testing.T) {
	boom := errors.New("boom")
	custom := jsonrpc.NewError(jsonrpc.CodeMissingRequiredClientCapability, "Missing required client capability")
	stream := func() *testStream {
		return &testStream{src: newTestSource(), items: make(chan item), closed: make(chan struct{}), closes: make(chan error, 4)}
	}
	var leaked *testStream
	tests := []struct {
		name  string
		src   listen.Source
		code  int
		msg   string
		cause error
	}{
		{"an *Error passes through", openFunc(func(context.Context, *listen.Request, listen.Filter) (listen.Filter, listen.Stream, error) {
			return nil, nil, custom
		}), jsonrpc.CodeMissingRequiredClientCapability, "Missing required client capability", nil},
		{"a wrapped *Error passes through", openFunc(func(context.Context, *listen.Request, listen.Filter) (listen.Filter, listen.Stream, error) {
			return nil, nil, fmt.Errorf("wrapped: %w", custom)
		}), jsonrpc.CodeMissingRequiredClientCapability, "Missing required client capability", nil},
		{"another error is internal", openFunc(func(context.Context, *listen.Request, listen.Filter) (listen.Filter, listen.Stream, error) {
			return nil, nil, boom
		}), jsonrpc.CodeInternalError, core.SourceFailedToOpen, boom},
		{"a nil stream is invalid", openFunc(func(context.Context, *listen.Request, listen.Filter) (listen.Filter, listen.Stream, error) {
			return listen.Filter{}, nil, nil
		}), jsonrpc.CodeInternalError, core.InvalidOpenResult, nil},
		{"a panic is a failed open", openFunc(func(context.Context, *listen.Request, listen.Filter) (listen.Filter, listen.Stream, error) {
			panic("kaboom")
		}), jsonrpc.CodeInternalError, core.SourceFailedToOpen, nil},
		{"an error with a stream closes the stream", openFunc(func(context.Context, *listen.Request, listen.Filter) (listen.Filter, listen.Stream, error) {
			leaked = stream()
			return nil, leaked, boom
		}), jsonrpc.CodeInternalError, core.SourceFailedToOpen, boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := listen.Open(context.Background(), tt.src, request(jsonrpc.IntID(1), listen.Filter{}), nil)
			var we *jsonrpc.Error
			require.ErrorAs(t, err, &we)
			assert.Equal(t, tt.code, we.Code)
			assert.Equal(t, tt.msg, we.Message)
			if tt.cause != nil {
				assert.ErrorIs(t, err, tt.cause, "the cause is kept for the server")
			}
		})
	}
	require.NotNil(t, leaked)
	assert.ErrorIs(t, <-leaked.closes, listen.ErrFailed)

	var pe *listen.PanicError
	_, err := listen.Open(context.Background(), tests[4].src, request(jsonrpc.IntID(1), listen.Filter{}), nil)
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "kaboom", pe.Value)
}

func TestOverclaimingSourceIsClosedAndRefused(t *testing.T) {
	src := newTestSource()
	src.accept = func(listen.Filter) listen.Filter { return listen.Filter{"promptsListChanged": true} }
	caps := listen.Capabilities{ToolsListChanged: true}
	_, err := listen.Open(context.Background(), src, request(jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true, "promptsListChanged": true}), &listen.Options{Capabilities: caps})
	var we *jsonrpc.Error
	require.ErrorAs(t, err, &we)
	assert.Equal(t, jsonrpc.CodeInternalError, we.Code)
	assert.Equal(t, core.SourceOverclaimed, we.Message)

	reason := <-src.last().closes
	var fe *listen.FailedError
	require.ErrorAs(t, reason, &fe)
	assert.ErrorIs(t, fe.Err, &jsonrpc.Error{Code: jsonrpc.CodeInternalError})
	assert.Equal(t, 1, src.last().closeCount())

	// Echoing false for an unsupported key is overclaiming too.
	src.accept = func(listen.Filter) listen.Filter { return listen.Filter{"resourcesListChanged": false} }
	_, err = listen.Open(context.Background(), src, request(jsonrpc.IntID(2), listen.Filter{}), &listen.Options{Capabilities: caps})
	assert.ErrorIs(t, err, &jsonrpc.Error{Code: jsonrpc.CodeInternalError})
}

func TestLegacyProtocolHasNoShaping(t *testing.T) {
	req := request(jsonrpc.IntID(1), listen.Filter{})
	req.ProtocolVersion = "2025-11-25"
	_, err := listen.Open(context.Background(), newTestSource(), req, nil)
	var we *jsonrpc.Error
	require.ErrorAs(t, err, &we)
	assert.Equal(t, core.NoShaping, we.Message)
}

// --- retained context ---

// An open subscription must not keep the request body alive. The body is
// 2 MB of padding plus the filter; after Open the only reference to it is
// dropped, and a weak pointer shows it was collected while the subscription
// (and the filter it accepted) lives on.
func TestOpenSubscriptionDoesNotRetainTheRequest(t *testing.T) {
	src := newTestSource()
	body := make([]byte, 0, 2<<20)
	body = append(body, listenBody(`"listen-retain"`, `{"toolsListChanged":true,"resourceSubscriptions":["file:///kept"],"taskIds":["t"]}`)...)
	body = body[:len(body)-2] // reopen params
	body = append(body, `,"inputResponses":{"x":1},"requestState":"s","padding":"`...)
	body = append(body, strings.Repeat("p", 2<<20-len(body)-8)...)
	body = append(body, `"}}`...)
	weakBody := weak.Make(&body[0])

	req, err := listen.ParseRequest(body)
	require.NoError(t, err)
	req.Auth = map[string]any{"principal": strings.Repeat("a", 1<<20)}
	req.Transport.Header = map[string][]string{"X-Big": {strings.Repeat("h", 1<<20)}}
	weakAuth := weak.Make(&req.Auth)
	sub, err := listen.Open(context.Background(), src, req, &listen.Options{Capabilities: allCaps})
	require.NoError(t, err)
	defer sub.Close(nil)
	seen := src.seen[0]
	assert.Equal(t, req.Params, seen.Params, "the source sees the full request")
	assert.Equal(t, req.Auth, seen.Auth)
	src.seen = nil
	body, req, seen = nil, nil, nil //nolint:ineffassign,wastedassign // drop our references

	runtime.GC()
	runtime.GC()
	assert.Nil(t, weakBody.Value(), "the request body is still reachable from the subscription")
	assert.Nil(t, weakAuth.Value(), "the request (auth, headers) is still reachable from the subscription")
	assert.Equal(t, []string{"file:///kept"}, listen.Strings(sub.Accepted(), "resourceSubscriptions"))
	assert.Equal(t, `"listen-retain"`, sub.ID().Raw())
	ack, err := sub.Acknowledgement()
	require.NoError(t, err)
	assert.Contains(t, string(ack), "file:///kept")
	assert.Contains(t, string(sub.Completion()), `"listen-retain"`)
}

// --- guard: exactly once ---

func TestGuardClosesExactlyOnceUnderRaces(t *testing.T) {
	for i := range 200 {
		src := newTestSource()
		ctx, cancel := context.WithCancel(context.Background())
		sub, err := listen.Open(ctx, src, request(jsonrpc.IntID(int64(i)), listen.Filter{"toolsListChanged": true}), &listen.Options{Capabilities: allCaps})
		require.NoError(t, err)
		w, err := sub.StartWorker(ctx)
		require.NoError(t, err)
		w.Continue()
		st := src.last()

		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Add(4)
		go func() { defer wg.Done(); <-start; cancel() }()
		go func() { defer wg.Done(); <-start; sub.Close(listen.Cancelled("client done")) }()
		go func() { defer wg.Done(); <-start; w.Stop() }()
		go func() { defer wg.Done(); <-start; sub.Close(listen.ErrComplete) }()
		close(start)
		wg.Wait()
		sub.Close(listen.ErrShutdown) // may return at once: another close may still be running
		<-sub.Closed()
		waitExited(w)

		require.Equal(t, 1, st.closeCount(), "iteration %d", i)
		reason := <-st.closes
		require.Equal(t, reason, sub.CloseReason())
		cls := listen.Classify(reason)
		require.Contains(t, []string{"disconnected", "cancelled", "complete"}, cls)
	}
}

func TestOwnerEndClosesTheSourceOnce(t *testing.T) {
	src := newTestSource()
	ctx, cancel := context.WithCancelCause(context.Background())
	sub, err := listen.Open(ctx, src, request(jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true}), &listen.Options{Capabilities: allCaps})
	require.NoError(t, err)
	w, err := sub.StartWorker(ctx)
	require.NoError(t, err)
	w.Continue()
	<-src.nexts // a Next is blocked in the source

	killed := errors.New("killed")
	cancel(killed)
	reason := <-src.last().closes
	var de *listen.DisconnectedError
	require.ErrorAs(t, reason, &de)
	assert.ErrorIs(t, reason, listen.ErrOwnerGone)
	assert.ErrorIs(t, reason, killed, "the owner's cause is kept")
	assert.Equal(t, "disconnected", listen.Classify(reason))

	for range w.Outcomes() { // the worker exits and closes its channel
	}
	sub.Close(listen.ErrComplete)
	assert.Equal(t, 1, src.last().closeCount())
}

func TestOwnershipHandedOverWhenTheWorkerStarts(t *testing.T) {
	src := newTestSource()
	sub, err := listen.Open(context.Background(), src, request(jsonrpc.IntID(1), listen.Filter{}), nil)
	require.NoError(t, err)
	owner, cancel := context.WithCancel(context.Background())
	w, err := sub.StartWorker(owner)
	require.NoError(t, err)
	_, err = sub.StartWorker(owner)
	assert.ErrorIs(t, err, listen.ErrWorkerRunning)
	cancel()
	assert.ErrorIs(t, <-src.last().closes, listen.ErrOwnerGone)
	waitExited(w)
	sub.Close(nil)
}

// Checklist 9: the owner closes, then stops the worker; the source sees one
// close.
func TestStoppedWorkerLeavesClosingToTheOwner(t *testing.T) {
	src := newTestSource()
	sub := openSub(t, src, jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true})
	w, err := sub.StartWorker(context.Background())
	require.NoError(t, err)
	w.Stop()
	_, open := <-w.Outcomes()
	assert.False(t, open, "the worker closes its outcome channel")
	assert.Equal(t, 0, src.last().closeCount(), "stopping the worker does not close the source")
	sub.Close(listen.ErrComplete)
	sub.Close(listen.ErrComplete)
	assert.Equal(t, 1, src.last().closeCount())
}

// Checklist 10: a worker started after the close gets "closed" from its
// first pull.
func TestWorkerStartedAfterCloseSeesClosed(t *testing.T) {
	src := newTestSource()
	sub := openSub(t, src, jsonrpc.IntID(1), listen.Filter{})
	sub.Close(listen.ErrComplete)
	w, err := sub.StartWorker(context.Background())
	require.NoError(t, err)
	w.Continue()
	o := <-w.Outcomes()
	assert.Equal(t, listen.ErrClosed, o.Err)
	w.Stop()
	waitExited(w)
}

// --- worker: demand ---

// concurrencySource counts Next calls in flight.
type concurrencySource struct {
	inFlight, max atomic.Int32
	calls         atomic.Int32
	release       chan struct{}
}

func (c *concurrencySource) Open(context.Context, *listen.Request, listen.Filter) (listen.Filter, listen.Stream, error) {
	return listen.Filter{}, c, nil
}

func (c *concurrencySource) Next() (listen.Event, error) {
	n := c.inFlight.Add(1)
	for {
		m := c.max.Load()
		if n <= m || c.max.CompareAndSwap(m, n) {
			break
		}
	}
	c.calls.Add(1)
	<-c.release
	c.inFlight.Add(-1)
	return listen.ToolsListChanged(), nil
}

func (c *concurrencySource) Close(error) {}

func TestWorkerNeverHasTwoNextsInFlight(t *testing.T) {
	src := &concurrencySource{release: make(chan struct{})}
	sub, err := listen.Open(context.Background(), src, request(jsonrpc.IntID(1), listen.Filter{}), nil)
	require.NoError(t, err)
	w, err := sub.StartWorker(context.Background())
	require.NoError(t, err)
	for range 5 {
		w.Continue() // continues queue up while a Next is blocked
	}
	for range 5 {
		src.release <- struct{}{}
		o := <-w.Outcomes()
		assert.NoError(t, o.Err)
	}
	assert.EqualValues(t, 5, src.calls.Load(), "one Next per Continue")
	assert.EqualValues(t, 1, src.max.Load(), "never two Nexts in flight")
	w.Stop()
	waitExited(w)
	sub.Close(nil)
}

func TestWorkerPullsOnlyOnDemand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newTestSource()
		sub := openSub(t, src, jsonrpc.IntID(1), listen.Filter{"toolsListChanged": true})
		w, err := sub.StartWorker(t.Context())
		require.NoError(t, err)
		st := src.last()
		st.emit(listen.ToolsListChanged())
		st.emit(listen.ToolsListChanged())

		synctest.Wait()
		assert.Len(t, src.nexts, 0, "no Next before the first Continue")
		w.Continue()
		o := <-w.Outcomes()
		assert.Equal(t, listen.KindToolsListChanged, o.Event.Kind)
		synctest.Wait()
		assert.Len(t, src.nexts, 1, "exactly one Next for one Continue")
		assert.Len(t, st.items, 1, "the second event waits for demand")

		w.Continue()
		<-w.Outcomes()
		synctest.Wait()
		assert.Len(t, src.nexts, 2)
		sub.Close(listen.ErrComplete)
		waitExited(w)
	})
}

type panicSource struct {
	inOpen, inNext, inClose bool
	closed                  chan struct{}
}

func (p *panicSource) Open(context.Context, *listen.Request, listen.Filter) (listen.Filter, listen.Stream, error) {
	if p.inOpen {
		panic("open")
	}
	return listen.Filter{}, p, nil
}

func (p *panicSource) Next() (listen.Event, error) {
	if p.inNext {
		panic("next")
	}
	return listen.Event{}, nil // neither an event nor an error
}

func (p *panicSource) Close(error) {
	close(p.closed)
	if p.inClose {
		panic("close")
	}
}

func TestOutcomes(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name  string
		drive func(st *testStream)
		err   error // nil: an event; ErrClosed: the graceful end
	}{
		{"event", func(st *testStream) { st.emit(listen.ToolsListChanged()) }, nil},
		{"graceful end", func(st *testStream) { st.complete() }, listen.ErrClosed},
		{"io.EOF is a graceful end", func(st *testStream) { st.items <- item{err: fmt.Errorf("done: %w", errEOF())} }, listen.ErrClosed},
		{"error", func(st *testStream) { st.fail(boom) }, boom},
		{"zero event with nil error", func(st *testStream) { st.items <- item{} }, listen.ErrInvalidEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newTestSource()
			sub := openSub(t, src, jsonrpc.IntID(1), listen.Filter{})
			defer sub.Close(nil)
			w, err := sub.StartWorker(context.Background())
			require.NoError(t, err)
			tt.drive(src.last())
			w.Continue()
			o := <-w.Outcomes()
			if tt.err == nil {
				assert.NoError(t, o.Err)
				assert.Equal(t, listen.KindToolsListChanged, o.Event.Kind)
				return
			}
			assert.ErrorIs(t, o.Err, tt.err)
			if tt.err == listen.ErrClosed {
				assert.Equal(t, listen.ErrClosed, o.Err, "the graceful end is ErrClosed itself")
			}
		})
	}
}

func TestPanickingSourceNeverCrashesTheHost(t *testing.T) {
	p := &panicSource{inNext: true, inClose: true, closed: make(chan struct{})}
	sub, err := listen.Open(context.Background(), p, request(jsonrpc.IntID(1), listen.Filter{}), nil)
	require.NoError(t, err)
	w, err := sub.StartWorker(context.Background())
	require.NoError(t, err)
	w.Continue()
	o := <-w.Outcomes()
	var pe *listen.PanicError
	require.ErrorAs(t, o.Err, &pe)
	assert.Equal(t, "Stream.Next", pe.Op)
	assert.NotEmpty(t, pe.Stack)
	assert.NotPanics(t, func() { sub.Close(listen.Failed(o.Err)) }, "a panic in Close is swallowed")
	<-p.closed
}

// A source whose Next ignores Close: Close gives up waiting for the worker
// after ReleaseTimeout instead of hanging the transport.
func TestCloseIsBoundedForANextThatIgnoresClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := make(chan struct{})
		src := openFunc(func(context.Context, *listen.Request, listen.Filter) (listen.Filter, listen.Stream, error) {
			return listen.Filter{}, stuckStream(stuck), nil
		})
		sub, err := listen.Open(context.Background(), src, request(jsonrpc.IntID(1), listen.Filter{}), &listen.Options{ReleaseTimeout: time.Second})
		require.NoError(t, err)
		w, err := sub.StartWorker(context.Background())
		require.NoError(t, err)
		w.Continue()
		synctest.Wait()
		start := time.Now()
		sub.Close(listen.ErrComplete)
		assert.Equal(t, time.Second, time.Since(start))
		close(stuck) // the worker exits when Next finally returns
		waitExited(w)
	})
}

type stuckStream chan struct{}

func (s stuckStream) Next() (listen.Event, error) { <-s; return listen.Event{}, listen.ErrClosed }
func (s stuckStream) Close(error)                 {}

// --- close reasons and errors ---

func TestCloseReasonsMatch(t *testing.T) {
	cause := errors.New("socket reset")
	tests := []struct {
		reason error
		class  string
		is     error
	}{
		{listen.ErrComplete, "complete", listen.ErrComplete},
		{listen.Cancelled("client done"), "cancelled", listen.ErrCancelled},
		{listen.Cancelled(""), "cancelled", listen.ErrCancelled},
		{listen.Disconnected(cause), "disconnected", cause},
		{listen.Disconnected(nil), "disconnected", listen.ErrDisconnected},
		{listen.Failed(cause), "error", cause},
		{listen.Failed(listen.ErrOverloaded), "error", listen.ErrOverloaded},
		{listen.ErrShutdown, "shutdown", listen.ErrShutdown},
		{errors.New("whatever"), "other", nil},
	}
	for _, tt := range tests {
		t.Run(tt.reason.Error(), func(t *testing.T) {
			assert.Equal(t, tt.class, listen.Classify(tt.reason))
			if tt.is != nil {
				assert.ErrorIs(t, tt.reason, tt.is)
			}
		})
	}
	assert.EqualError(t, listen.Cancelled("client done"), "listen: subscription cancelled: client done")
	assert.EqualError(t, listen.Cancelled(""), "listen: subscription cancelled")
}

func TestWireErrorsMatchByCode(t *testing.T) {
	err := fmt.Errorf("open: %w", jsonrpc.NewError(jsonrpc.CodeInvalidParams, "bad").WithCause(errors.New("inner")))
	assert.ErrorIs(t, err, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams})
	assert.NotErrorIs(t, err, &jsonrpc.Error{Code: jsonrpc.CodeInternalError})
	var we *jsonrpc.Error
	require.ErrorAs(t, err, &we)
	b, _ := json.Marshal(we)
	assert.JSONEq(t, `{"code":-32602,"message":"bad"}`, string(b), "the cause is never sent")

	internal := jsonrpc.NewError(jsonrpc.CodeInternalError, "x").WithData(map[string]any{"secret": 1})
	b, _ = json.Marshal(internal)
	assert.JSONEq(t, `{"code":-32603,"message":"x"}`, string(b), "internal errors carry no data")

	unsupported := jsonrpc.NewError(jsonrpc.CodeUnsupportedProtocolVersion, "Unsupported protocol version").
		WithData(map[string]any{"supported": spec.SupportedProtocolVersions, "requested": "1900-01-01"})
	resp := jsonrpc.ErrorResponse(jsonrpc.IntID(1), unsupported)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version",
		"data":{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"],"requested":"1900-01-01"}}}`, string(resp))
	resp = jsonrpc.ErrorResponse(jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeParseError, "Parse error"))
	assert.JSONEq(t, `{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}`, string(resp))
	resp = jsonrpc.ErrorResponse(jsonrpc.StringID("x"), errors.New("plain"))
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":"x","error":{"code":-32603,"message":"Internal error"}}`, string(resp))
}

// FuzzParseListenRequest feeds arbitrary bytes to the request decoder: it
// never panics, every error is a wire error with a JSON-RPC code, and every
// accepted request has notifications that pass ValidateNotifications.
func FuzzParseListenRequest(f *testing.F) {
	f.Add(listenBody(`1`, `{"toolsListChanged":true}`))
	f.Add(listenBody(`"x"`, `{"resourceSubscriptions":["file:///a",1]}`))
	f.Add(listenBody(`1`, `{"taskIds":[1.0,{"a":null}]}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":[]}}`))
	f.Add([]byte(`[1,2]`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1e3,"method":"x"}`))
	f.Add(listenBody(`1`, `{"resourceSubscriptions":["file:///\ud800","file:///\ud83d\ude00"],"toolsListChanged":true,"toolsListChanged":false}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"METHOD":"subscriptions/listen","method":"subscriptions/listen","params":{"_META":{},"notifications":{}}}`))
	codes := map[int]bool{-32700: true, -32600: true, -32601: true, -32602: true}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := listen.ParseRequest(data)
		if err != nil {
			var we *jsonrpc.Error
			if !errors.As(err, &we) || !codes[we.Code] || we.Message == "" {
				t.Fatalf("error %v is not a wire error with a known code", err)
			}
			if !json.Valid(jsonrpc.ErrorResponse(req.ID, err)) {
				t.Fatalf("error response is not JSON")
			}
			return
		}
		if verr := listen.ValidateNotifications(req.Notifications); verr != nil {
			t.Fatalf("accepted request with invalid notifications: %v", verr)
		}
		if !req.ID.Valid() {
			t.Fatalf("accepted request without id")
		}
		if _, merr := json.Marshal(req.Notifications); merr != nil {
			t.Fatalf("accepted notifications do not encode: %v", merr)
		}
	})
}

// Slot.Open: the open context may end without closing the subscription;
// the owner's end closes it.
func TestOpenOwnedSeparatesTheOwner(t *testing.T) {
	src := newTestSource()
	srv := listen.NewServer(src, listen.Options{})
	openCtx, cancelOpen := context.WithCancel(context.Background())
	owner, cancelOwner := context.WithCancel(context.Background())
	req := request(jsonrpc.IntID(1), listen.Filter{})
	sl, err := admit(srv, req)
	require.NoError(t, err)
	sub, err := sl.Open(openCtx, owner, req)
	require.NoError(t, err)
	cancelOpen()
	assert.Nil(t, sub.CloseReason())
	cancelOwner()
	<-sub.Closed()
	assert.ErrorIs(t, sub.CloseReason(), listen.ErrOwnerGone)

	sl.Done(sub.CloseReason())
}

func TestPanickingCanReadIsAFailedOpen(t *testing.T) {
	src := newTestSource()
	opts := &listen.Options{Capabilities: allCaps, CanRead: func(context.Context, *listen.Request, string) bool { panic("policy") }}
	_, err := listen.Open(context.Background(), src, request(jsonrpc.IntID(1), listen.Filter{"resourceSubscriptions": []any{"file:///a"}}), opts)
	var we *jsonrpc.Error
	require.ErrorAs(t, err, &we)
	assert.Equal(t, core.SourceFailedToOpen, we.Message)
	var pe *listen.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "Options.CanRead", pe.Op)
	assert.Empty(t, src.opened, "the source is not opened")
}

// A subscription reports the kind of the transport it was opened for (kept
// interned): 40 kinds, each used more than once.
func TestTransportKindOfEachSubscription(t *testing.T) {
	opts := &listen.Options{Capabilities: listen.Capabilities{ToolsListChanged: true}}
	for i := range 50 {
		req := request(jsonrpc.IntID(int64(i+1)), listen.Filter{"toolsListChanged": true})
		req.Transport.Kind = fmt.Sprintf("kind-%d", i%40)
		sub, err := listen.Open(context.Background(), listentest.NewSource(), req, opts)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("kind-%d", i%40), sub.TransportKind())
		sub.Close(nil)
	}
}
