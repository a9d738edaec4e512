package conformance

import (
	"testing"

	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
	"github.com/stretchr/testify/require"
)

// TestRulesRejectWrongMessages proves that the Go-side rules can fail. Most
// of these messages pass the schema (schemaDef names a $def that accepts
// them): only the rule catches them.
func TestRulesRejectWrongMessages(t *testing.T) {
	const req = `{"toolsListChanged":true,"resourceSubscriptions":["file:///a"]}`
	notif := func(method, sid string) string {
		return `{"jsonrpc":"2.0","method":"` + method + `","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":` + sid + `}}}`
	}
	tests := []struct {
		name      string
		check     func(msg []byte) error
		msg       string
		schemaDef string // a $def the message passes, when it does
	}{
		{"notification with an id", func(m []byte) error { return checkNotification(m, []byte(`7`)) },
			`{"jsonrpc":"2.0","id":7,"method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}`,
			"ToolListChangedNotification"},
		{"notification without params", func(m []byte) error { return checkNotification(m, []byte(`7`)) },
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, "ToolListChangedNotification"},
		{"notification without subscription id", func(m []byte) error { return checkNotification(m, []byte(`7`)) },
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{}}}`, "ToolListChangedNotification"},
		{"integer id became a string", func(m []byte) error { return checkNotification(m, []byte(`7`)) },
			notif(spec.MethodToolsListChanged, `"7"`), "ToolListChangedNotification"},
		{"string id became an integer", func(m []byte) error { return checkNotification(m, []byte(`"7"`)) },
			notif(spec.MethodToolsListChanged, `7`), "ToolListChangedNotification"},
		{"integer id became 7.0", func(m []byte) error { return checkNotification(m, []byte(`7`)) },
			notif(spec.MethodToolsListChanged, `7.0`), "ToolListChangedNotification"},
		{"integer id lost precision", func(m []byte) error { return checkNotification(m, []byte(`9007199254740993`)) },
			notif(spec.MethodToolsListChanged, `9007199254740992`), "ToolListChangedNotification"},
		{"another subscription's id", func(m []byte) error { return checkNotification(m, []byte(`"listen-1"`)) },
			notif(spec.MethodToolsListChanged, `"listen-2"`), "ToolListChangedNotification"},
		{"ack not a subset: unrequested type", func(m []byte) error { return checkAck(m, []byte(`1`), []byte(req)) },
			`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"notifications":{"promptsListChanged":true}}}`,
			"SubscriptionsAcknowledgedNotification"},
		{"ack not a subset: unrequested URI", func(m []byte) error { return checkAck(m, []byte(`1`), []byte(req)) },
			`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"notifications":{"resourceSubscriptions":["file:///a","file:///b"]}}}`,
			"SubscriptionsAcknowledgedNotification"},
		{"ack not a subset: false became true", func(m []byte) error { return checkAck(m, []byte(`1`), []byte(`{"toolsListChanged":false}`)) },
			`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"notifications":{"toolsListChanged":true}}}`,
			"SubscriptionsAcknowledgedNotification"},
		{"ack without subscription id", func(m []byte) error { return checkAck(m, []byte(`1`), []byte(req)) },
			`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{}}}`,
			"SubscriptionsAcknowledgedNotification"},
		{"resultType input_required", func(m []byte) error { return checkCompletion(m, []byte(`"listen-1"`)) },
			`{"jsonrpc":"2.0","id":"listen-1","result":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"},"resultType":"input_required"}}`,
			"SubscriptionsListenResultResponse"},
		{"completion for another id", func(m []byte) error { return checkCompletion(m, []byte(`"listen-1"`)) },
			`{"jsonrpc":"2.0","id":"listen-2","result":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"},"resultType":"complete"}}`,
			"SubscriptionsListenResultResponse"},
		{"completion subscription id changed type", func(m []byte) error { return checkCompletion(m, []byte(`3`)) },
			`{"jsonrpc":"2.0","id":3,"result":{"_meta":{"io.modelcontextprotocol/subscriptionId":"3"},"resultType":"complete"}}`,
			"SubscriptionsListenResultResponse"},
		{"error response without the readable id", func(m []byte) error { return checkErrorResponse(m, []byte(`3`), jsonrpc.CodeInvalidParams) },
			`{"jsonrpc":"2.0","error":{"code":-32602,"message":"bad"}}`, "JSONRPCErrorResponse"},
		{"error response with an unreadable id", func(m []byte) error { return checkErrorResponse(m, nil, jsonrpc.CodeParseError) },
			`{"jsonrpc":"2.0","id":"guess","error":{"code":-32700,"message":"Parse error"}}`, "JSONRPCErrorResponse"},
		{"internal error with data", func(m []byte) error { return checkErrorResponse(m, []byte(`3`), jsonrpc.CodeInternalError) },
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Internal error","data":{"stack":"..."}}}`, "JSONRPCErrorResponse"},
		{"wrong error code", func(m []byte) error { return checkErrorResponse(m, []byte(`3`), jsonrpc.CodeInternalError) },
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"Server error"}}`, "JSONRPCErrorResponse"},
		{"duplicate _meta hides a forged id", checkFrame,
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"evil"},"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}`,
			"ToolListChangedNotification"},
		{"raw newline inside a message", checkFrame,
			"{\"jsonrpc\":\"2.0\",\n\"method\":\"notifications/tools/list_changed\"}", "ToolListChangedNotification"},
		{"trailing data", checkFrame,
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}{}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.schemaDef != "" {
				require.NoError(t, validate(t, tt.schemaDef, []byte(tt.msg)), "the schema alone should accept this message")
			}
			require.Error(t, tt.check([]byte(tt.msg)))
			stats.rejections.Add(1)
		})
	}
}

// TestRulesRejectWrongStreams feeds checkStream streams that break the
// ordering and selection rules.
func TestRulesRejectWrongStreams(t *testing.T) {
	const (
		id       = `"listen-1"`
		req      = `{"toolsListChanged":true,"resourceSubscriptions":["file:///a"],"taskIds":["task-1"]}`
		ack      = `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"},"notifications":{"toolsListChanged":true,"resourceSubscriptions":["file:///a"],"taskIds":["task-1"]}}}`
		tools    = `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"}}}`
		prompts  = `{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"}}}`
		updatedA = `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"},"uri":"file:///a"}}`
		updatedB = `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"},"uri":"file:///b"}}`
		task1    = `{"jsonrpc":"2.0","method":"notifications/tasks","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"},"taskId":"task-1"}}`
		task2    = `{"jsonrpc":"2.0","method":"notifications/tasks","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"},"taskId":"task-2"}}`
		progress = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"},"progressToken":1,"progress":1}}`
		done     = `{"jsonrpc":"2.0","id":"listen-1","result":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"},"resultType":"complete"}}`
		failed   = `{"jsonrpc":"2.0","id":"listen-1","error":{"code":-32603,"message":"Subscription source failed"}}`
	)
	tests := []struct {
		name string
		msgs []string
		end  int
		ok   bool
	}{
		{"valid stream", []string{ack, tools, updatedA, task1, done}, endCompletion, true},
		{"valid failed stream", []string{ack, tools, failed}, endFailure, true},
		{"valid cancelled stream", []string{ack, tools}, endNone, true},
		{"empty stream", nil, endNone, false},
		{"notification before the ack", []string{tools, ack, done}, endCompletion, false},
		{"second ack", []string{ack, ack, done}, endCompletion, false},
		{"type not acknowledged", []string{ack, prompts, done}, endCompletion, false},
		{"URI not acknowledged", []string{ack, updatedB, done}, endCompletion, false},
		{"task not acknowledged", []string{ack, task2, done}, endCompletion, false},
		{"progress on the stream", []string{ack, progress, done}, endCompletion, false},
		{"message after the completion", []string{ack, done, tools}, endCompletion, false},
		{"no completion", []string{ack, tools}, endCompletion, false},
		{"failure instead of completion", []string{ack, failed}, endCompletion, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs := make([][]byte, len(tt.msgs))
			for i, m := range tt.msgs {
				msgs[i] = []byte(m)
			}
			err := checkStream(msgs, []byte(id), []byte(req), tt.end)
			if tt.ok {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			stats.rejections.Add(1)
		})
	}
}
