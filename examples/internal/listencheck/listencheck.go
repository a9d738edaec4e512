// Package listencheck holds what the tests of the example HTTP servers
// built on shared code (examples/server, and examples/internal/broker's
// mcp-go instances) share: the
// 2026-07-28 POST they send, the SSE messages they read, and the check that
// each listen stream gets exactly what it asked for.
package listencheck

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/listentest"
)

// Meta is the _meta member of a 2026-07-28 request whose client declares no
// capabilities.
const Meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// NewRequest returns a 2026-07-28 Streamable HTTP POST of body to url with
// the headers every such request carries: Content-Type, Accept,
// MCP-Protocol-Version and Mcp-Method (method).
func NewRequest(t testing.TB, ctx context.Context, url, method, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	return req
}

// Messages reads the JSON messages of an SSE stream onto a channel, which
// is closed when the stream ends. Its goroutine ends then too, unless more
// than 64 messages were left unread: read the channel to its end, or read
// streams that carry only a few messages (as these tests do).
func Messages(body io.Reader) <-chan map[string]any {
	out := make(chan map[string]any, 64)
	go func() {
		defer close(out)
		r := listentest.NewSSEReader(body)
		for {
			data, err := r.Data()
			if err != nil {
				return
			}
			var m map[string]any
			if json.Unmarshal(data, &m) == nil {
				out <- m
			}
		}
	}()
	return out
}

// OnlyWhatAsked checks that each listen stream gets exactly what it asked
// for, in order, and nothing else. It opens three listens with post (one
// for tools, one for prompts, one for the resource readmeURI), then, in
// two rounds, calls the trigger tools with call (which fails t unless the
// call succeeded): a resources/updated nobody asked for, a tool change, a
// prompt change and a resources/updated of readmeURI; whatever arrives
// first on each stream must be its round's only event, tagged with the
// stream's subscription id. Two rounds: the go-sdk debounces list changes
// by 10 ms, so a round's notifications are read before the next round
// changes anything.
func OnlyWhatAsked(t *testing.T, post func(ctx context.Context, method, body string) *http.Response, call func(name, args string), readmeURI string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	open := func(id, filter string) <-chan map[string]any {
		resp := post(ctx, "subscriptions/listen", `{"jsonrpc":"2.0","id":`+id+`,"method":"subscriptions/listen","params":{`+Meta+`,"notifications":`+filter+`}}`)
		require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		t.Cleanup(func() { resp.Body.Close() })
		msgs := Messages(resp.Body)
		ack := <-msgs
		require.Equal(t, "notifications/subscriptions/acknowledged", ack["method"])
		return msgs
	}
	tools := open(`"tools"`, `{"toolsListChanged":true}`)
	prompts := open(`"prompts"`, `{"promptsListChanged":true}`)
	readme := open(`7`, `{"resourceSubscriptions":["`+readmeURI+`"]}`)

	next := func(c <-chan map[string]any) map[string]any {
		select {
		case m := <-c:
			return m
		case <-ctx.Done():
			t.Fatal("timed out")
			return nil
		}
	}
	subID := func(m map[string]any) any {
		return m["params"].(map[string]any)["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"]
	}
	for range 2 {
		call("trigger_resource_update", `{"uri":"test://static/other"}`) // nobody asked
		call("test_trigger_tool_change", `{}`)
		call("test_trigger_prompt_change", `{}`)
		call("trigger_resource_update", `{"uri":"`+readmeURI+`"}`)
		m := next(tools)
		assert.Equal(t, "notifications/tools/list_changed", m["method"])
		assert.Equal(t, "tools", subID(m))
		m = next(prompts)
		assert.Equal(t, "notifications/prompts/list_changed", m["method"])
		assert.Equal(t, "prompts", subID(m))
		m = next(readme)
		assert.Equal(t, "notifications/resources/updated", m["method"])
		assert.Equal(t, readmeURI, m["params"].(map[string]any)["uri"])
		assert.EqualValues(t, 7, subID(m))
	}
}
