package listen_test

import (
	"encoding/json"
	"errors"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
)

func TestEventValidate(t *testing.T) {
	bad := map[string]any{"x": make(chan int)}
	sel := listen.Filter{"taskIds": []any{"t1"}}
	tests := []struct {
		name string
		ev   listen.Event
		want string // "" = valid
	}{
		{"tools", listen.ToolsListChanged(), ""},
		{"prompts with metadata", listen.PromptsListChanged().WithMetadata(map[string]any{"k": 1}), ""},
		{"resources list", listen.ResourcesListChanged().WithParams(map[string]any{"a": "b"}), ""},
		{"resource updated", listen.ResourceUpdated("file:///a/b.txt"), ""},
		{"extension", listen.ExtensionEvent("com.example/watch", sel, map[string]any{"s": 1}), ""},
		{"zero event", listen.Event{}, listen.MsgEventInvalid},
		{"unknown kind", listen.Event{Kind: 99}, listen.MsgEventInvalid},
		{"params not JSON", listen.ToolsListChanged().WithParams(bad), listen.MsgEventParams},
		{"params checked before metadata", listen.ToolsListChanged().WithParams(bad).WithMetadata(bad), listen.MsgEventParams},
		{"metadata not JSON", listen.ToolsListChanged().WithMetadata(bad), listen.MsgEventMetadata},
		{"relative URI", listen.ResourceUpdated("a/b"), listen.MsgEventAbsoluteURI},
		{"empty URI", listen.ResourceUpdated(""), listen.MsgEventAbsoluteURI},
		{"URI with space", listen.ResourceUpdated("file:///a b"), listen.MsgEventAbsoluteURI},
		{"scheme starting with digit", listen.ResourceUpdated("1x:/a"), listen.MsgEventAbsoluteURI},
		{"bad escape", listen.ResourceUpdated("file:///%zz"), listen.MsgEventAbsoluteURI},
		{"truncated escape", listen.ResourceUpdated("file:///a%"), listen.MsgEventAbsoluteURI},
		{"unclosed IP literal", listen.ResourceUpdated("http://[::1/x"), listen.MsgEventAbsoluteURI},
		{"non-numeric port", listen.ResourceUpdated("http://host:port/"), listen.MsgEventAbsoluteURI},
		{"escape in host", listen.ResourceUpdated("http://%41.com/"), listen.MsgEventAbsoluteURI},
		{"IP literal with port", listen.ResourceUpdated("http://[::1]:8080/x"), ""},
		{"query and fragment escapes", listen.ResourceUpdated("https://example.com/a?b=c&d=%20e#f"), ""},
		{"urn", listen.ResourceUpdated("urn:isbn:0451450523"), ""},
		{"IRI", listen.ResourceUpdated("file:///café"), ""},
		{"list event with URI", listen.Event{Kind: listen.KindToolsListChanged, URI: "file:///a"}, listen.MsgEventListURI},
		{"core event with extension id", listen.Event{Kind: listen.KindToolsListChanged, ExtensionID: "x"}, listen.MsgEventCoreExtFields},
		{"core event with selector", listen.Event{Kind: listen.KindResourceUpdated, URI: "a:b", Selector: sel}, listen.MsgEventCoreExtFields},
		{"core event with payload", listen.Event{Kind: listen.KindPromptsListChanged, Payload: 1}, listen.MsgEventCoreExtFields},
		{"extension without id", listen.ExtensionEvent("", sel, nil), listen.MsgEventExtID},
		{"extension without selector", listen.ExtensionEvent("x", nil, nil), listen.MsgEventExtSelector},
		{"extension with non-JSON selector", listen.ExtensionEvent("x", listen.Filter{"a": bad}, nil), listen.MsgEventExtSelector},
		{"extension metadata not JSON", listen.ExtensionEvent("x", sel, nil).WithMetadata(bad), listen.MsgEventMetadata},
		{"extension with URI", listen.Event{Kind: listen.KindExtension, ExtensionID: "x", Selector: sel, URI: "a:b"}, listen.MsgEventExtCoreFields},
		{"extension with params", listen.ExtensionEvent("x", sel, nil).WithParams(map[string]any{"a": 1}), listen.MsgEventExtCoreFields},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.ev.Validate()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			assert.ErrorIs(t, err, listen.ErrInvalidEvent)
			var ee *listen.EventError
			require.True(t, errors.As(err, &ee))
			assert.Equal(t, tt.want, ee.Message)
		})
	}
}

func TestValidateDoesNotAllocate(t *testing.T) {
	ev := listen.ResourceUpdated("file:///project/config.json")
	allocs := testing.AllocsPerRun(100, func() { _ = ev.Validate() })
	assert.Zero(t, allocs)
}

// FuzzEventValidate builds events from fuzzed fields and checks that
// Validate never panics, returns only the documented messages, and agrees
// with net/url on what an absolute URI is for simple cases.
func FuzzEventValidate(f *testing.F) {
	f.Add(uint8(4), "file:///a", []byte(`{"k":1}`), []byte(`{}`), "", []byte(`{}`))
	f.Add(uint8(1), "", []byte(`{}`), []byte(`{"m":[1.0]}`), "", []byte(`{}`))
	f.Add(uint8(5), "", []byte(`{}`), []byte(`{}`), "ext", []byte(`{"taskIds":["a"]}`))
	f.Add(uint8(4), "a b:c", []byte(`null`), []byte(`[]`), "x", []byte(`null`))
	messages := map[string]bool{
		listen.MsgEventParams: true, listen.MsgEventMetadata: true, listen.MsgEventAbsoluteURI: true,
		listen.MsgEventListURI: true, listen.MsgEventCoreExtFields: true, listen.MsgEventExtID: true,
		listen.MsgEventExtSelector: true, listen.MsgEventExtCoreFields: true, listen.MsgEventInvalid: true,
	}
	f.Fuzz(func(t *testing.T, kind uint8, uri string, params, meta []byte, extID string, selector []byte) {
		var p, m map[string]any
		var sel map[string]any
		_ = json.Unmarshal(params, &p)
		_ = json.Unmarshal(meta, &m)
		_ = json.Unmarshal(selector, &sel)
		ev := listen.Event{Kind: listen.Kind(kind % 7), URI: uri, Params: p, Metadata: m, ExtensionID: extID, Selector: sel}
		err := ev.Validate()
		if err != nil && !messages[err.Error()] {
			t.Fatalf("undocumented message %q", err)
		}
		if listen.AbsoluteURI(uri) {
			u, perr := url.Parse(uri)
			if perr != nil {
				t.Fatalf("AbsoluteURI(%q) but net/url refuses it: %v", uri, perr)
			}
			if u.Scheme == "" || !u.IsAbs() {
				t.Fatalf("AbsoluteURI(%q) but net/url finds no scheme", uri)
			}
		}
		if err == nil && ev.Kind == listen.KindResourceUpdated && !listen.AbsoluteURI(ev.URI) {
			t.Fatalf("valid resource update with URI %q", uri)
		}
	})
}
