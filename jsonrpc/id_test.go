package jsonrpc_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/jsonrpc"
)

// Ids keep their exact JSON token: two ids are the same id exactly when
// their tokens are the same text, so an id that does not round-trip through
// a decoded string (lone surrogates) can neither be confused with another
// nor be echoed changed.
func TestParseIDKeepsTheToken(t *testing.T) {
	tests := []struct {
		token string
		ok    bool
	}{
		{`"listen-1"`, true},
		{`7`, true},
		{`-3`, true},
		{`0`, true},
		{`"\ud800"`, true},
		{`"\udfff"`, true},
		{`"\u0061"`, true},
		{`"a"`, true},
		{`""`, true},
		{"\"\xff\"", false}, // invalid UTF-8 could not be echoed as JSON text
		{`1.5`, false},
		{`1e3`, false},
		{`null`, false},
		{`true`, false},
		{`{}`, false},
		{`"unterminated`, false},
		{``, false},
	}
	for _, tt := range tests {
		t.Run(tt.token, func(t *testing.T) {
			id, ok := jsonrpc.ParseID([]byte(tt.token))
			require.Equal(t, tt.ok, ok)
			if !ok {
				return
			}
			assert.Equal(t, tt.token, id.Raw())
			b, err := json.Marshal(id)
			require.NoError(t, err)
			assert.Equal(t, tt.token, string(b), "echoed as received")
		})
	}
	a, _ := jsonrpc.ParseID([]byte(`"\ud800"`))
	b, _ := jsonrpc.ParseID([]byte(`"\udfff"`))
	assert.NotEqual(t, a, b, "lone surrogates that decode alike are different ids")
	assert.Equal(t, jsonrpc.StringID("x"), mustID(t, `"x"`))
	assert.Equal(t, jsonrpc.IntID(42), mustID(t, `42`))
}

func mustID(t *testing.T, token string) jsonrpc.ID {
	t.Helper()
	id, ok := jsonrpc.ParseID([]byte(token))
	require.True(t, ok, token)
	return id
}

// Every id ParseID accepts is echoed byte for byte and is valid JSON.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{`"a"`, `1`, `"\ud800"`, `"\u0000"`, `-0`, `"é"`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		id, ok := jsonrpc.ParseID(raw)
		if !ok {
			return
		}
		b, err := id.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, bytes.TrimSpace(raw)) {
			t.Fatalf("ParseID(%q) echoes %q", raw, b)
		}
		if !json.Valid(b) {
			t.Fatalf("ParseID(%q) echoes invalid JSON %q", raw, b)
		}
		again, ok := jsonrpc.ParseID(b)
		if !ok || again != id {
			t.Fatalf("ParseID(%q) does not parse its own echo", raw)
		}
	})
}
