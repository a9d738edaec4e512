package mcpgo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// How mcp-go answers ids, and why some reach it under a surrogate: see
// the package documentation, Ids.

// maxPlainInteger is the largest integer id that passes as it is: 2^53-1,
// which a float64 holds exactly (mcp-go v1.2.1 decodes numbers as float64).
const maxPlainInteger = 1<<53 - 1

// plainID reports whether token is an id that every supported mcp-go
// release answers with that very token: an integer written the shortest
// way (no sign on zero, no leading zero, no fraction, no exponent) of at
// most maxPlainInteger in magnitude, or a string that encoding/json writes
// back byte for byte (no escapes, no <, >, &, U+2028 or U+2029).
func plainID(token json.RawMessage) bool {
	if len(token) > 0 && token[0] == '"' {
		var s string
		if json.Unmarshal(token, &s) != nil {
			return false
		}
		b, err := json.Marshal(s)
		return err == nil && bytes.Equal(b, token)
	}
	digits := token
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 16 || (digits[0] == '0' && len(token) > 1) {
		return false // -0, a leading zero, or longer than 2^53 is
	}
	n, err := strconv.ParseUint(string(digits), 10, 64)
	return err == nil && n <= maxPlainInteger
}

// probeSamples are the ids probeIDs sends: plain ids of each form.
var probeSamples = []string{
	`0`, `7`, `-12`, `9007199254740991`, `-9007199254740991`,
	`"7"`, `"abc-DEF_1.2"`, `"é"`, `""`,
}

// probeSurrogate is a surrogate id of the longest form.
const probeSurrogate = surrogatePrefix + "18446744073709551615" + `"`

// probeIDs asks the mcp-go server, in process, how it answers ids: for each
// sample, a message mcp-go refuses before any hook or handler runs (its
// jsonrpc member is not "2.0"), whose error carries the id as mcp-go
// decoded and encoded it. It returns whether every plain sample came back
// as sent (if not, every id is to reach mcp-go under a surrogate); it fails
// if a surrogate does not come back as sent either, for then no id could
// be answered exactly.
func probeIDs(handle func(json.RawMessage) []byte) (plain bool, err error) {
	echoes := func(token string) (string, bool) {
		answer := handle(json.RawMessage(`{"jsonrpc":"mcplisten-probe","id":` + token + `}`))
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(answer, &m) != nil {
			return string(answer), false
		}
		return string(m.ID), string(m.ID) == token
	}
	if got, ok := echoes(probeSurrogate); !ok {
		return false, fmt.Errorf("mcpgo: mcp-go answers the id %s with %s: this mcp-go release is not supported (ids could not be answered as sent)", probeSurrogate, got)
	}
	for _, token := range probeSamples {
		if _, ok := echoes(token); !ok {
			return false, nil
		}
	}
	return true, nil
}

// surrogates numbers the surrogate ids of a process.
var surrogates atomic.Uint64

// surrogatePrefix begins every surrogate id.
const surrogatePrefix = `"mcplisten-id-`

// withSurrogate returns body, a JSON-RPC request whose "id" member is not
// plain (or any id, if all is true), with a surrogate id instead, the id's
// own token, and the surrogate's token; ok is false if body is left as it
// is (no such id, or members named "id" in another case, which
// encoding/json would also read as the id).
func withSurrogate(body []byte, all bool) (out []byte, token, surrogate json.RawMessage, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return nil, nil, nil, false
	}
	token, has := m["id"]
	if !has || (!all && plainID(token)) {
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
