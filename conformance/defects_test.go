package conformance

import (
	"context"
	"errors"
	"testing"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
	"github.com/stretchr/testify/require"
)

// Known core defects. A table row may name one (a short name, such as
// "lenient-uri") to document a message the core shapes that fails the
// schema or a stream rule. The row is skipped with the exact failure while
// the defect reproduces, and fails as soon as it no longer does, so that the
// mark is removed once the core is fixed and the row becomes an ordinary
// conformance check. No row is marked today.

// xfail checks err (nil: the row conforms). A row marked with a known
// defect is skipped while err reproduces it.
func xfail(t *testing.T, defect string, err error, msg []byte) {
	t.Helper()
	switch {
	case defect == "":
		require.NoError(t, err, "message: %s", msg)
	case err == nil:
		t.Fatalf("known core defect %q no longer reproduces: remove the mark (message: %s)", defect, msg)
	default:
		t.Skipf("KNOWN CORE DEFECT %s\nmessage: %s\nerror: %v", defect, msg, err)
	}
}

// TestResourceURIsConform checks that any URI the core lets through (in the
// request's resourceSubscriptions, then in a resources/updated event)
// yields a notification that conforms, and that the core refuses the rest.
func TestResourceURIsConform(t *testing.T) {
	tests := []struct {
		uri    string
		defect string
	}{
		{uri: "file:///project/src/main.rs"},
		{uri: "https://example.com/a?b=c&d=%20e#f"},
		{uri: "file:///caf%C3%A9"},
		{uri: "urn:isbn:0451450523"},
		{uri: "file:///café"},
		{uri: "http://bücher.example/x"},
		{uri: "mailto:ops@example.com"},
		{uri: "x-custom+scheme.v1://host/path"},
		{uri: "http://[::1]:8080/x"},
		{uri: "file:///a b"}, // refused by the core
		{uri: "src/main.rs"}, // refused by the core
		{uri: "file:///%zz"},
		{uri: "file:///a%"},
		{uri: "http://[::1/x"},
		{uri: "http://host:port/"},
	}
	for _, tt := range tests {
		t.Run(tt.uri, func(t *testing.T) {
			reqJSON := listenRequest(`"listen-1"`, `{"resourceSubscriptions":["`+tt.uri+`"]}`, clientPlain)
			req, err := listen.ParseRequest(reqJSON)
			if err != nil {
				msg := jsonrpc.ErrorResponse(req.ID, err)
				conformsMessage(t, msg)
				xfail(t, tt.defect, checkErrorResponse(msg, []byte(`"listen-1"`), jsonrpc.CodeInvalidParams), msg)
				return
			}
			ev := listen.ResourceUpdated(tt.uri)
			if ev.Validate() != nil {
				xfail(t, tt.defect, nil, nil)
				return
			}
			sub, err := listen.Open(context.Background(), idleSource(), req, serverOptions(t, serverCaps, serverInfo))
			require.NoError(t, err)
			defer sub.Close(nil)
			msg, err := sub.Notification(ev)
			require.NoError(t, err)
			require.NotNil(t, msg)
			err = validate(t, "ResourceUpdatedNotification", msg)
			if err == nil {
				conformsMessage(t, msg)
			}
			xfail(t, tt.defect, err, msg)
		})
	}
}

// methodExtension is an extension that shapes every event into method.
type methodExtension struct{ method string }

const methodExtID = "com.example/method"

func (methodExtension) ID() string { return methodExtID }

func (methodExtension) SupportsProtocol(string) bool { return true }

func (methodExtension) SubscriptionFilter(_ context.Context, _ *listen.Request, requested listen.Filter) (listen.Filter, error) {
	return listen.Filter{"com.example/all": requested["com.example/all"]}, nil
}

func (e methodExtension) ShapeSubscriptionEvent(listen.Event, listen.Filter, listen.Settings) (string, map[string]any, error) {
	return e.method, map[string]any{"com.example/n": 1}, nil
}

// TestExtensionCannotShapeReservedMethods: an extension that shapes a core
// subscription notification or a request-scoped one must be refused (an
// error, which fails the stream, or a drop); what the core writes must
// otherwise conform and obey the stream rules.
func TestExtensionCannotShapeReservedMethods(t *testing.T) {
	tests := []struct {
		method string
		defect string
	}{
		{method: "notifications/com.example/changed"},
		{method: spec.MethodAcknowledged},
		{method: spec.MethodToolsListChanged},
		{method: spec.MethodResourceUpdated},
		{method: "notifications/progress"},
		{method: "notifications/message"},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			caps, err := listen.CapabilitiesFrom(`{"tools":{"listChanged":true},"extensions":{"` + methodExtID + `":{}}}`)
			require.NoError(t, err)
			reg, err := listen.NewExtensionRegistry(methodExtension{tt.method})
			require.NoError(t, err)
			filter := `{"com.example/all":true}`
			req := parseRequest(t, listenRequest(`1`, filter, `{"extensions":{"`+methodExtID+`":{}}}`))
			sub, err := listen.Open(context.Background(), idleSource(), req, &listen.Options{Capabilities: caps, Extensions: reg})
			require.NoError(t, err)
			defer sub.Close(nil)
			ack, err := sub.Acknowledgement()
			require.NoError(t, err)
			msg, err := sub.Notification(listen.ExtensionEvent(methodExtID, listen.Filter{"com.example/all": true}, nil))
			if err != nil || msg == nil {
				xfail(t, tt.defect, nil, msg) // refused: conformant
				return
			}
			errs := []error{
				checkStream([][]byte{ack, msg}, []byte(`1`), []byte(filter), endNone),
				validate(t, "JSONRPCNotification", msg),
			}
			if def, core := notificationDefs[tt.method]; core {
				errs = append(errs, validate(t, def, msg))
			}
			err = errors.Join(errs...)
			if err == nil {
				conformsMessage(t, msg)
			}
			xfail(t, tt.defect, err, msg)
		})
	}
}
