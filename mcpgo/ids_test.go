package mcpgo_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/mcpgo"
)

// idTokens are ids mcp-go, which decodes ids as float64 or string, would
// not answer with as sent (9007199254740993, "\u0037" and "a<b") and ids it
// would.
var idTokens = []string{`9007199254740993`, `"\u0037"`, `-0`, `"a<b"`, `"7"`, `7`, `-12`}

// TestHTTPKeepsIDs: every answer carries the client's id token exactly,
// whether mcp-go answers (tools/call, tools/list, server/discover, an error)
// or this library (a listen's acknowledgement tag and its completion).
func TestHTTPKeepsIDs(t *testing.T) {
	srv := plainServer()
	h, err := mcpgo.NewHandler(srv, mcpgo.HandlerOptions{})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()

	for _, id := range idTokens {
		t.Run(id, func(t *testing.T) {
			for _, c := range []struct {
				method string
				params map[string]any
				fails  bool
			}{
				{"tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}, false},
				{"tools/list", nil, false},
				{"server/discover", nil, false},
				{"prompts/get", map[string]any{"name": "no_such_prompt"}, true},
			} {
				msgs := call(t, ts.URL, id, c.method, c.params)
				require.NotEmpty(t, msgs)
				m := decode(t, msgs[len(msgs)-1])
				assert.Equal(t, id, string(m.ID), "%s answered %s", c.method, m.raw)
				assert.Equal(t, c.fails, m.Error != nil, "%s answered %s", c.method, m.raw)
			}
			s := openListen(t, ts.URL, id, map[string]any{"toolsListChanged": true})
			assert.Equal(t, id, s.ack.tag())
			s.close()
		})
	}
	require.NoError(t, h.Shutdown(context.Background()))
}
