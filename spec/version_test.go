package spec_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// A listen naming another version than 2026-07-28 gets -32601 for an older
// version the server speaks, and -32022 with data.supported and
// data.requested for any other.
func TestListenVersionError(t *testing.T) {
	assert.Nil(t, spec.ListenVersionError(nil, "2026-07-28"))
	assert.ErrorIs(t, spec.ListenVersionError(nil, "2025-11-25"), &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound}, "an older version the server speaks")
	assert.Equal(t, "Method not found: subscriptions/listen", spec.ListenVersionError(nil, "2025-11-25").Message)
	for _, v := range []string{"2024-11-05", "1900-01-01", "2099-01-01", "garbage"} {
		err := spec.ListenVersionError(nil, v)
		assert.ErrorIs(t, err, &jsonrpc.Error{Code: jsonrpc.CodeUnsupportedProtocolVersion}, v)
		assert.Equal(t, "Unsupported protocol version", err.Message)
		assert.JSONEq(t, `{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"],"requested":"`+v+`"}`, string(err.Data))
	}
	assert.ErrorIs(t, spec.ListenVersionError([]string{"2026-07-28"}, "2025-11-25"), &jsonrpc.Error{Code: jsonrpc.CodeUnsupportedProtocolVersion}, "not spoken by this server")
}
