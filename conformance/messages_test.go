package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// notificationDefs maps each core notification method to its $def.
var notificationDefs = map[string]string{
	spec.MethodAcknowledged:         "SubscriptionsAcknowledgedNotification",
	spec.MethodToolsListChanged:     "ToolListChangedNotification",
	spec.MethodPromptsListChanged:   "PromptListChangedNotification",
	spec.MethodResourcesListChanged: "ResourceListChangedNotification",
	spec.MethodResourceUpdated:      "ResourceUpdatedNotification",
}

// errorObjectDefs maps error codes to the $def of the bare error object.
var errorObjectDefs = map[int]string{
	jsonrpc.CodeParseError:     "ParseError",
	jsonrpc.CodeInvalidRequest: "InvalidRequestError",
	jsonrpc.CodeMethodNotFound: "MethodNotFoundError",
	jsonrpc.CodeInvalidParams:  "InvalidParamsError",
	jsonrpc.CodeInternalError:  "InternalError",
}

// errorResponseDefs maps error codes to the $def of the whole response.
var errorResponseDefs = map[int]string{
	jsonrpc.CodeUnsupportedProtocolVersion:      "UnsupportedProtocolVersionError",
	jsonrpc.CodeHeaderMismatch:                  "HeaderMismatchError",
	jsonrpc.CodeMissingRequiredClientCapability: "MissingRequiredClientCapabilityError",
}

// conformsMessage validates a message of a listen stream (or an error
// response) against every $def that applies to it, chosen by its shape:
// the specific $def, the unions that contain it, and its parts.
func conformsMessage(t testing.TB, msg []byte) {
	t.Helper()
	m, err := members(msg)
	require.NoError(t, err, "%s", msg)
	switch {
	case m["method"] != nil:
		var method string
		require.NoError(t, json.Unmarshal(m["method"], &method))
		def, core := notificationDefs[method]
		if core {
			conforms(t, msg, def, "ServerNotification", "JSONRPCNotification", "JSONRPCMessage")
		} else {
			conforms(t, msg, "JSONRPCNotification", "JSONRPCMessage")
		}
		switch method {
		case spec.MethodAcknowledged:
			conformsAt(t, msg, []string{"params"}, "SubscriptionsAcknowledgedNotificationParams", "NotificationParams")
			conformsAt(t, msg, []string{"params", "notifications"}, "SubscriptionFilter")
		case spec.MethodResourceUpdated:
			conformsAt(t, msg, []string{"params"}, "ResourceUpdatedNotificationParams", "NotificationParams")
		default:
			conformsAt(t, msg, []string{"params"}, "NotificationParams")
		}
		conformsAt(t, msg, []string{"params", "_meta"}, "NotificationMetaObject")
	case m["result"] != nil:
		conforms(t, msg, "SubscriptionsListenResultResponse", "JSONRPCResultResponse", "JSONRPCResponse", "JSONRPCMessage")
		conformsAt(t, msg, []string{"result"}, "SubscriptionsListenResult", "Result", "ServerResult")
		conformsAt(t, msg, []string{"result", "_meta"}, "SubscriptionsListenResultMetaObject")
		if _, err := member(msg, "result", "_meta", spec.MetaServerInfo); err == nil {
			conformsAt(t, msg, []string{"result", "_meta", spec.MetaServerInfo}, "Implementation")
		}
	case m["error"] != nil:
		var e struct{ Code int }
		require.NoError(t, json.Unmarshal(m["error"], &e))
		defs := []string{"JSONRPCErrorResponse", "JSONRPCResponse", "JSONRPCMessage"}
		if def, ok := errorResponseDefs[e.Code]; ok {
			defs = append(defs, def)
		}
		conforms(t, msg, defs...)
		conformsAt(t, msg, []string{"error"}, "Error")
		if def, ok := errorObjectDefs[e.Code]; ok {
			conformsAt(t, msg, []string{"error"}, def)
		}
	default:
		t.Fatalf("not a notification, result or error response: %s", msg)
	}
}

// ids are the request id tokens every message kind is tried with.
var ids = []struct{ name, token string }{
	{"string id", `"listen-1"`},
	{"integer id", `7`},
}

func TestAcknowledgementConforms(t *testing.T) {
	tests := []struct {
		name    string
		caps    string
		client  string
		filter  string
		wantAck string // the accepted filter
	}{
		{"every core type", serverCaps, clientPlain, allCore, allCore},
		{"empty filter", serverCaps, clientPlain, `{}`, `{}`},
		{"extension key", serverCaps, clientTasks,
			`{"toolsListChanged":true,"taskIds":["task-1","task-2"]}`,
			`{"toolsListChanged":true,"taskIds":["task-1","task-2"]}`},
		{"extension key only", serverCaps, clientTasks,
			`{"taskIds":["task-1"]}`, `{"taskIds":["task-1"]}`},
		{"narrowed by capabilities", serverCapsNoPrompts, clientPlain, allCore,
			`{"toolsListChanged":true,"resourcesListChanged":true}`},
		{"false and unknown keys dropped", serverCaps, clientPlain,
			`{"toolsListChanged":false,"promptsListChanged":true,"com.example/unknown":true}`,
			`{"promptsListChanged":true}`},
		{"empty URI list", serverCaps, clientPlain,
			`{"resourceSubscriptions":[]}`, `{"resourceSubscriptions":[]}`},
	}
	for _, id := range ids {
		for _, tt := range tests {
			t.Run(id.name+"/"+tt.name, func(t *testing.T) {
				req := listenRequest(id.token, tt.filter, tt.client)
				sub := open(t, req, serverOptions(t, tt.caps, serverInfo), idleSource())
				ack, err := sub.Acknowledgement()
				require.NoError(t, err)

				conformsMessage(t, ack)
				require.NoError(t, checkAck(ack, []byte(id.token), requestedFilter(t, req)))
				acked, err := member(ack, "params", "notifications")
				require.NoError(t, err)
				assert.JSONEq(t, tt.wantAck, string(acked))
			})
		}
	}
}

func TestAcknowledgementKeepsReadableURIs(t *testing.T) {
	req := listenRequest(`"listen-1"`, `{"resourceSubscriptions":["file:///a","file:///secret","file:///b"]}`, clientPlain)
	opts := serverOptions(t, serverCaps, serverInfo)
	opts.CanRead = func(_ context.Context, _ *listen.Request, uri string) bool { return uri != "file:///secret" }
	sub := open(t, req, opts, idleSource())
	ack, err := sub.Acknowledgement()
	require.NoError(t, err)
	conformsMessage(t, ack)
	require.NoError(t, checkAck(ack, []byte(`"listen-1"`), requestedFilter(t, req)))
	acked, _ := member(ack, "params", "notifications")
	assert.JSONEq(t, `{"resourceSubscriptions":["file:///a","file:///b"]}`, string(acked))
}

func TestCoreNotificationsConform(t *testing.T) {
	meta := map[string]any{"com.example/trace": "abc-123", "com.example/seq": 42}
	params := map[string]any{
		"_meta":             map[string]any{"com.example/origin": "watcher"},
		"com.example/extra": 1.5,
		"nested":            map[string]any{"list": []any{"a", 1, true, nil}, "text": "line\nbreak \u2028 \"quoted\""},
	}
	tests := []struct {
		name   string
		ev     listen.Event
		method string
	}{
		{"tools list changed", listen.ToolsListChanged(), spec.MethodToolsListChanged},
		{"prompts list changed", listen.PromptsListChanged(), spec.MethodPromptsListChanged},
		{"resources list changed", listen.ResourcesListChanged(), spec.MethodResourcesListChanged},
		{"resource updated", listen.ResourceUpdated(watchedURI), spec.MethodResourceUpdated},
		{"resource updated, URI with query and fragment", listen.ResourceUpdated("https://example.com/a?b=c&d=%20e#f"), spec.MethodResourceUpdated},
		{"tools list changed with metadata", listen.ToolsListChanged().WithMetadata(meta), spec.MethodToolsListChanged},
		{"prompts list changed with metadata", listen.PromptsListChanged().WithMetadata(meta), spec.MethodPromptsListChanged},
		{"resources list changed with metadata", listen.ResourcesListChanged().WithMetadata(meta), spec.MethodResourcesListChanged},
		{"resource updated with metadata", listen.ResourceUpdated(watchedURI).WithMetadata(meta), spec.MethodResourceUpdated},
		{"tools list changed with params", listen.ToolsListChanged().WithParams(params), spec.MethodToolsListChanged},
		{"prompts list changed with params", listen.PromptsListChanged().WithParams(params), spec.MethodPromptsListChanged},
		{"resources list changed with params and metadata", listen.ResourcesListChanged().WithParams(params).WithMetadata(meta), spec.MethodResourcesListChanged},
		{"resource updated with params", listen.ResourceUpdated(watchedURI).WithParams(params), spec.MethodResourceUpdated},
		{"resource updated with params and metadata", listen.ResourceUpdated(watchedURI).WithParams(params).WithMetadata(meta), spec.MethodResourceUpdated},
		{"resource updated with a uri param", listen.ResourceUpdated(watchedURI).WithParams(map[string]any{"uri": "file:///elsewhere", "title": "main.rs"}), spec.MethodResourceUpdated},
	}
	for _, id := range ids {
		req := listenRequest(id.token, allCore, clientPlain)
		sub := open(t, req, serverOptions(t, serverCaps, serverInfo), idleSource())
		for _, tt := range tests {
			t.Run(id.name+"/"+tt.name, func(t *testing.T) {
				msg, err := sub.Notification(tt.ev)
				require.NoError(t, err)
				require.NotNil(t, msg, "the event was dropped")

				conformsMessage(t, msg)
				require.NoError(t, checkNotification(msg, []byte(id.token)))
				var n struct {
					Method string         `json:"method"`
					Params map[string]any `json:"params"`
				}
				require.NoError(t, json.Unmarshal(msg, &n))
				assert.Equal(t, tt.method, n.Method)
				if tt.ev.Kind == listen.KindResourceUpdated {
					assert.Equal(t, tt.ev.URI, n.Params["uri"], "uri comes from the event")
				} else {
					assert.NotContains(t, n.Params, "uri")
				}
				m, _ := n.Params["_meta"].(map[string]any)
				for k := range tt.ev.Metadata {
					assert.Contains(t, m, k, "metadata is merged into _meta")
				}
				if pm, ok := tt.ev.Params["_meta"].(map[string]any); ok {
					for k := range pm {
						assert.Contains(t, m, k, "params._meta is merged into _meta")
					}
				}
				for k := range tt.ev.Params {
					assert.Contains(t, n.Params, k, "params are kept")
				}
			})
		}
	}
}

func TestExtensionNotificationConforms(t *testing.T) {
	tests := []struct {
		name string
		ev   listen.Event
	}{
		{"task status", taskEvent("task-1", "working")},
		{"task status with metadata", taskEvent("task-2", "completed").WithMetadata(map[string]any{"com.example/trace": "t"})},
	}
	for _, id := range ids {
		req := listenRequest(id.token, `{"taskIds":["task-1","task-2"]}`, clientTasks)
		sub := open(t, req, serverOptions(t, serverCaps, serverInfo), idleSource())
		for _, tt := range tests {
			t.Run(id.name+"/"+tt.name, func(t *testing.T) {
				msg, err := sub.Notification(tt.ev)
				require.NoError(t, err)
				require.NotNil(t, msg, "the event was dropped")

				conformsMessage(t, msg)
				require.NoError(t, checkNotification(msg, []byte(id.token)))
				method, _ := member(msg, "method")
				assert.JSONEq(t, `"`+methodTasks+`"`, string(method))
				task, _ := member(msg, "params", "taskId")
				assert.JSONEq(t, `"`+fmt.Sprint(tt.ev.Selector["taskIds"].([]any)[0])+`"`, string(task))
			})
		}
	}
}

func TestCompletionConforms(t *testing.T) {
	tests := []struct {
		name string
		info listen.Implementation
	}{
		{"without server info", listen.Implementation{}},
		{"with server info", serverInfo},
		{"with server info and title", listen.Implementation{Name: "listen-conformance", Version: "1.0.0", Title: "Listen \"conformance\" server"}},
	}
	for _, id := range ids {
		for _, tt := range tests {
			t.Run(id.name+"/"+tt.name, func(t *testing.T) {
				sub := open(t, listenRequest(id.token, allCore, clientPlain), serverOptions(t, serverCaps, tt.info), idleSource())
				msg := sub.Completion()

				conformsMessage(t, msg)
				require.NoError(t, checkCompletion(msg, []byte(id.token)))
				si, err := member(msg, "result", "_meta", spec.MetaServerInfo)
				if tt.info.Name == "" {
					assert.Error(t, err, "no server info when the server did not name itself")
					return
				}
				require.NoError(t, err)
				want, _ := json.Marshal(tt.info)
				assert.JSONEq(t, string(want), string(si))
			})
		}
	}
}

func TestFailureConforms(t *testing.T) {
	reasons := []struct {
		name   string
		reason error // what the source's Next fails with
	}{
		{"source error", errors.New("database unavailable")},
		{"wire error with data", jsonrpc.NewError(jsonrpc.CodeInvalidParams, "bad").WithData(map[string]any{"secret": "x"})},
	}
	for _, id := range ids {
		for _, r := range reasons {
			t.Run(id.name+"/"+r.name, func(t *testing.T) {
				events := make(chan listen.Event)
				close(events)
				src := &testSource{events: events, end: r.reason}
				sub := open(t, listenRequest(id.token, allCore, clientPlain), serverOptions(t, serverCaps, serverInfo), src.source())
				var msgs [][]byte
				reason := sub.Serve(context.Background(), listen.Sink{Write: func(m []byte) error {
					msgs = append(msgs, slices.Clone(m))
					return nil
				}})
				require.ErrorIs(t, reason, listen.ErrFailed)
				require.ErrorIs(t, reason, r.reason, "the reason is the server's")
				require.Len(t, msgs, 2, "the acknowledgement, then the failure")
				msg := msgs[1]
				assert.Equal(t, sub.Failure(), msg)
				conformsMessage(t, msg)
				require.NoError(t, checkErrorResponse(msg, []byte(id.token), jsonrpc.CodeInternalError))
				e, _ := member(msg, "error")
				assert.JSONEq(t, `{"code":-32603,"message":"Subscription source failed"}`, string(e), "the reason is never sent")
			})
		}
	}
}

func TestErrorResponsesConform(t *testing.T) {
	unsupported := map[string]any{"supported": spec.SupportedProtocolVersions, "requested": "1999-01-01"}
	missing := map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{tasksExtID: map[string]any{}}}}
	tests := []struct {
		name     string
		id       jsonrpc.ID
		err      error
		code     int
		wantData bool
	}{
		{"invalid params", jsonrpc.StringID("listen-1"), jsonrpc.NewError(jsonrpc.CodeInvalidParams, "subscriptions/listen requires a notifications object"), jsonrpc.CodeInvalidParams, false},
		{"invalid params, integer id", jsonrpc.IntID(7), jsonrpc.NewError(jsonrpc.CodeInvalidParams, "subscriptions/listen requires a _meta object"), jsonrpc.CodeInvalidParams, false},
		{"method not found", jsonrpc.IntID(7), jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found: subscriptions/listen"), jsonrpc.CodeMethodNotFound, false},
		{"method not found with data", jsonrpc.StringID("x"), jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found: ping").WithData(map[string]any{"method": "ping"}), jsonrpc.CodeMethodNotFound, true},
		{"internal error", jsonrpc.StringID("listen-1"), jsonrpc.NewError(jsonrpc.CodeInternalError, "Subscription source failed to open"), jsonrpc.CodeInternalError, false},
		{"internal error drops data", jsonrpc.IntID(7), jsonrpc.NewError(jsonrpc.CodeInternalError, "Server subscription capacity exhausted").WithData(map[string]any{"limit": 10}), jsonrpc.CodeInternalError, false},
		{"plain Go error", jsonrpc.IntID(7), errors.New("boom"), jsonrpc.CodeInternalError, false},
		{"wrapped wire error", jsonrpc.StringID("listen-1"), errors.Join(errors.New("ctx"), jsonrpc.NewError(jsonrpc.CodeInvalidParams, "bad")), jsonrpc.CodeInvalidParams, false},
		{"unsupported protocol version", jsonrpc.StringID("listen-1"), jsonrpc.NewError(jsonrpc.CodeUnsupportedProtocolVersion, "Unsupported protocol version").WithData(unsupported), jsonrpc.CodeUnsupportedProtocolVersion, true},
		{"unsupported protocol version, integer id", jsonrpc.IntID(1), jsonrpc.NewError(jsonrpc.CodeUnsupportedProtocolVersion, "Unsupported protocol version").WithData(unsupported), jsonrpc.CodeUnsupportedProtocolVersion, true},
		{"header mismatch", jsonrpc.IntID(1), jsonrpc.NewError(jsonrpc.CodeHeaderMismatch, "Header mismatch: MCP-Protocol-Version header does not match _meta"), jsonrpc.CodeHeaderMismatch, false},
		{"header mismatch, string id", jsonrpc.StringID("listen-1"), jsonrpc.NewError(jsonrpc.CodeHeaderMismatch, "Header mismatch: missing Mcp-Method"), jsonrpc.CodeHeaderMismatch, false},
		{"missing client capability", jsonrpc.StringID("listen-1"), jsonrpc.NewError(jsonrpc.CodeMissingRequiredClientCapability, "Missing required client capability").WithData(missing), jsonrpc.CodeMissingRequiredClientCapability, true},
		{"parse error without id", jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeParseError, "Parse error"), jsonrpc.CodeParseError, false},
		{"invalid request without id", jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "Invalid request: subscriptions/listen requires an id"), jsonrpc.CodeInvalidRequest, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := jsonrpc.ErrorResponse(tt.id, tt.err)
			conformsMessage(t, msg)
			var id []byte
			if tt.id.Valid() {
				id = []byte(tt.id.Raw())
			}
			require.NoError(t, checkErrorResponse(msg, id, tt.code))
			_, err := member(msg, "error", "data")
			assert.Equal(t, tt.wantData, err == nil, "data member")
		})
	}
}

// TestRequestErrorsConform shapes the errors the core itself returns for
// bad listen requests (ParseRequest, then Open).
func TestRequestErrorsConform(t *testing.T) {
	meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	tests := []struct {
		name string
		req  string
		id   string // request id token; "" when it cannot be read
		code int
	}{
		{"malformed JSON", `{"jsonrpc":"2.0","id":"listen-1",`, "", jsonrpc.CodeParseError},
		{"not an object", `[1,2]`, "", jsonrpc.CodeInvalidRequest},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"subscriptions/listen","params":{}}`, "", jsonrpc.CodeInvalidRequest},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"subscriptions/listen","params":{}}`, "", jsonrpc.CodeInvalidRequest},
		{"no id", `{"jsonrpc":"2.0","method":"subscriptions/listen","params":{"_meta":` + meta + `,"notifications":{}}}`, "", jsonrpc.CodeInvalidRequest},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":"listen-1","method":"subscriptions/listen","params":{}}`, `"listen-1"`, jsonrpc.CodeInvalidRequest},
		{"another method", `{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{}}`, `3`, jsonrpc.CodeMethodNotFound},
		{"no _meta", `{"jsonrpc":"2.0","id":"listen-1","method":"subscriptions/listen","params":{"notifications":{}}}`, `"listen-1"`, jsonrpc.CodeInvalidParams},
		{"no protocol version", `{"jsonrpc":"2.0","id":4,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}},"notifications":{}}}`, `4`, jsonrpc.CodeInvalidParams},
		{"no client capabilities", `{"jsonrpc":"2.0","id":4,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"notifications":{}}}`, `4`, jsonrpc.CodeInvalidParams},
		{"no notifications", `{"jsonrpc":"2.0","id":"listen-1","method":"subscriptions/listen","params":{"_meta":` + meta + `}}`, `"listen-1"`, jsonrpc.CodeInvalidParams},
		{"flag not a boolean", `{"jsonrpc":"2.0","id":"listen-1","method":"subscriptions/listen","params":{"_meta":` + meta + `,"notifications":{"toolsListChanged":"yes"}}}`, `"listen-1"`, jsonrpc.CodeInvalidParams},
		{"relative URI", `{"jsonrpc":"2.0","id":9,"method":"subscriptions/listen","params":{"_meta":` + meta + `,"notifications":{"resourceSubscriptions":["src/main.rs"]}}}`, `9`, jsonrpc.CodeInvalidParams},
		{"legacy protocol version",
			`{"jsonrpc":"2.0","id":"listen-1","method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{}}}`,
			`"listen-1"`, jsonrpc.CodeInternalError},
		{"taskIds without the client extension", string(listenRequest(`"listen-1"`, `{"taskIds":["task-1"]}`, clientPlain)), `"listen-1"`, jsonrpc.CodeMissingRequiredClientCapability},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := listen.ParseRequest([]byte(tt.req))
			if err == nil {
				var sub *listen.Subscription
				sub, err = listen.Open(context.Background(), idleSource(), req, serverOptions(t, serverCaps, serverInfo))
				if sub != nil {
					sub.Close(nil)
				}
			}
			require.Error(t, err)
			msg := jsonrpc.ErrorResponse(req.ID, err)
			conformsMessage(t, msg)
			var id []byte
			if tt.id != "" {
				id = []byte(tt.id)
			}
			require.NoError(t, checkErrorResponse(msg, id, tt.code))
		})
	}
}
