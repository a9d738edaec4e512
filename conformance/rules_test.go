package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The rules below are the ones the schema cannot express (it allows extra
// members everywhere and looks at one message at a time). Each returns an
// error naming the broken rule, so that the negative tests in
// rules_neg_test.go can show that they fail on wrong messages.

// checkFrame checks that msg is one JSON object, with jsonrpc "2.0", no
// duplicate member names at any depth (a decoder keeps the last one, so a
// duplicate could hide a forged subscription id from the schema), nothing
// after it, and no raw line break (stdio frames messages by newlines).
func checkFrame(msg []byte) error {
	if i := bytes.IndexAny(msg, "\r\n"); i >= 0 {
		return fmt.Errorf("raw line break at byte %d (breaks newline framing)", i)
	}
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.UseNumber()
	first, err := dec.Token()
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if first != json.Delim('{') {
		return fmt.Errorf("not a JSON object: starts with %v", first)
	}
	if err := walkObject(dec, ""); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON object")
	}
	m, err := members(msg)
	if err != nil {
		return err
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		return fmt.Errorf(`jsonrpc is %s, want "2.0"`, m["jsonrpc"])
	}
	return nil
}

// walkObject reads the members of an object whose '{' was read.
func walkObject(dec *json.Decoder, path string) error {
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("not JSON at %s: %w", path, err)
		}
		key, _ := tok.(string)
		if seen[key] {
			return fmt.Errorf("duplicate member %q at %s/", key, path)
		}
		seen[key] = true
		if err := walkValue(dec, path+"/"+key); err != nil {
			return err
		}
	}
	_, err := dec.Token() // '}'
	return err
}

func walkValue(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("not JSON at %s: %w", path, err)
	}
	switch tok {
	case json.Delim('{'):
		return walkObject(dec, path)
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, path+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
		_, err := dec.Token() // ']'
		return err
	}
	return nil
}

// members decodes a JSON object into its members, each kept as raw JSON.
func members(raw []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if m == nil {
		return nil, errors.New("null where an object is required")
	}
	return m, nil
}

// member returns the raw member at path (member names), or an error naming
// the first missing one.
func member(raw []byte, path ...string) (json.RawMessage, error) {
	cur := json.RawMessage(raw)
	for i, key := range path {
		m, err := members(cur)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strings.Join(path[:i], "."), err)
		}
		v, ok := m[key]
		if !ok {
			return nil, fmt.Errorf("no member %s", strings.Join(path[:i+1], "."))
		}
		cur = v
	}
	return cur, nil
}

var integerToken = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// idType is the JSON type of a request id token: "string", "integer", or
// what else it is.
func idType(tok []byte) string {
	switch {
	case len(tok) > 0 && tok[0] == '"':
		return "string"
	case integerToken.Match(tok):
		return "integer"
	case len(tok) > 0 && (tok[0] == '-' || tok[0] >= '0' && tok[0] <= '9'):
		return "non-integer number"
	}
	return "non-id value " + string(tok)
}

// sameID checks that got is the request id want with the same JSON type:
// a string stays a string, an integer stays an integer with the very same
// digits (7 is not "7", 7.0, 7e0 or 07). Raw tokens are compared; two
// string tokens that differ only in how they escape the same text are the
// same id.
func sameID(got, want []byte) error {
	if gt, wt := idType(got), idType(want); gt != wt {
		return fmt.Errorf("id %s is a JSON %s, the request id %s a JSON %s", got, gt, want, wt)
	}
	if bytes.Equal(got, want) {
		return nil
	}
	if idType(want) == "string" {
		var g, w string
		if json.Unmarshal(got, &g) == nil && json.Unmarshal(want, &w) == nil && g == w {
			return nil
		}
	}
	return fmt.Errorf("id %s is not the request id %s", got, want)
}

// subscriptionID returns the _meta subscription id under the object at path.
func subscriptionID(msg []byte, path ...string) (json.RawMessage, error) {
	meta, err := member(msg, append(path, "_meta")...)
	if err != nil {
		return nil, err
	}
	m, err := members(meta)
	if err != nil {
		return nil, fmt.Errorf("_meta: %w", err)
	}
	sid, ok := m[spec.MetaSubscriptionID]
	if !ok {
		return nil, fmt.Errorf("no _meta %s", spec.MetaSubscriptionID)
	}
	return sid, nil
}

// checkNotification checks a notification of the stream of the listen
// request whose id token is id: no "id" member, a method, and params._meta
// carrying the subscription id.
func checkNotification(msg, id []byte) error {
	m, err := members(msg)
	if err != nil {
		return err
	}
	if tok, ok := m["id"]; ok {
		return fmt.Errorf("a notification has an id member (%s)", tok)
	}
	var method string
	if err := json.Unmarshal(m["method"], &method); err != nil || method == "" {
		return errors.New("a notification needs a method")
	}
	sid, err := subscriptionID(msg, "params")
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if err := sameID(sid, id); err != nil {
		return fmt.Errorf("%s: subscription %w", method, err)
	}
	return nil
}

// checkAck checks the acknowledgement of the listen request whose id token
// is id and whose params.notifications is requested: a notification of the
// stream whose params.notifications is a subset of requested.
func checkAck(msg, id, requested []byte) error {
	if err := checkNotification(msg, id); err != nil {
		return err
	}
	method, _ := member(msg, "method")
	if string(method) != `"`+spec.MethodAcknowledged+`"` {
		return fmt.Errorf("method %s, want %s", method, spec.MethodAcknowledged)
	}
	acked, err := member(msg, "params", "notifications")
	if err != nil {
		return err
	}
	return filterSubset(acked, requested)
}

// filterSubset checks that the filter acked is a subset of requested: each
// of its members is requested, with the same value, or (for a list) with
// only elements the request listed.
func filterSubset(acked, requested []byte) error {
	var a, r any
	if err := unmarshalNumbers(acked, &a); err != nil {
		return fmt.Errorf("acknowledged filter: %w", err)
	}
	if err := unmarshalNumbers(requested, &r); err != nil {
		return fmt.Errorf("requested filter: %w", err)
	}
	return subset(a, r, "notifications")
}

func subset(a, r any, path string) error {
	switch av := a.(type) {
	case map[string]any:
		rv, ok := r.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is an object, the request's is not", path)
		}
		for k, v := range av {
			w, ok := rv[k]
			if !ok {
				return fmt.Errorf("%s.%s was acknowledged but not requested", path, k)
			}
			if err := subset(v, w, path+"."+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		rv, ok := r.([]any)
		if !ok {
			return fmt.Errorf("%s is a list, the request's is not", path)
		}
		for _, e := range av {
			if !slices.ContainsFunc(rv, func(x any) bool { return reflect.DeepEqual(e, x) }) {
				return fmt.Errorf("%s lists %v, which was not requested", path, e)
			}
		}
		return nil
	}
	if !reflect.DeepEqual(a, r) {
		return fmt.Errorf("%s is %v, the request's is %v", path, a, r)
	}
	return nil
}

func unmarshalNumbers(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

// checkCompletion checks the completion of the listen request whose id
// token is id: a result response echoing the id, resultType "complete", and
// result._meta carrying the subscription id.
func checkCompletion(msg, id []byte) error {
	m, err := members(msg)
	if err != nil {
		return err
	}
	for _, k := range []string{"method", "error"} {
		if _, ok := m[k]; ok {
			return fmt.Errorf("a result response has a %q member", k)
		}
	}
	tok, ok := m["id"]
	if !ok {
		return errors.New("the completion has no id")
	}
	if err := sameID(tok, id); err != nil {
		return fmt.Errorf("completion %w", err)
	}
	rt, err := member(msg, "result", "resultType")
	if err != nil {
		return err
	}
	if string(rt) != `"complete"` {
		return fmt.Errorf(`resultType is %s, want "complete"`, rt)
	}
	sid, err := subscriptionID(msg, "result")
	if err != nil {
		return fmt.Errorf("completion: %w", err)
	}
	if err := sameID(sid, id); err != nil {
		return fmt.Errorf("completion subscription %w", err)
	}
	return nil
}

// checkErrorResponse checks an error response to the request whose id
// token is id (nil when the id could not be read: the response then has no
// id member, since the schema allows no null id), with the given code.
// Internal errors carry no data.
func checkErrorResponse(msg, id []byte, code int) error {
	m, err := members(msg)
	if err != nil {
		return err
	}
	for _, k := range []string{"method", "result"} {
		if _, ok := m[k]; ok {
			return fmt.Errorf("an error response has a %q member", k)
		}
	}
	tok, hasID := m["id"]
	switch {
	case id == nil && hasID:
		return fmt.Errorf("id %s, but the request id could not be read", tok)
	case id != nil && !hasID:
		return fmt.Errorf("no id, want the request id %s", id)
	case id != nil:
		if err := sameID(tok, id); err != nil {
			return fmt.Errorf("error response %w", err)
		}
	}
	var e struct {
		Code    *json.Number    `json:"code"`
		Message *string         `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(m["error"], &e); err != nil || e.Code == nil || e.Message == nil {
		return fmt.Errorf("error member %s is not an error object", m["error"])
	}
	if e.Code.String() != strconv.Itoa(code) {
		return fmt.Errorf("error code %s, want %d", e.Code, code)
	}
	if code == jsonrpc.CodeInternalError && e.Data != nil {
		return fmt.Errorf("an internal error carries data %s", e.Data)
	}
	return nil
}

// listChangedKeys maps each list-changed method to its filter key.
var listChangedKeys = map[string]string{
	spec.MethodToolsListChanged:     spec.KeyToolsListChanged,
	spec.MethodPromptsListChanged:   spec.KeyPromptsListChanged,
	spec.MethodResourcesListChanged: spec.KeyResourcesListChanged,
}

// extensionSelectors maps each extension notification the tests know to
// the filter key that selects it and, when set, the params member whose
// value must be listed under that key.
var extensionSelectors = map[string]struct{ key, param string }{
	methodTasks:                         {"taskIds", "taskId"},
	"notifications/com.example/changed": {"com.example/all", ""},
}

// checkSelected checks that the notification msg is of a type the
// acknowledged filter acked selects.
func checkSelected(msg []byte, acked map[string]any) error {
	var n struct {
		Method string         `json:"method"`
		Params map[string]any `json:"params"`
	}
	if err := unmarshalNumbers(msg, &n); err != nil {
		return err
	}
	if key, ok := listChangedKeys[n.Method]; ok {
		if acked[key] != true {
			return fmt.Errorf("%s, but %s was not acknowledged", n.Method, key)
		}
		return nil
	}
	listed := func(key, value string) bool {
		l, _ := acked[key].([]any)
		return slices.Contains(l, any(value))
	}
	switch n.Method {
	case spec.MethodResourceUpdated:
		uri, _ := n.Params["uri"].(string)
		if !listed(spec.KeyResourceSubscriptions, uri) {
			return fmt.Errorf("%s for %q, which was not acknowledged", n.Method, uri)
		}
		return nil
	case spec.MethodAcknowledged:
		return errors.New("a second acknowledgement")
	case "notifications/progress", "notifications/message":
		return fmt.Errorf("%s never goes on a listen stream", n.Method)
	}
	sel, ok := extensionSelectors[n.Method]
	if !ok {
		return fmt.Errorf("%s is not a notification any acknowledged filter key selects", n.Method)
	}
	if sel.param == "" {
		if v, ok := acked[sel.key]; !ok || v == false {
			return fmt.Errorf("%s, but %s was not acknowledged", n.Method, sel.key)
		}
		return nil
	}
	v, _ := n.Params[sel.param].(string)
	if !listed(sel.key, v) {
		return fmt.Errorf("%s for %s %q, which was not acknowledged", n.Method, sel.param, v)
	}
	return nil
}

// Terminal messages of a stream.
const (
	endNone       = iota // cancelled or disconnected: no terminal message
	endCompletion        // the completion result
	endFailure           // the -32603 failure
)

// checkStream checks a whole listen stream, in order: the acknowledgement
// first, then notifications of acknowledged types only, each tagged with
// the subscription id, then the terminal message end, and nothing after it.
// id is the listen request's id token, requested its params.notifications.
func checkStream(msgs [][]byte, id, requested []byte, end int) error {
	if len(msgs) == 0 {
		return errors.New("empty stream: the acknowledgement must come first")
	}
	if err := checkAck(msgs[0], id, requested); err != nil {
		return fmt.Errorf("message 0: %w", err)
	}
	ackedRaw, _ := member(msgs[0], "params", "notifications")
	var acked map[string]any
	if err := unmarshalNumbers(ackedRaw, &acked); err != nil {
		return err
	}
	last := len(msgs)
	if end != endNone {
		last--
		if last < 1 {
			return errors.New("no terminal message after the acknowledgement")
		}
	}
	for i := 1; i < last; i++ {
		if err := checkNotification(msgs[i], id); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		if err := checkSelected(msgs[i], acked); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
	}
	switch end {
	case endCompletion:
		if err := checkCompletion(msgs[last], id); err != nil {
			return fmt.Errorf("message %d: %w", last, err)
		}
	case endFailure:
		if err := checkErrorResponse(msgs[last], id, jsonrpc.CodeInternalError); err != nil {
			return fmt.Errorf("message %d: %w", last, err)
		}
	}
	return nil
}

// The specification's own example of version negotiation: a listen naming
// 1900-01-01 to a server that speaks 2026-07-28 and 2025-11-25 is answered
// with exactly this -32022 (never "Method not found").
func TestUnsupportedVersionMatchesTheOfficialExample(t *testing.T) {
	want, err := os.ReadFile(filepath.Join(examplesDir, "UnsupportedProtocolVersionError", "unsupported-version.json"))
	require.NoError(t, err)
	got := jsonrpc.ErrorResponse(jsonrpc.IntID(1), spec.ListenVersionError([]string{"2026-07-28", "2025-11-25"}, "1900-01-01"))
	assert.JSONEq(t, string(want), string(got))
	require.NoError(t, validate(t, "UnsupportedProtocolVersionError", got))
}
