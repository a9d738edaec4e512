package gosdk

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withID puts the client's token in place of the go-sdk's id: in place when
// the go-sdk wrote it second as usual, by re-encoding otherwise (without
// HTML escapes), and never by matching a prefix of a longer id.
func TestWithID(t *testing.T) {
	for _, tc := range []struct {
		name, in, echo, token, want string
	}{
		{"in place", `{"jsonrpc":"2.0","id":0,"result":{}}`, `0`, `-0`, `{"jsonrpc":"2.0","id":-0,"result":{}}`},
		{"in place, string", `{"jsonrpc":"2.0","id":"A","error":{"code":1,"message":"<x>"}}`, `"A"`, `"\u0041"`, `{"jsonrpc":"2.0","id":"\u0041","error":{"code":1,"message":"<x>"}}`},
		{"longer id", `{"jsonrpc":"2.0","id":10,"result":{}}`, `1`, `-1`, `{"id":-1,"jsonrpc":"2.0","result":{}}`},
		{"other order", `{"id":0,"jsonrpc":"2.0","result":{"a":"<b>"}}`, `0`, `-0`, `{"id":-0,"jsonrpc":"2.0","result":{"a":"<b>"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := withID([]byte(tc.in), []byte(tc.echo), json.RawMessage(tc.token))
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
		})
	}
	_, err := withID([]byte(`not json`), []byte(`1`), json.RawMessage(`2`))
	assert.Error(t, err)
}
