package conformance

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSubscriptionIDKeepsJSONType shapes every kind of message for request
// ids of both JSON types, including ids that a float64 or a re-encoding
// would change, and checks that each message carries the request id with
// its JSON type: as "id" on the completion and the failure, as the _meta
// subscription id everywhere else (and on the completion too).
func TestSubscriptionIDKeepsJSONType(t *testing.T) {
	tokens := []struct{ name, token string }{
		{"string", `"listen-1"`},
		{"string of digits", `"7"`},
		{"empty string", `""`},
		{"string with escapes", `"caf\u00e9 \"quoted\" \\ tab\t"`},
		{"string with unicode", `"подписка-✓"`},
		{"integer", `7`},
		{"zero", `0`},
		{"negative integer", `-42`},
		{"integer beyond float64 precision", `9007199254740993`},
		{"integer beyond int64", `123456789012345678901234567890`},
	}
	filter := `{"toolsListChanged":true,"resourceSubscriptions":["` + watchedURI + `"],"taskIds":["task-1"]}`
	for _, tt := range tokens {
		t.Run(tt.name, func(t *testing.T) {
			req := listenRequest(tt.token, filter, clientTasks)
			sub := open(t, req, serverOptions(t, serverCaps, serverInfo), idleSource())
			want := []byte(tt.token)
			require.NoError(t, sameID([]byte(sub.ID().Raw()), want), "Subscription.ID")

			ack, err := sub.Acknowledgement()
			require.NoError(t, err)
			conformsMessage(t, ack)
			require.NoError(t, checkAck(ack, want, requestedFilter(t, req)))

			events := []listen.Event{
				listen.ToolsListChanged(), // no params: the fast path
				listen.ToolsListChanged().WithMetadata(map[string]any{"k": "v"}),
				listen.ResourceUpdated(watchedURI),
				listen.ResourceUpdated(watchedURI).WithParams(map[string]any{"title": "x"}),
				taskEvent("task-1", "working"),
			}
			for _, ev := range events {
				msg, err := sub.Notification(ev)
				require.NoError(t, err)
				require.NotNil(t, msg, "dropped %v", ev.Kind)
				conformsMessage(t, msg)
				require.NoError(t, checkNotification(msg, want))
			}

			done := sub.Completion()
			conformsMessage(t, done)
			require.NoError(t, checkCompletion(done, want))

			failed := sub.Failure()
			conformsMessage(t, failed)
			require.NoError(t, checkErrorResponse(failed, want, jsonrpc.CodeInternalError))

			refused := jsonrpc.ErrorResponse(sub.ID(), jsonrpc.NewError(jsonrpc.CodeInvalidParams, "bad"))
			conformsMessage(t, refused)
			require.NoError(t, checkErrorResponse(refused, want, jsonrpc.CodeInvalidParams))
		})
	}
}

// TestEventCannotForgeSubscriptionID gives events a different subscription
// id in their metadata, in params._meta and in an extension's shaped
// params: the request's id must win every time, and the other _meta keys
// must survive.
func TestEventCannotForgeSubscriptionID(t *testing.T) {
	forged := []any{"listen-2", 8, json.Number("7.0"), nil, map[string]any{"id": 1}, "7"}
	type eventCase struct {
		name string
		ev   func(forged any) listen.Event
	}
	withMeta := func(f any) map[string]any {
		return map[string]any{spec.MetaSubscriptionID: f, "com.example/keep": "kept"}
	}
	events := []eventCase{
		{"list change, metadata", func(f any) listen.Event {
			return listen.PromptsListChanged().WithMetadata(withMeta(f))
		}},
		{"list change, params._meta", func(f any) listen.Event {
			return listen.ResourcesListChanged().WithParams(map[string]any{"_meta": withMeta(f)})
		}},
		{"resource update, metadata and params._meta", func(f any) listen.Event {
			return listen.ResourceUpdated(watchedURI).
				WithParams(map[string]any{"_meta": withMeta(f), "uri": "file:///forged"}).
				WithMetadata(withMeta(f))
		}},
		{"extension, metadata", func(f any) listen.Event {
			return taskEvent("task-1", "working").WithMetadata(withMeta(f))
		}},
		{"extension, shaped params._meta", func(f any) listen.Event {
			ev := taskEvent("task-1", "working")
			ev.Payload.(map[string]any)["_meta"] = withMeta(f)
			return ev
		}},
	}
	filter := `{"promptsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["` + watchedURI + `"],"taskIds":["task-1"]}`
	for _, id := range ids {
		sub := open(t, listenRequest(id.token, filter, clientTasks), serverOptions(t, serverCaps, serverInfo), idleSource())
		for _, ec := range events {
			for _, f := range forged {
				name := fmt.Sprintf("%s/%s/forged %#v", id.name, ec.name, f)
				t.Run(name, func(t *testing.T) {
					ev := ec.ev(f)
					msg, err := sub.Notification(ev)
					require.NoError(t, err)
					require.NotNil(t, msg, "dropped")
					conformsMessage(t, msg)
					require.NoError(t, checkNotification(msg, []byte(id.token)), "forged %v", f)
					kept, err := member(msg, "params", "_meta", "com.example/keep")
					require.NoError(t, err, "other _meta keys survive")
					assert.JSONEq(t, `"kept"`, string(kept))
					if ev.Kind == listen.KindResourceUpdated {
						uri, _ := member(msg, "params", "uri")
						assert.JSONEq(t, `"`+watchedURI+`"`, string(uri), "uri comes from the event")
					}
				})
			}
		}
	}
}

// TestUnselectedEventsAreDropped checks that the core writes nothing for an
// event the acknowledged filter does not select (the stream must carry only
// the types the client opted in to).
func TestUnselectedEventsAreDropped(t *testing.T) {
	tests := []struct {
		name   string
		client string
		filter string
		ev     listen.Event
	}{
		{"tools not requested", clientPlain, `{"promptsListChanged":true}`, listen.ToolsListChanged()},
		{"tools requested false", clientPlain, `{"toolsListChanged":false}`, listen.ToolsListChanged()},
		{"prompts not acknowledged", clientPlain, `{"promptsListChanged":true}`, listen.ResourcesListChanged()},
		{"resource not subscribed", clientPlain, `{"resourceSubscriptions":["file:///a"]}`, listen.ResourceUpdated("file:///b")},
		{"task not listed", clientTasks, `{"taskIds":["task-1"]}`, taskEvent("task-2", "working")},
		{"tasks not requested", clientTasks, `{"toolsListChanged":true}`, taskEvent("task-1", "working")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub := open(t, listenRequest(`"listen-1"`, tt.filter, tt.client), serverOptions(t, serverCaps, serverInfo), idleSource())
			msg, err := sub.Notification(tt.ev)
			require.NoError(t, err)
			require.Nil(t, msg, "an unselected event was shaped: %s", msg)
		})
	}
}
