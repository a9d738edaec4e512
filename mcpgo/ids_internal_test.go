package mcpgo

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlainID(t *testing.T) {
	for token, want := range map[string]bool{
		`7`: true, `-12`: true, `0`: true, `9007199254740991`: true, `-9007199254740991`: true,
		`"7"`: true, `"abc"`: true, `"é"`: true, `""`: true,
		// v1.2.1 rounds these; v1.5.0 and v1.6.0 normalise -0.
		`9007199254740992`: false, `9007199254740993`: false, `-0`: false, `-0.0`: false,
		`1.0`: false, `1e2`: false, `1.5`: false, `01`: false, `+1`: false, `1_0`: false,
		`99999999999999999999`: false, `1e400`: false,
		`"\u0037"`: false, `"a<b"`: false, `"\ud800"`: false, `"a\/b"`: false, `"&"`: false,
		"\"\u2028\"": false, `"`: false, ``: false, `null`: false, `true`: false,
	} {
		assert.Equal(t, want, plainID(json.RawMessage(token)), token)
	}
}

// TestProbeIDs: the probe tells a release that answers plain ids as sent,
// one that does not (every id then gets a surrogate), and one that would
// not even answer a surrogate as sent (refused).
func TestProbeIDs(t *testing.T) {
	answer := func(rewrite func(id string) string) func(json.RawMessage) []byte {
		return func(m json.RawMessage) []byte {
			var in struct {
				ID json.RawMessage `json:"id"`
			}
			require.NoError(t, json.Unmarshal(m, &in))
			return []byte(`{"jsonrpc":"2.0","id":` + rewrite(string(in.ID)) + `,"error":{"code":-32600,"message":"Invalid JSON-RPC version"}}`)
		}
	}
	for _, c := range []struct {
		name    string
		rewrite func(string) string
		plain   bool
		fails   bool
	}{
		{"as sent", func(id string) string { return id }, true, false},
		{"numbers as floats", func(id string) string {
			if id == `9007199254740991` {
				return `9.007199254740991e+15`
			}
			return id
		}, false, false},
		{"strings re-escaped", func(id string) string { return strings.ReplaceAll(id, "é", `\u00e9`) }, false, false},
		{"no id", func(string) string { return "null" }, false, true},
		{"strings upper-cased", func(id string) string { return strings.ToUpper(id) }, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			plain, err := probeIDs(answer(c.rewrite))
			assert.Equal(t, c.plain, plain)
			if c.fails {
				assert.ErrorContains(t, err, "this mcp-go release is not supported")
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

// TestProbeIDsServer: the mcp-go release the module builds with answers
// every plain id as sent (each supported release does).
func TestProbeIDsServer(t *testing.T) {
	s := server.NewMCPServer("probe", "1")
	plain, err := probeIDs(func(m json.RawMessage) []byte {
		b, err := json.Marshal(s.HandleMessage(context.Background(), m))
		require.NoError(t, err)
		return b
	})
	require.NoError(t, err)
	assert.True(t, plain)
}

// FuzzWithSurrogate: whatever the body, a substitution gives valid JSON
// whose id is the surrogate and whose other members are the body's, and
// the answer's surrogate turned back into the token is the client's id.
func FuzzWithSurrogate(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"\u0037","method":"x","params":{"a":1}}`,
		`{"jsonrpc":"2.0","id":7,"method":"x"}`,
		`{"id":1e2,"ID":3}`, `[]`, `{"id":-0.0}`, `{"id":"<"}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, all bool) {
		out, token, surrogate, ok := withSurrogate(body, all)
		if !ok {
			return
		}
		require.True(t, json.Valid(out), "%q", out)
		var in, got map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(body, &in))
		require.NoError(t, json.Unmarshal(out, &got))
		require.Equal(t, string(surrogate), string(got["id"]))
		require.Equal(t, string(in["id"]), string(token))
		require.Len(t, got, len(in))
		var v any
		require.NoError(t, json.Unmarshal(surrogate, &v))
		answer, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": v, "result": map[string]any{}})
		back := bytes.ReplaceAll(answer, surrogate, token)
		var a map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(back, &a))
		require.Equal(t, string(token), string(a["id"]))
	})
}
