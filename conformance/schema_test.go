package conformance

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
)

// schemaJSON is the official MCP 2026-07-28 schema (testdata/README.md).
//
//go:embed testdata/schema.json
var schemaJSON []byte

const (
	// schemaURL is the URL the embedded schema is registered under; a
	// definition is schemaURL + "#/$defs/<Name>".
	schemaURL = "mcp-2026-07-28.json"
	// schemaSHA256 pins the embedded copy, so that an edit shows up.
	schemaSHA256 = "ef70b61f99b6d2e5e3b46863822eab08dff6a45bedc7a08914e0e5b133f40203"
	// schemaDefs is how many $defs the 2026-07-28 schema has.
	schemaDefs = 155
	// examplesDir holds the official examples (testdata/README.md): one
	// folder per $defs entry, named after it.
	examplesDir = "testdata/examples"
	// examplesSHA256 pins them (see examplesDigest).
	examplesSHA256 = "5758524f04588983e9aa52c210bab77451694154ab2a988d4f2cfa8156ec07f3"
)

// stats counts what the suite validated; TestMain prints it.
var stats struct {
	messages   atomic.Int64 // core-shaped messages that passed all their checks
	defChecks  atomic.Int64 // (instance, $def) validations that passed
	examples   atomic.Int64 // official example files validated
	rejections atomic.Int64 // wrong messages rejected by the schema or a rule
}

// schemaSet compiles $defs on demand. A jsonschema.Compiler is not safe for
// concurrent use, so compiling holds mu; compiled schemas are safe for
// concurrent Validate calls.
type schemaSet struct {
	mu    sync.Mutex
	c     *jsonschema.Compiler
	defs  map[string]*jsonschema.Schema
	names []string
}

var loadSchemas = sync.OnceValues(func() (*schemaSet, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, fmt.Errorf("decode embedded schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat() // ResourceUpdatedNotificationParams.uri is "format": "uri"
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("add embedded schema: %w", err)
	}
	root, _ := doc.(map[string]any)
	defs, _ := root["$defs"].(map[string]any)
	names := make([]string, 0, len(defs))
	for name := range defs {
		names = append(names, name)
	}
	slices.Sort(names)
	return &schemaSet{c: c, defs: make(map[string]*jsonschema.Schema), names: names}, nil
})

// def returns the compiled $defs/name.
func (s *schemaSet) def(name string) (*jsonschema.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch, ok := s.defs[name]; ok {
		return sch, nil
	}
	sch, err := s.c.Compile(schemaURL + "#/$defs/" + name)
	if err != nil {
		return nil, err
	}
	s.defs[name] = sch
	return sch, nil
}

// compiled returns $defs/name, failing t if it does not compile.
func compiled(t testing.TB, name string) *jsonschema.Schema {
	t.Helper()
	set, err := loadSchemas()
	require.NoError(t, err)
	sch, err := set.def(name)
	require.NoError(t, err, "compile $defs/%s", name)
	return sch
}

// decode reads JSON text the way the validator expects it (numbers as
// json.Number).
func decode(t testing.TB, text []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	require.NoError(t, err, "not a single JSON value: %s", text)
	return v
}

// validate validates the JSON text instance against $defs/name and returns
// the validator's error.
func validate(t testing.TB, name string, instance []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(instance))
	if err != nil {
		return fmt.Errorf("not a single JSON value: %w", err)
	}
	return compiled(t, name).Validate(v)
}

// conforms checks a core-shaped message against each named $def, and checks
// that it is one well-formed JSON-RPC frame (checkFrame). On failure it
// reports the message, the $def and the validator's error.
func conforms(t testing.TB, msg []byte, defs ...string) {
	t.Helper()
	ok := true
	if err := checkFrame(msg); err != nil {
		t.Errorf("malformed message: %v\nmessage: %s", err, msg)
		ok = false
	}
	v := decode(t, msg)
	for _, name := range defs {
		if err := compiled(t, name).Validate(v); err != nil {
			t.Errorf("message fails $defs/%s\nmessage: %s\nvalidator: %v", name, msg, err)
			ok = false
			continue
		}
		stats.defChecks.Add(1)
	}
	if ok {
		stats.messages.Add(1)
	}
}

// conformsAt checks the member of msg at path (JSON member names) against
// each named $def, such as the params of a notification against
// NotificationParams.
func conformsAt(t testing.TB, msg []byte, path []string, defs ...string) {
	t.Helper()
	v := decode(t, msg)
	for _, key := range path {
		obj, ok := v.(map[string]any)
		require.True(t, ok, "no object at %q in %s", key, msg)
		v, ok = obj[key]
		require.True(t, ok, "no member %q in %s", strings.Join(path, "."), msg)
	}
	for _, name := range defs {
		if err := compiled(t, name).Validate(v); err != nil {
			t.Errorf("%s fails $defs/%s\nmessage: %s\nvalidator: %v", strings.Join(path, "."), name, msg, err)
			continue
		}
		stats.defChecks.Add(1)
	}
}

func TestEmbeddedSchemaIsPinned(t *testing.T) {
	sum := sha256.Sum256(schemaJSON)
	require.Equal(t, schemaSHA256, hex.EncodeToString(sum[:]),
		"testdata/schema.json is not the schema of commit b0f60ba5409db7a6582440a7b473cc0398890f15")
}

// TestExamplesArePinned: the official examples are the ones of commit
// b0f60ba5409db7a6582440a7b473cc0398890f15, unchanged.
func TestExamplesArePinned(t *testing.T) {
	sum, err := examplesDigest(examplesDir)
	require.NoError(t, err)
	require.Equal(t, examplesSHA256, sum,
		"%s are not the examples of commit b0f60ba5409db7a6582440a7b473cc0398890f15", examplesDir)
}

// examplesDigest is the SHA-256 of every file under dir, in lexical order
// of their slash-separated paths, each as its path, a NUL, its length in
// decimal, a NUL and its bytes.
func examplesDigest(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(b))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

func TestSchemaCompilesEveryDef(t *testing.T) {
	set, err := loadSchemas()
	require.NoError(t, err)
	require.Len(t, set.names, schemaDefs)
	for _, name := range set.names {
		_, err := set.def(name)
		require.NoError(t, err, "compile $defs/%s", name)
	}
}

// exampleUnions lists, per example folder, the union $defs its files must
// also satisfy. The bare error objects are wrapped in a response first.
var exampleUnions = map[string][]string{
	"SubscriptionsAcknowledgedNotification": {"ServerNotification", "JSONRPCNotification", "JSONRPCMessage"},
	"ToolListChangedNotification":           {"ServerNotification", "JSONRPCNotification", "JSONRPCMessage"},
	"PromptListChangedNotification":         {"ServerNotification", "JSONRPCNotification", "JSONRPCMessage"},
	"ResourceListChangedNotification":       {"ServerNotification", "JSONRPCNotification", "JSONRPCMessage"},
	"ResourceUpdatedNotification":           {"ServerNotification", "JSONRPCNotification", "JSONRPCMessage"},
	"CancelledNotification":                 {"ClientNotification", "JSONRPCNotification", "JSONRPCMessage"},
	"SubscriptionsListenRequest":            {"ClientRequest", "JSONRPCRequest", "JSONRPCMessage"},
	"SubscriptionsListenResult":             {"ServerResult", "Result"},
	"SubscriptionsListenResultResponse":     {"JSONRPCResultResponse", "JSONRPCResponse", "JSONRPCMessage"},
	"UnsupportedProtocolVersionError":       {"JSONRPCErrorResponse", "JSONRPCResponse", "JSONRPCMessage"},
	"HeaderMismatchError":                   {"JSONRPCErrorResponse", "JSONRPCResponse", "JSONRPCMessage"},
	"MissingRequiredClientCapabilityError":  {"JSONRPCErrorResponse", "JSONRPCResponse", "JSONRPCMessage"},
}

// bareErrorExamples are folders of bare error objects.
var bareErrorExamples = []string{"InternalError", "InvalidParamsError", "MethodNotFoundError", "ParseError"}

// TestOfficialExamples validates the official examples against the $defs
// they are named after: proof that the harness accepts what the
// specification's own tooling accepts.
func TestOfficialExamples(t *testing.T) {
	dir := examplesDir
	folders, err := os.ReadDir(dir)
	require.NoError(t, err)
	n := 0
	for _, folder := range folders {
		if !folder.IsDir() {
			continue
		}
		def := folder.Name()
		files, err := filepath.Glob(filepath.Join(dir, def, "*.json"))
		require.NoError(t, err)
		for _, file := range files {
			t.Run(def+"/"+filepath.Base(file), func(t *testing.T) {
				text, err := os.ReadFile(file)
				require.NoError(t, err)
				defs := append([]string{def}, exampleUnions[def]...)
				for _, name := range defs {
					require.NoError(t, validate(t, name, text), "$defs/%s", name)
				}
				if slices.Contains(bareErrorExamples, def) {
					wrapped := []byte(`{"jsonrpc":"2.0","id":"listen-1","error":` + string(text) + `}`)
					for _, name := range []string{"JSONRPCErrorResponse", "JSONRPCResponse", "JSONRPCMessage"} {
						require.NoError(t, validate(t, name, wrapped), "$defs/%s", name)
					}
					require.NoError(t, validate(t, "Error", text))
				}
				stats.examples.Add(1)
			})
			n++
		}
	}
	require.Positive(t, n, "no example files under %s", dir)
}

// TestSchemaRejectsWrongMessages proves the harness can fail: each message
// breaks the schema in one place and must be rejected for that reason.
func TestSchemaRejectsWrongMessages(t *testing.T) {
	const (
		ack    = "SubscriptionsAcknowledgedNotification"
		result = "SubscriptionsListenResultResponse"
	)
	tests := []struct {
		name string
		def  string
		msg  string
		want string // a part of the validator's error
	}{
		{"ack without params", ack,
			`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged"}`, "params"},
		{"ack without notifications", ack,
			`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"}}}`, "notifications"},
		{"ack with an object subscription id", ack,
			`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":{"id":1}},"notifications":{}}}`, "subscriptionId"},
		{"ack with a null subscription id", ack,
			`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":null},"notifications":{}}}`, "subscriptionId"},
		{"ack with a fractional subscription id", ack,
			`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1.5},"notifications":{}}}`, "subscriptionId"},
		{"ack with a string list flag", ack,
			`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":"yes"}}}`, "toolsListChanged"},
		{"ack with resourceSubscriptions not a list", ack,
			`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":"file:///a"}}}`, "resourceSubscriptions"},
		{"ack with a number in resourceSubscriptions", ack,
			`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":[1]}}}`, "resourceSubscriptions"},
		{"ack with jsonrpc 1.0", ack,
			`{"jsonrpc":"1.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{}}}`, "jsonrpc"},
		{"ack with another method", ack,
			`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledge","params":{"notifications":{}}}`, "method"},
		{"list change with a boolean subscription id", "ToolListChangedNotification",
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":true}}}`, "subscriptionId"},
		{"list change with params not an object", "PromptListChangedNotification",
			`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":[]}`, "params"},
		{"list change without jsonrpc", "ResourceListChangedNotification",
			`{"method":"notifications/resources/list_changed","params":{}}`, "jsonrpc"},
		{"resource update without uri", "ResourceUpdatedNotification",
			`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"}}}`, "uri"},
		{"resource update with a relative uri", "ResourceUpdatedNotification",
			`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"src/main.rs"}}`, "uri"},
		{"resource update with a number uri", "ResourceUpdatedNotification",
			`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":42}}`, "uri"},
		{"resource update as a ServerNotification without uri", "ServerNotification",
			`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{}}`, "anyOf"},
		{"notification with params not an object", "JSONRPCNotification",
			`{"jsonrpc":"2.0","method":"notifications/tasks","params":"task-1"}`, "params"},
		{"result without _meta", result,
			`{"jsonrpc":"2.0","id":"listen-1","result":{"resultType":"complete"}}`, "_meta"},
		{"result without subscription id", result,
			`{"jsonrpc":"2.0","id":"listen-1","result":{"_meta":{},"resultType":"complete"}}`, "subscriptionId"},
		{"result without resultType", result,
			`{"jsonrpc":"2.0","id":"listen-1","result":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"}}}`, "resultType"},
		{"result with a number resultType", result,
			`{"jsonrpc":"2.0","id":"listen-1","result":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"},"resultType":1}}`, "resultType"},
		{"result without id", result,
			`{"jsonrpc":"2.0","result":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"},"resultType":"complete"}}`, "id"},
		{"result with a null id", result,
			`{"jsonrpc":"2.0","id":null,"result":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"},"resultType":"complete"}}`, "id"},
		{"result with server info without version", result,
			`{"jsonrpc":"2.0","id":7,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"},"io.modelcontextprotocol/subscriptionId":7},"resultType":"complete"}}`, "version"},
		{"generic result without resultType", "JSONRPCResultResponse",
			`{"jsonrpc":"2.0","id":7,"result":{}}`, "resultType"},
		{"error with a string code", "JSONRPCErrorResponse",
			`{"jsonrpc":"2.0","id":"listen-1","error":{"code":"-32603","message":"Internal error"}}`, "code"},
		{"error with a fractional code", "JSONRPCErrorResponse",
			`{"jsonrpc":"2.0","id":"listen-1","error":{"code":-32603.5,"message":"Internal error"}}`, "code"},
		{"error without message", "JSONRPCErrorResponse",
			`{"jsonrpc":"2.0","id":"listen-1","error":{"code":-32603}}`, "message"},
		{"error with a null id", "JSONRPCErrorResponse",
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, "id"},
		{"error without error", "JSONRPCErrorResponse",
			`{"jsonrpc":"2.0","id":1}`, "error"},
		{"unsupported version without data", "UnsupportedProtocolVersionError",
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version"}}`, "data"},
		{"unsupported version without supported", "UnsupportedProtocolVersionError",
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"requested":"1999-01-01"}}}`, "supported"},
		{"unsupported version with another code", "UnsupportedProtocolVersionError",
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unsupported protocol version","data":{"requested":"1999-01-01","supported":["2026-07-28"]}}}`, "code"},
		{"header mismatch with another code", "HeaderMismatchError",
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Header mismatch"}}`, "code"},
		{"missing capability without data", "MissingRequiredClientCapabilityError",
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"Missing capability"}}`, "data"},
		{"invalid params with another code", "InvalidParamsError",
			`{"code":-32601,"message":"Invalid params"}`, "code"},
		{"internal error with another code", "InternalError",
			`{"code":-32602,"message":"Internal error"}`, "code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validate(t, tt.def, []byte(tt.msg))
			require.Error(t, err, "$defs/%s accepted %s", tt.def, tt.msg)
			require.Contains(t, err.Error(), tt.want)
			stats.rejections.Add(1)
		})
	}
}

// TestSchemaAcceptsIntegerForms documents what RequestId accepts, so the
// Go-side id rules below are read with the validator's behaviour in mind.
func TestSchemaAcceptsIntegerForms(t *testing.T) {
	tests := []struct {
		token string
		ok    bool
	}{
		{`"listen-1"`, true},
		{`7`, true},
		{`-3`, true},
		{`12345678901234567890123`, true},
		{`1.0`, true}, // 2020-12: a number with a zero fraction is an integer
		{`1.5`, false},
		{`null`, false},
		{`true`, false},
		{`{}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.token, func(t *testing.T) {
			err := validate(t, "RequestId", []byte(tt.token))
			if tt.ok {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			stats.rejections.Add(1)
		})
	}
}
