package mcpgo_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/mcpgo"
)

// idTokens are ids some mcp-go release would not answer with as sent, and
// ids every release would: mcp-go v1.2.1 decodes numbers as float64 (it
// would answer 9007199254740993 as 9007199254740992, 1e20 as
// 100000000000000000000, 1e400 with a parse error), v1.5.0 and v1.6.0
// normalise them (-0 and -0.0 as 0, 1.0 as 1, 1e2 as 100), and every
// release re-escapes strings ("\u0037" as "7", "a<b" as "a\u003cb").
var idTokens = []string{
	`-0`, `-0.0`, `0.0`, `1.0`, `1.50`, `1e2`, `1E+2`, `0.1e1`, `1e-400`,
	`9007199254740992`, `9007199254740993`, `-9007199254740993`,
	`9223372036854775808`, `99999999999999999999`, `1e20`, `12e18`, `1e400`,
	`1.7976931348623157e308`,
	`"\u0037"`, `"a<b"`, `"a\/b"`, `"&"`, `"\u00e9"`,
	`"7"`, `7`, `-12`, `0`, `9007199254740991`, `"é"`, `""`,
}

func TestHTTPKeepsIDs(t *testing.T) {
	t.Run("plain ids as sent", func(t *testing.T) { testHTTPKeepsIDs(t, false) })
	// As on a release that would not answer plain ids as sent either.
	t.Run("every id under a surrogate", func(t *testing.T) { testHTTPKeepsIDs(t, true) })
}

func testHTTPKeepsIDs(t *testing.T, surrogateAll bool) {
	srv := plainServer()
	newHandler := mcpgo.NewHandler
	if surrogateAll {
		newHandler = mcpgo.NewHandlerSurrogateEveryID
	}
	h, err := newHandler(srv, mcpgo.HandlerOptions{})
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
			if strings.ContainsAny(id, ".eE") && !strings.HasPrefix(id, `"`) {
				return // a listen's id is a string or an integer (-32600 otherwise)
			}
			s := openListen(t, ts.URL, id, map[string]any{"toolsListChanged": true})
			assert.Equal(t, id, s.ack.tag())
			s.close()
		})
	}
	require.NoError(t, h.Shutdown(context.Background()))
}
