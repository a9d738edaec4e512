package streamhttp_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/spec"
)

// An HTTP/1.1 stream is taken over once open: no chunked encoding, the body
// ends with the connection; with NoTakeover it stays inside net/http
// (chunked). The stream reads the same either way.
func TestTakeover(t *testing.T) {
	for _, noTakeover := range []bool{false, true} {
		name := "taken over"
		if noTakeover {
			name = "inside net/http"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil, &config{NoTakeover: noTakeover, Listen: listen.Options{Capabilities: caps()}}, envConfig{})
			resp := e.do(t, http.MethodPost, listenBody(`"t"`, `{"toolsListChanged":true}`), listenHeaders())
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
			assert.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
			assert.Equal(t, "no", resp.Header.Get("X-Accel-Buffering"))
			assert.True(t, resp.Close, "Connection: close")
			assert.EqualValues(t, -1, resp.ContentLength)
			if noTakeover {
				assert.Equal(t, []string{"chunked"}, resp.TransferEncoding)
			} else {
				assert.Empty(t, resp.TransferEncoding, "raw body, delimited by the connection's close")
			}
			s := newSSE(resp)
			assert.Equal(t, spec.MethodAcknowledged, s.message(t)["method"])
			st := streamOf(t, e.src, "t")
			st.Send(listen.ToolsListChanged())
			assert.Equal(t, spec.MethodToolsListChanged, s.message(t)["method"])
			st.End()
			assert.Equal(t, "complete", s.message(t)["result"].(map[string]any)["resultType"])
			s.end(t)
		})
	}
}
