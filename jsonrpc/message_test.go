package jsonrpc_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/internal/core"
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
			code: jsonrpc.CodeInvalidRequest, message: core.DuplicateMember},
		{name: "method twice, once escaped", in: `{"jsonrpc":"2.0","id":1,"method":"tools/list","\u006dethod":"subscriptions/listen"}`,
			code: jsonrpc.CodeInvalidRequest, message: core.DuplicateMember},
		{name: "id twice", in: `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, code: jsonrpc.CodeInvalidRequest, message: core.DuplicateMember},
		{name: "params twice", in: `{"jsonrpc":"2.0","method":"ping","params":{},"params":{"a":1}}`, code: jsonrpc.CodeInvalidRequest, message: core.DuplicateMember},
		{name: "jsonrpc twice", in: `{"jsonrpc":"2.0","jsonrpc":"1.0","method":"ping"}`, code: jsonrpc.CodeInvalidRequest, message: core.DuplicateMember},
		{name: "result twice", in: `{"jsonrpc":"2.0","method":"ping","result":1,"result":2}`, code: jsonrpc.CodeInvalidRequest, message: core.DuplicateMember},
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

// An id is bounded: its JSON token (quotes and escapes included, spaces
// around it not) may be at most 256 bytes long, or the bound given;
// a longer one is refused with -32600 and the exact message, and the
// Message keeps no id, so that the error response carries none. Before,
// every id was accepted whatever its size.
func TestParseMessageBoundsTheID(t *testing.T) {
	str := func(n int) string { return `"` + strings.Repeat("x", n-2) + `"` }
	msg := func(id string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"}`)
	}
	tests := []struct {
		name    string
		id      string
		max     int
		wantMsg string // "" : accepted
	}{
		{"a 256-byte string", str(256), 0, ""},
		{"a 257-byte string", str(257), 0, "Invalid request: id must be at most 256 bytes"},
		{"a 250,000-byte string", str(250_000), 0, "Invalid request: id must be at most 256 bytes"},
		{"a 257-digit integer", strings.Repeat("7", 257), 0, "Invalid request: id must be at most 256 bytes"},
		{"escapes count as sent", `"` + strings.Repeat(`\u0061`, 43) + `"`, 0, "Invalid request: id must be at most 256 bytes"},
		{"spaces around it do not count", "  " + str(256) + "  ", 0, ""},
		{"a long object is refused for its size first", `{"a":"` + strings.Repeat("x", 300) + `"}`, 0, "Invalid request: id must be at most 256 bytes"},
		{"a bound of 8: 8 bytes", `12345678`, 8, ""},
		{"a bound of 8: 9 bytes", `"1234567"`, 8, "Invalid request: id must be at most 8 bytes"},
		{"a bound of 1000", str(1000), 1000, ""},
		{"a negative bound is the default", str(257), -1, "Invalid request: id must be at most 256 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := jsonrpc.ParseMessageMaxID(msg(tt.id), tt.max)
			if tt.wantMsg == "" {
				require.NoError(t, err)
				assert.Equal(t, strings.TrimSpace(tt.id), m.ID.Raw())
				return
			}
			var we *jsonrpc.Error
			require.ErrorAs(t, err, &we)
			assert.Equal(t, jsonrpc.CodeInvalidRequest, we.Code)
			assert.Equal(t, tt.wantMsg, we.Message)
			assert.True(t, m.HasID)
			assert.False(t, m.ID.Valid(), "the id over the bound is not kept")
			assert.Equal(t, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"`+tt.wantMsg+`"}}`,
				string(jsonrpc.ErrorResponse(m.ID, err)), "answered without an id")
			if tt.max <= 0 {
				_, err := jsonrpc.ParseMessage(msg(tt.id))
				assert.Equal(t, we, err, "ParseMessage is ParseMessageMaxID with the default")
			}
		})
	}
}

// FuzzParseMessageMaxID: with a bound, ParseMessageMaxID answers exactly as
// without one (a bound of the data's length), but for a message whose id
// token is longer than the bound, which it refuses with "id must be at most" and no
// id; it never returns an id over the bound.
func FuzzParseMessageMaxID(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"abcdefghij","method":"ping"}`,
		`{"jsonrpc":"2.0","id": "abcdefghij" ,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"abcdefghij","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{"a":"bcdefghij"},"method":"ping"}`,
		`{"jsonrpc":"1.0","id":12345678901,"method":"ping"}`,
		`{"id":"\u0061\u0062"}`,
	} {
		f.Add([]byte(s), uint16(8))
	}
	f.Fuzz(func(t *testing.T, data []byte, bound uint16) {
		limit := int(bound)
		eff := limit
		if eff <= 0 {
			eff = core.DefaultMaxIDBytes
		}
		free, ferr := jsonrpc.ParseMessageMaxID(data, len(data)+1)
		m, err := jsonrpc.ParseMessageMaxID(data, limit)
		if m.ID.Valid() && len(m.ID.Raw()) > eff {
			t.Fatalf("id of %d bytes returned under a bound of %d", len(m.ID.Raw()), eff)
		}
		var we *jsonrpc.Error
		if errors.As(err, &we) && we.Code == jsonrpc.CodeInvalidRequest && we.Message == core.IDTooLarge(limit) {
			if m.ID.Valid() || !m.HasID {
				t.Fatalf("refused for its id, but returns the id %q (has %v)", m.ID.Raw(), m.HasID)
			}
			var fe *jsonrpc.Error
			if errors.As(ferr, &fe) && (fe.Code == jsonrpc.CodeParseError || fe.Message == core.DuplicateMember ||
				fe.Message == "Invalid request: expected a JSON-RPC object") {
				t.Fatalf("refused for its id, but unbounded it fails before the id: %v", ferr)
			}
			return
		}
		if !assert.ObjectsAreEqual(free, m) || !assert.ObjectsAreEqual(ferr, err) {
			t.Fatalf("bounded (%+v, %v) differs from unbounded (%+v, %v)", m, err, free, ferr)
		}
	})
}

// CodeOf reads the code of the *Error in an error's chain, wrapped or
// not, and 0 for an error that is not a wire error, or nil; errors.Is
// matches an *Error by its code, whatever its message.
func TestCodeOf(t *testing.T) {
	invalid := jsonrpc.NewError(jsonrpc.CodeInvalidParams, "bad")
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"an *Error", invalid, jsonrpc.CodeInvalidParams},
		{"wrapped", fmt.Errorf("open: %w", invalid), jsonrpc.CodeInvalidParams},
		{"with a cause", jsonrpc.NewError(jsonrpc.CodeInternalError, "x").WithCause(errors.New("y")), jsonrpc.CodeInternalError},
		{"not a wire error", errors.New("plain"), 0},
		{"nil", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, jsonrpc.CodeOf(tc.err))
		})
	}
	assert.ErrorIs(t, fmt.Errorf("open: %w", invalid), &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams})
	assert.NotErrorIs(t, invalid, &jsonrpc.Error{Code: jsonrpc.CodeInternalError})
}
