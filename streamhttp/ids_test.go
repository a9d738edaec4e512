package streamhttp_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/streamhttp"
)

// strID returns a JSON string id token of n bytes, quotes included.
func strID(n int) string { return `"` + strings.Repeat("i", n-2) + `"` }

// idTooLarge is the exact response to a message whose id is over the
// bound: -32600, without an id.
func idTooLarge(n int) string {
	return `{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid request: id must be at most ` + itoa(n) + ` bytes"}}`
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}

// A listen's id is bounded by Listen.MaxIDBytes (256 bytes by default): a
// longer one is refused with 400 and -32600 without an id, and no
// subscription keeps it; one at the bound streams, and the bound follows
// the option. Before, a listen whose id was a 250,000-byte string was
// served, and every notification repeated it (250,147 bytes per tools
// change instead of 150).
func TestListenIDBound(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		id     string
		accept bool
	}{
		{"256 bytes", 0, strID(256), true},
		{"257 bytes", 0, strID(257), false},
		{"250,000 bytes", 0, strID(250_000), false},
		{"a 300-digit integer", 0, strings.Repeat("9", 300), false},
		{"1,000 bytes under a bound of 1,000", 1000, strID(1000), true},
		{"1,001 bytes under a bound of 1,000", 1000, strID(1001), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var reported []error
			e := newEnv(t, nil, &config{
				Listen:   listen.Options{MaxIDBytes: tt.max},
				OnRefuse: func(_ *listen.Request, err error) { reported = append(reported, err) },
			}, envConfig{})
			resp := e.do(t, http.MethodPost, listenBody(tt.id, `{"toolsListChanged":true}`), listenHeaders())
			if tt.accept {
				require.Equal(t, http.StatusOK, resp.StatusCode)
				s := newSSE(resp)
				s.message(t)
				st := <-e.src.Opened()
				assert.Equal(t, tt.id, st.RequestID.Raw())
				return
			}
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			raw, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, idTooLarge(max(tt.max, 256)), string(raw), "-32600 without an id")
			assert.Len(t, reported, 1, "reported to OnRefuse")
			assert.Empty(t, e.src.Streams(), "the source is not opened")
		})
	}
}

// Front bounds the id of every message of a body it reads, for the other
// handler as for listens: a request, a notification's absent id aside, a
// response, a batch member; over the bound it answers 400 with -32600
// without an id, and the other handler never sees the body. Its bound is
// the listen Handler's Listen.MaxIDBytes, or FrontOptions.MaxIDBytes.
// Before, any id reached the other handler (an SDK that keeps a request's
// id while it serves it, and echoes it).
func TestFrontIDBound(t *testing.T) {
	long := strID(257)
	tests := []struct {
		name string
		body string
		pass bool
	}{
		{"a request at the bound", `{"jsonrpc":"2.0","id":` + strID(256) + `,"method":"tools/call"}`, true},
		{"a request", `{"jsonrpc":"2.0","id":` + long + `,"method":"tools/call","params":{"name":"x"}}`, false},
		{"a listen without its headers", listenBody(long, `{}`), false},
		{"a response", `{"jsonrpc":"2.0","id":` + long + `,"result":{}}`, false},
		{"an invalid request", `{"id":` + long + `}`, false},
		{"a batch member", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":` + long + `,"method":"ping"}]`, false},
		{"a long id inside params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"id":` + long + `}}`, true},
		{"malformed JSON", `{"jsonrpc":"2.0","id":` + long, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			other := make(chan string, 1)
			f := streamhttp.Front(routeMark("listen", other), routeMark("other", other))
			w := httptest.NewRecorder()
			f.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(tt.body)))
			if tt.pass {
				assert.Equal(t, "other", w.Header().Get("X-Routed"))
				assert.Equal(t, tt.body, <-other)
				return
			}
			assert.Equal(t, http.StatusBadRequest, w.Code)
			assert.Equal(t, idTooLarge(256), w.Body.String())
			assert.Empty(t, other)
		})
	}

	// The bound follows the listen Handler's, or FrontOptions.MaxIDBytes.
	body := `{"jsonrpc":"2.0","id":` + strID(600) + `,"method":"tools/call"}`
	wide := newHandler(t, listentest.NewSource(), config{Listen: listen.Options{MaxIDBytes: 1000}})
	for _, tt := range []struct {
		name string
		f    http.Handler
		want int
	}{
		{"the Handler's bound", streamhttp.Front(wide, routeMark("other", nil)), http.StatusNoContent},
		{"FrontOptions over the Handler's", streamhttp.FrontWith(wide, routeMark("other", nil), streamhttp.FrontOptions{MaxIDBytes: 512}), http.StatusBadRequest},
		{"the default without a Handler", streamhttp.Front(routeMark("listen", nil), routeMark("other", nil)), http.StatusBadRequest},
	} {
		w := httptest.NewRecorder()
		tt.f.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body)))
		assert.Equal(t, tt.want, w.Code, tt.name)
	}
	assert.Panics(t, func() { streamhttp.FrontWith(wide, nil, streamhttp.FrontOptions{MaxIDBytes: -1}) })
}

// longIDs reports whether the JSON text body is an object, or an array
// holding an object, with an "id" member (its name decoded) longer than max
// bytes: the reference FuzzFrontIDBound compares Front with, read with
// encoding/json's tokenizer.
func longIDs(t *testing.T, body []byte, max int) bool {
	var top any
	if json.Unmarshal(body, &top) != nil {
		return false
	}
	object := func(raw []byte) bool {
		dec := json.NewDecoder(bytes.NewReader(raw))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return false
		}
		long := false
		for dec.More() {
			name, err := dec.Token()
			require.NoError(t, err)
			var v json.RawMessage
			require.NoError(t, dec.Decode(&v))
			long = long || (name == "id" && len(v) > max)
		}
		return long
	}
	switch top.(type) {
	case map[string]any:
		return object(body)
	case []any:
		var elems []json.RawMessage
		require.NoError(t, json.Unmarshal(body, &elems))
		for _, e := range elems {
			if object(e) {
				return true
			}
		}
	}
	return false
}

// FuzzFrontIDBound: Front refuses a body with the id error exactly when it
// holds a message (the body, or a member of a batch) whose id member is over
// the bound, and hands every other body to the handler it routes it to,
// unchanged.
func FuzzFrontIDBound(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":"abcdefghijklmnop","method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`[{"id":1},{"id":"abcdefghijklmnop"}]`,
		`{"\u0069d": "abcdefghijklmnop" }`,
		`{"ID":"abcdefghijklmnop","id":1}`,
		`{"id":1,"id":"abcdefghijklmnop"}`,
		`{"params":{"id":"abcdefghijklmnop"}}`,
		`{"id":[1,2,3,4,5,6,7,8,9]}`,
		`"abcdefghijklmnop"`, `{`, `[`,
	} {
		f.Add([]byte(s))
	}
	const max = 16
	front := streamhttp.FrontWith(routeMark("listen", nil), routeMark("other", nil), streamhttp.FrontOptions{MaxIDBytes: max})
	f.Fuzz(func(t *testing.T, body []byte) {
		w := httptest.NewRecorder()
		front.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body)))
		refused := w.Code == http.StatusBadRequest && w.Body.String() == idTooLarge(max)
		if want := longIDs(t, body, max); refused != want {
			t.Fatalf("refused %v (status %d), the reference says %v: %q", refused, w.Code, want, body)
		}
		if !refused && w.Header().Get("X-Routed") == "" {
			t.Fatalf("neither refused nor routed: status %d %q", w.Code, w.Body.String())
		}
	})
}
