package mcpgo

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// mcp-go decodes a JSON-RPC id into an any with encoding/json and encodes
// it back the same way: a number becomes a float64 (9007199254740993 is
// answered as 9007199254740992, 1.0 as 1, -0 as -0 but 1e2 as 100), and a
// string is re-escaped ("\u0037" is answered as "7", "<" as "\u003c"). The
// HTTP side keeps the client's id token exactly: a request whose id would
// not survive that round trip reaches mcp-go under a surrogate string id of
// this package, which its answer carries back and which is replaced by the
// client's token on the way out.

// survives reports whether mcp-go answers a request whose id is token with
// that very token.
func survives(token json.RawMessage) bool {
	var v any
	if json.Unmarshal(token, &v) != nil {
		return true // not ours to fix: mcp-go answers it as it can
	}
	b, err := json.Marshal(v)
	return err == nil && bytes.Equal(b, token)
}

// surrogates numbers the surrogate ids of a process.
var surrogates atomic.Uint64

// surrogatePrefix begins every surrogate id.
const surrogatePrefix = `"mcplisten-id-`

// withSurrogate returns body, a JSON-RPC request whose "id" member would not
// survive mcp-go's decoding, with a surrogate id instead, the id's own
// token, and the surrogate's token; ok is false if body is left as it is
// (no such id, or members named "id" in another case, which encoding/json
// would also read as the id).
func withSurrogate(body []byte) (out []byte, token, surrogate json.RawMessage, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return nil, nil, nil, false
	}
	token, has := m["id"]
	if !has || survives(token) {
		return nil, nil, nil, false
	}
	for k := range m {
		if k != "id" && strings.EqualFold(k, "id") {
			return nil, nil, nil, false
		}
	}
	surrogate = json.RawMessage(surrogatePrefix + strconv.FormatUint(surrogates.Add(1), 10) + `"`)
	m["id"] = surrogate
	out, err := json.Marshal(m)
	if err != nil {
		return nil, nil, nil, false
	}
	return out, token, surrogate, true
}

// idWriter is the http.ResponseWriter mcp-go answers a surrogate-id
// request through: every occurrence of the surrogate's token (a JSON string
// no other value can be byte for byte) in what it writes becomes the
// client's token. mcp-go writes each message with one Write (a JSON
// document, or one SSE event), so a token is never split between two.
type idWriter struct {
	http.ResponseWriter
	from, to []byte
}

func (w *idWriter) Write(p []byte) (int, error) {
	if !bytes.Contains(p, w.from) {
		return w.ResponseWriter.Write(p)
	}
	if _, err := w.ResponseWriter.Write(bytes.ReplaceAll(p, w.from, w.to)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// WriteHeader drops a Content-Length mcp-go set for what it writes, which
// the token changes.
func (w *idWriter) WriteHeader(status int) {
	w.Header().Del("Content-Length")
	w.ResponseWriter.WriteHeader(status)
}

// Flush lets mcp-go stream through it.
func (w *idWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *idWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
