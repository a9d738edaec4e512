package listen_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
)

func uris(n, size int) []any {
	out := make([]any, n)
	for i := range out {
		u := "file:///" + strings.Repeat("x", size-len("file:///")-6) + "/" + strings.Repeat("0", 5-len(itoa(i))) + itoa(i)
		out[i] = u
	}
	return out
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// One URI, and a listen's whole filter, are bounded, with exact -32602
// messages; the defaults fit what real listens send.
func TestListenSizeLimits(t *testing.T) {
	tests := []struct {
		name    string
		opts    listen.Options
		filter  listen.Filter
		wantMsg string // "" when accepted
	}{
		{name: "URI at the default limit", filter: listen.Filter{"resourceSubscriptions": uris(1, 4096)}},
		{name: "URI over the default limit", filter: listen.Filter{"resourceSubscriptions": uris(1, 4097)},
			wantMsg: "subscriptions/listen resourceSubscriptions URIs must be at most 4096 bytes"},
		{name: "URI over a custom limit", opts: listen.Options{MaxURIBytes: 64}, filter: listen.Filter{"resourceSubscriptions": uris(1, 65)},
			wantMsg: "subscriptions/listen resourceSubscriptions URIs must be at most 64 bytes"},
		{name: "1,000 URIs of 120 bytes fit the default", filter: listen.Filter{"resourceSubscriptions": uris(1000, 120)}},
		{name: "1,000 URIs of 1 KiB do not", filter: listen.Filter{"resourceSubscriptions": uris(1000, 1024)},
			wantMsg: "subscriptions/listen notifications must be at most 131072 bytes"},
		{name: "extension keys count too", opts: listen.Options{MaxFilterBytes: 100},
			filter:  listen.Filter{"toolsListChanged": true, "taskIds": []any{strings.Repeat("t", 100)}},
			wantMsg: "subscriptions/listen notifications must be at most 100 bytes"},
		{name: "a custom limit that fits", opts: listen.Options{MaxFilterBytes: 100}, filter: listen.Filter{"toolsListChanged": true}},
		{name: "folder URI at the default depth", opts: listen.Options{SubResources: &listen.SubResources{}},
			filter: listen.Filter{"resourceSubscriptions": []any{"file://" + strings.Repeat("/a", 128) + "?x/y#z/"}}},
		{name: "folder URI over the default depth", opts: listen.Options{SubResources: &listen.SubResources{}},
			filter:  listen.Filter{"resourceSubscriptions": []any{"file:///a", "file://" + strings.Repeat("/", 129)}},
			wantMsg: "subscriptions/listen resourceSubscriptions URIs must have at most 128 path segments"},
		{name: "folder URI over a custom depth", opts: listen.Options{SubResources: &listen.SubResources{}, MaxURISegments: 3},
			filter:  listen.Filter{"resourceSubscriptions": []any{"file://host/a/b/c/"}},
			wantMsg: "subscriptions/listen resourceSubscriptions URIs must have at most 3 path segments"},
		{name: "depth is not counted without SubResources",
			filter: listen.Filter{"resourceSubscriptions": []any{"file://" + strings.Repeat("/", 4000)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Capabilities = allCaps
			src := newTestSource()
			sub, err := listen.Open(context.Background(), src, request(jsonrpc.IntID(1), tt.filter), &opts)
			if tt.wantMsg == "" {
				require.NoError(t, err)
				sub.Close(nil)
				return
			}
			var we *jsonrpc.Error
			require.ErrorAs(t, err, &we)
			assert.Equal(t, jsonrpc.CodeInvalidParams, we.Code)
			assert.Equal(t, tt.wantMsg, we.Message)
			assert.Empty(t, src.opened, "the source is not opened")
		})
	}
}

// MaxFilterBytes counts the filter as its compact JSON: a filter of exactly
// the bound is accepted, one byte more is refused, whatever its shape.
func TestMaxFilterBytesIsExact(t *testing.T) {
	filters := []struct {
		name   string
		filter listen.Filter
	}{
		{"flags", listen.Filter{"toolsListChanged": true, "promptsListChanged": false}},
		{"a list of URIs", listen.Filter{"resourceSubscriptions": []any{"file:///a", "file:///bb", "file:///ccc"}}},
		{"a []string list", listen.Filter{"resourceSubscriptions": []string{"file:///a", "file:///b"}}},
		{"an empty list and an empty object", listen.Filter{"resourceSubscriptions": []any{}, "x": map[string]any{}}},
		{"nested extension values", listen.Filter{"taskIds": []any{"t1", "t2"},
			"ext": map[string]any{"a": []any{map[string]any{"b": nil, "c": "d"}}, "e": true}}},
	}
	for _, tt := range filters {
		raw, err := json.Marshal(tt.filter)
		require.NoError(t, err)
		n := len(raw)
		for _, bound := range []int{n, n - 1} {
			t.Run(fmt.Sprintf("%s, %d bytes, bound %d", tt.name, n, bound), func(t *testing.T) {
				opts := listen.Options{Capabilities: allCaps, MaxFilterBytes: bound}
				sub, err := listen.Open(context.Background(), newTestSource(), request(jsonrpc.IntID(1), tt.filter), &opts)
				if bound == n {
					require.NoError(t, err, "a filter of exactly the bound is accepted")
					sub.Close(nil)
					return
				}
				var we *jsonrpc.Error
				require.ErrorAs(t, err, &we, "one byte over the bound is refused")
				assert.Equal(t, fmt.Sprintf("subscriptions/listen notifications must be at most %d bytes", bound), we.Message)
			})
		}
	}
}

// A listen's id is bounded (Options.MaxIDBytes, 256 bytes by default): Open
// refuses a longer one with -32600 and the exact message, before the source
// is opened, and clears Request.ID so that the error response written for
// it carries no id. ParseRequest leaves the bound to Open. Before, a listen
// whose id was a 250,000-byte string was opened, and its stream repeated
// the id in every notification.
func TestListenIDBound(t *testing.T) {
	str := func(n int) jsonrpc.ID { return jsonrpc.StringID(strings.Repeat("x", n-2)) }
	tests := []struct {
		name    string
		max     int
		id      jsonrpc.ID
		wantMsg string // "" when accepted
	}{
		{"256 bytes by default", 0, str(256), ""},
		{"257 bytes by default", 0, str(257), "Invalid request: id must be at most 256 bytes"},
		{"250,000 bytes", 0, str(250_000), "Invalid request: id must be at most 256 bytes"},
		{"a custom bound that fits", 1000, str(1000), ""},
		{"over a custom bound", 16, jsonrpc.IntID(12345678901234567), "Invalid request: id must be at most 16 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":` + tt.id.Raw() + `,"method":"subscriptions/listen","params":{"_meta":{` +
				`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},` +
				`"notifications":{"toolsListChanged":true}}}`
			req, err := listen.ParseRequest([]byte(body))
			require.NoError(t, err, "ParseRequest does not bound the id")
			require.Equal(t, tt.id, req.ID)
			src := newTestSource()
			sub, err := listen.Open(context.Background(), src, req, &listen.Options{Capabilities: allCaps, MaxIDBytes: tt.max})
			if tt.wantMsg == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.id, sub.ID())
				sub.Close(nil)
				return
			}
			var we *jsonrpc.Error
			require.ErrorAs(t, err, &we)
			assert.Equal(t, jsonrpc.CodeInvalidRequest, we.Code)
			assert.Equal(t, tt.wantMsg, we.Message)
			assert.Empty(t, src.opened, "the source is not opened")
			assert.Equal(t, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"`+tt.wantMsg+`"}}`,
				string(jsonrpc.ErrorResponse(req.ID, err)), "the id is cleared")
		})
	}
}
