package jsonrpc_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// Member names are JSON-RPC's, matched exactly: a key that differs in case
// is another member (encoding/json would have filled Method from
// "METHOD"), an escaped name is read decoded, and a repeated envelope
// member is refused whichever copy another parser would keep.
func TestParseMessageMatchesMembersExactly(t *testing.T) {
	tests := []struct {
		name, in string
		method   string // when accepted
		id       string
		params   string
		code     int
		message  string
	}{
		{name: "plain", in: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":1}}`, method: "ping", id: `1`, params: `{"a":1}`},
		{name: "upper-case method only", in: `{"jsonrpc":"2.0","id":1,"METHOD":"subscriptions/listen","PARAMS":{}}`, id: `1`,
			code: jsonrpc.CodeInvalidRequest, message: "Invalid request: method must be a non-empty string"},
		{name: "Method beside method", in: `{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"subscriptions/listen"}`, method: "tools/list", id: `1`},
		{name: "ID is not the id", in: `{"jsonrpc":"2.0","ID":1,"method":"ping"}`, method: "ping"},
		{name: "JSONRPC is not jsonrpc", in: `{"JSONRPC":"2.0","id":1,"method":"ping"}`, id: `1`,
			code: jsonrpc.CodeInvalidRequest, message: `Invalid request: jsonrpc must be "2.0"`},
		{name: "Params are not the params", in: `{"jsonrpc":"2.0","id":1,"method":"ping","Params":{"a":1}}`, method: "ping", id: `1`},
		{name: "escaped name", in: `{"jsonrpc":"2.0","id":1,"\u006dethod":"p\u0069ng"}`, method: "ping", id: `1`},
		{name: "escaped version", in: `{"\u006asonrpc":"2\u002e0","id":1,"method":"ping"}`, method: "ping", id: `1`},
		{name: "space around", in: " \t{ \"jsonrpc\" : \"2.0\" ,\n\"method\" : \"ping\" } \r\n", method: "ping"},
		{name: "params null", in: `{"jsonrpc":"2.0","method":"ping","params":null}`, method: "ping", params: `null`},
		{name: "method twice", in: `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"subscriptions/listen"}`,
			code: jsonrpc.CodeInvalidRequest, message: jsonrpc.MsgDuplicateMember},
		{name: "method twice, once escaped", in: `{"jsonrpc":"2.0","id":1,"method":"tools/list","\u006dethod":"subscriptions/listen"}`,
			code: jsonrpc.CodeInvalidRequest, message: jsonrpc.MsgDuplicateMember},
		{name: "id twice", in: `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, code: jsonrpc.CodeInvalidRequest, message: jsonrpc.MsgDuplicateMember},
		{name: "params twice", in: `{"jsonrpc":"2.0","method":"ping","params":{},"params":{"a":1}}`, code: jsonrpc.CodeInvalidRequest, message: jsonrpc.MsgDuplicateMember},
		{name: "jsonrpc twice", in: `{"jsonrpc":"2.0","jsonrpc":"1.0","method":"ping"}`, code: jsonrpc.CodeInvalidRequest, message: jsonrpc.MsgDuplicateMember},
		{name: "result twice", in: `{"jsonrpc":"2.0","method":"ping","result":1,"result":2}`, code: jsonrpc.CodeInvalidRequest, message: jsonrpc.MsgDuplicateMember},
		{name: "other members may repeat", in: `{"jsonrpc":"2.0","method":"ping","x":1,"x":2}`, method: "ping"},
		{name: "method not a string", in: `{"jsonrpc":"2.0","id":"a","method":5}`, id: `"a"`,
			code: jsonrpc.CodeInvalidRequest, message: "Invalid request: method must be a non-empty string"},
		{name: "trailing text", in: `{"jsonrpc":"2.0","method":"ping"} x`, code: jsonrpc.CodeParseError, message: "Parse error"},
		{name: "null", in: `null`, code: jsonrpc.CodeInvalidRequest, message: `Invalid request: jsonrpc must be "2.0"`},
		{name: "array", in: `[{"jsonrpc":"2.0","method":"ping"}]`, code: jsonrpc.CodeInvalidRequest, message: "Invalid request: expected a JSON-RPC object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := jsonrpc.ParseMessage([]byte(tt.in))
			assert.Equal(t, tt.id, m.ID.Raw(), "id")
			if tt.message != "" {
				var we *jsonrpc.Error
				require.ErrorAs(t, err, &we)
				assert.Equal(t, tt.code, we.Code)
				assert.Equal(t, tt.message, we.Message)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.method, m.Method)
			assert.Equal(t, tt.params, string(m.Params))
		})
	}
}

// Params is the caller's own: reusing the input does not change it.
func TestParseMessageCopiesParams(t *testing.T) {
	in := []byte(`{"jsonrpc":"2.0","method":"ping","params":{"a":1}}`)
	m, err := jsonrpc.ParseMessage(in)
	require.NoError(t, err)
	copy(in, bytes.Repeat([]byte("x"), len(in)))
	assert.Equal(t, `{"a":1}`, string(m.Params))
}

// members reads the top-level members of a JSON object with encoding/json's
// tokenizer: names decoded, values as their compacted JSON text. It is the
// reference FuzzParseMessage compares ParseMessage with.
func members(t *testing.T, data []byte) (names []string, values map[string][]string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, false
	}
	values = map[string][]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("valid JSON: %v", err)
		}
		name := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("valid JSON: %v", err)
		}
		var b bytes.Buffer
		if err := json.Compact(&b, v); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		values[name] = append(values[name], b.String())
	}
	return names, values, true
}

// FuzzParseMessage: ParseMessage reads exactly the members an exact reader
// finds (encoding/json's tokenizer, names decoded), refuses every message
// that repeats an envelope member, and accepts a message only if the
// reference reads it as a JSON-RPC 2.0 request or notification with the
// same method, id and params. Every error is a *Error with a known code.
func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[1,"x"]}}`,
		`{"jsonrpc":"2.0","id":1,"METHOD":"subscriptions/listen"}`,
		`{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`,
		`{"jsonrpc":"2.0","\u0069d":"\ud800","m\u0065thod":"x\"y","params":[]}`,
		`{"jsonrpc":"2.0","id":-0,"method":"ping","Id":3}`,
		`{"jsonrpc":"2.0","method":"n","params":"s"}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"a":{"method":"x"},"jsonrpc":"2.0","method":"y"}`,
		`null`, `[]`, `"x"`, `{`,
	} {
		f.Add([]byte(s))
	}
	envelope := []string{"jsonrpc", "id", "method", "params", "result", "error"}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := jsonrpc.ParseMessage(data)
		if err != nil {
			var we *jsonrpc.Error
			if !errors.As(err, &we) || (we.Code != jsonrpc.CodeParseError && we.Code != jsonrpc.CodeInvalidRequest) {
				t.Fatalf("error %v is not a -32700 or -32600 *Error", err)
			}
		}
		if !json.Valid(data) {
			if err == nil {
				t.Fatalf("accepted invalid JSON %q", data)
			}
			return
		}
		_, values, isObject := members(t, data)
		if !isObject {
			if err == nil {
				t.Fatalf("accepted a message that is not an object: %q", data)
			}
			return
		}
		for _, name := range envelope {
			if len(values[name]) > 1 {
				if err == nil {
					t.Fatalf("accepted %q, which repeats %q", data, name)
				}
				return
			}
		}
		if err != nil {
			return
		}
		one := func(name string) string {
			if v := values[name]; len(v) == 1 {
				return v[0]
			}
			return ""
		}
		var version, method string
		if json.Unmarshal([]byte(one("jsonrpc")), &version) != nil || version != "2.0" {
			t.Fatalf("accepted %q: jsonrpc is %q", data, one("jsonrpc"))
		}
		if json.Unmarshal([]byte(one("method")), &method) != nil || method != m.Method || method == "" {
			t.Fatalf("method %q, the reference reads %q", m.Method, one("method"))
		}
		if m.HasID != (one("id") != "") || m.ID.Raw() != one("id") {
			t.Fatalf("id %q (has %v), the reference reads %q", m.ID.Raw(), m.HasID, one("id"))
		}
		var params bytes.Buffer
		if m.Params != nil {
			if err := json.Compact(&params, m.Params); err != nil {
				t.Fatalf("params %q are not JSON", m.Params)
			}
		}
		if params.String() != one("params") {
			t.Fatalf("params %q, the reference reads %q", params.String(), one("params"))
		}
	})
}

// The -32022 error is byte for byte the specification's example
// (UnsupportedProtocolVersionError/unsupported-version.json, compacted):
// data.supported before data.requested.
func TestUnsupportedVersionErrorIsTheExample(t *testing.T) {
	resp := jsonrpc.ErrorResponse(jsonrpc.IntID(1), spec.UnsupportedVersionError([]string{"2026-07-28", "2025-11-25"}, "1900-01-01"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version",`+
		`"data":{"supported":["2026-07-28","2025-11-25"],"requested":"1900-01-01"}}}`, string(resp))
}
