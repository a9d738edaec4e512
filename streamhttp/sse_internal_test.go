package streamhttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A message with raw line breaks (insignificant JSON whitespace) still
// travels as one SSE data line, and the caller's buffer is left untouched.
func TestSSEFramingLineBreaks(t *testing.T) {
	msg := []byte("{\r\n  \"jsonrpc\": \"2.0\",\n  \"method\": \"x\"\r}")
	orig := string(msg)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := newSSEWriter(w, time.Second, false)
		// Not the test goroutine: assert, never require.
		assert.NoError(t, sw.message(msg))
		assert.NoError(t, sw.ping())
		assert.NoError(t, sw.message([]byte(`{"a":1}`)))
		assert.Nil(t, sw.scratch, "no buffer kept")
		sw.finish()
	}))
	defer ts.Close()
	resp, err := ts.Client().Get(ts.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "event: message\ndata: {    \"jsonrpc\": \"2.0\",   \"method\": \"x\" }\n\n"+
		": keep-alive\n\n"+
		"event: message\ndata: {\"a\":1}\n\n", string(raw))
	assert.Equal(t, orig, string(msg))
}
