package mcpgo

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSurvives(t *testing.T) {
	for token, want := range map[string]bool{
		`7`: true, `-12`: true, `"7"`: true, `"abc"`: true, `0`: true,
		`9007199254740993`: false, `-0`: true, `1.0`: false, `1e2`: false,
		`"\u0037"`: false, `"a<b"`: false, `"é"`: true, `"\ud800"`: false,
	} {
		assert.Equal(t, want, survives(json.RawMessage(token)), token)
	}
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
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, token, surrogate, ok := withSurrogate(body)
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
