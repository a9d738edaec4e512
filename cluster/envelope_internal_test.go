package cluster

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
)

// stamp is the timestamp of the envelopes encode makes.
const stamp = 1733000000123

func encode(t *testing.T, origin string, seq uint64, ev listen.Event) []byte {
	t.Helper()
	body, err := appendBody(nil, ev)
	require.NoError(t, err)
	msg := appendStamp(envelopeHead(origin), seq, stamp)
	return append(msg, body...)
}

func TestEnvelopeShapes(t *testing.T) {
	for _, c := range []struct {
		ev   listen.Event
		want string
	}{
		{listen.ToolsListChanged(), `{"v":1,"o":"o1","n":7,"t":1733000000123,"k":"tools"}`},
		{listen.PromptsListChanged(), `{"v":1,"o":"o1","n":7,"t":1733000000123,"k":"prompts"}`},
		{listen.ResourcesListChanged(), `{"v":1,"o":"o1","n":7,"t":1733000000123,"k":"resources"}`},
		{listen.ResourceUpdated("file:///a b"), `{"v":1,"o":"o1","n":7,"t":1733000000123,"k":"updated","u":"file:///a b"}`},
		{
			listen.ResourceUpdated("file:///a").WithParams(map[string]any{"f": 1.0, "i": 2}).WithMetadata(map[string]any{"k": "v"}),
			`{"v":1,"o":"o1","n":7,"t":1733000000123,"k":"updated","u":"file:///a","p":{"f":1.0,"i":2},"m":{"k":"v"}}`,
		},
		{
			listen.ExtensionEvent("x.y/z", listen.Filter{"ids": []any{"a"}}, map[string]any{"s": 1}),
			`{"v":1,"o":"o1","n":7,"t":1733000000123,"k":"ext","x":"x.y/z","s":{"ids":["a"]},"d":{"s":1}}`,
		},
	} {
		assert.Equal(t, c.want, string(encode(t, "o1", 7, c.ev)))
	}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	evs := []listen.Event{
		listen.ToolsListChanged(),
		listen.PromptsListChanged().WithMetadata(map[string]any{"a": json.Number("1.50"), "b": []any{true, nil}}),
		listen.ResourcesListChanged().WithParams(map[string]any{"_meta": map[string]any{"x": "y"}}),
		listen.ResourceUpdated("https://example.com/r?q=1#f").WithParams(map[string]any{"title": "T"}),
		listen.ExtensionEvent("io.example/tasks", listen.Filter{"taskIds": []any{"t1", "t2"}, "n": json.Number("3")},
			map[string]any{"status": "done", "n": json.Number("2.0")}).WithMetadata(map[string]any{"m": "v"}),
		listen.ExtensionEvent("io.example/tasks", listen.Filter{"k": true}, nil),
	}
	for _, ev := range evs {
		d, err := decodeEnvelope(encode(t, "origin", 42, ev), nil)
		require.NoError(t, err)
		assert.Equal(t, "origin", d.origin)
		assert.Equal(t, uint64(42), d.seq)
		assert.Equal(t, int64(stamp), d.stamp)
		// Re-encoding the decoded event gives the same bytes.
		assert.Equal(t, string(encode(t, "origin", 42, ev)), string(encode(t, "origin", 42, d.event)))
		assert.Equal(t, ev.Kind, d.event.Kind)
		assert.Equal(t, ev.URI, d.event.URI)
		assert.Equal(t, ev.ExtensionID, d.event.ExtensionID)
	}
}

func TestEnvelopeDecodePayload(t *testing.T) {
	type status struct {
		State string `json:"state"`
	}
	msg := encode(t, "o", 1, listen.ExtensionEvent("x.y/z", listen.Filter{"k": true}, status{"done"}))
	d, err := decodeEnvelope(msg, func(id string, raw json.RawMessage) (any, error) {
		assert.Equal(t, "x.y/z", id)
		var s status
		return s, json.Unmarshal(raw, &s)
	})
	require.NoError(t, err)
	assert.Equal(t, status{"done"}, d.event.Payload)
	_, err = decodeEnvelope(msg, func(string, json.RawMessage) (any, error) { return nil, errors.New("no") })
	assert.ErrorIs(t, err, errInvalidEvent)
}

func TestEnvelopeTolerance(t *testing.T) {
	// Whitespace, member order and unknown members are fine within v1.
	d, err := decodeEnvelope([]byte(` { "k" : "tools", "future": {"x": [1]}, "n": 3, "o": "p", "v": 1 } `), nil)
	require.NoError(t, err)
	assert.Equal(t, listen.KindToolsListChanged, d.event.Kind)
	assert.Zero(t, d.stamp, "an envelope without a timestamp decodes (a node with AuthKeys drops it as stale)")
	d, err = decodeEnvelope([]byte(`{"v":1,"o":"p","n":9,"t":5,"k":"sync"}`), nil)
	require.NoError(t, err)
	assert.Equal(t, listen.Kind(0), d.event.Kind)
	assert.Equal(t, uint64(9), d.seq)
	assert.Equal(t, int64(5), d.stamp)
	_, err = decodeEnvelope([]byte(`{"v":1,"o":"p","n":9,"t":"soon","k":"sync"}`), nil)
	assert.ErrorIs(t, err, errMalformed)
}

// Keys and subject of the fuzz target's authenticated path.
var (
	fuzzKeyNew  = bytes.Repeat([]byte{1}, MinAuthKeyBytes)
	fuzzKeyOld  = bytes.Repeat([]byte{2}, MinAuthKeyBytes)
	fuzzSubject = "mcp.listen.events"
)

// refSignature is the documented signature, computed without the
// package's signer.
func refSignature(key []byte, subject string, data []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(subject + "\n"))
	mac.Write(data)
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// FuzzDecodeEnvelope feeds a received message through both paths of a
// bridge: without authentication (decode only) and with it (verify, then
// decode). sign stands for a key holder: the message is signed with the
// older of the two accepted keys (a rotation in progress); otherwise sig
// is what the sender sent as the signature. Properties: nothing panics; every
// error is classified; a message is accepted exactly when sig is its HMAC
// under an accepted key (the reference computation); a decoded event is
// valid, re-encodes, and carries no reserved _meta key.
func FuzzDecodeEnvelope(f *testing.F) {
	f.Add([]byte(`{"v":1,"o":"p","n":1,"t":1733000000123,"k":"tools"}`), "", true)
	f.Add([]byte(`{"v":1,"o":"p","n":2,"k":"ext","x":"a/b","s":{"k":[1,2]},"d":{"z":null}}`), "", true)
	f.Add([]byte(`{"v":1,"o":"p","n":3,"k":"updated","u":"file:///a","p":{"_meta":{"io.modelcontextprotocol/x":1,"a":2}},"m":{"dev.mcp/y":3}}`), "", true)
	f.Add([]byte(`{"v":2}`), "", false)
	f.Add([]byte(`{"v":1,"o":"p","n":4,"k":"quota","q":{"h":true,"c":{"AAAAAAAAAAAAAAAA":3}}}`), "", false)
	f.Add([]byte(`nope`), strings.Repeat("A", 43), false)
	f.Add([]byte(`{"v":1,"o":"p","n":1,"k":"tools"}`), refSignature(fuzzKeyNew, fuzzSubject, []byte(`{"v":1,"o":"p","n":1,"k":"tools"}`)), false)
	f.Add([]byte(`{"v":1,"o":"p","n":1,"k":"tools"}`), refSignature(fuzzKeyNew, "other.events", []byte(`{"v":1,"o":"p","n":1,"k":"tools"}`)), false)
	f.Fuzz(func(t *testing.T, data []byte, sig string, sign bool) {
		checkDecode(t, data)

		if sign {
			sig = newSigner(fuzzKeyOld, fuzzSubject).sign(data)
		}
		v := newVerifier([][]byte{fuzzKeyNew, fuzzKeyOld}, fuzzSubject)
		err := v.verify(sig, data)
		want := sig == refSignature(fuzzKeyNew, fuzzSubject, data) || sig == refSignature(fuzzKeyOld, fuzzSubject, data)
		if (err == nil) != want {
			t.Fatalf("verify(%q) = %v, want accepted %v", sig, err, want)
		}
		if err != nil {
			if !errors.Is(err, errUnsigned) && !errors.Is(err, errBadSignature) {
				t.Fatalf("unclassified verify error %v", err)
			}
			return
		}
		checkDecode(t, data)
	})
}

// checkDecode decodes data as a bridge does and checks the properties of
// the result.
func checkDecode(t *testing.T, data []byte) {
	t.Helper()
	d, err := decodeEnvelope(data, nil)
	if err != nil {
		if !errors.Is(err, errMalformed) && !errors.Is(err, errUnknownVersion) && !errors.Is(err, errInvalidEvent) {
			t.Fatalf("unclassified error %v", err)
		}
		return
	}
	if d.quota != nil {
		for tok, c := range d.quota.C {
			if len(tok) != quotaTokenLen || c < 0 || c > maxQuotaCount {
				t.Fatalf("decoded a bad quota count %q: %d", tok, c)
			}
		}
	}
	if d.event.Kind == 0 {
		return
	}
	if err := d.event.Validate(); err != nil {
		t.Fatalf("decoded an invalid event: %v", err)
	}
	if _, err := appendBody(nil, d.event); err != nil {
		t.Fatalf("a decoded event does not re-encode: %v", err)
	}
	for k := range d.event.Metadata {
		if reservedMetaKey(k) {
			t.Fatalf("reserved key %q left in the metadata", k)
		}
	}
	if pm, ok := d.event.Params["_meta"].(map[string]any); ok {
		for k := range pm {
			if reservedMetaKey(k) {
				t.Fatalf("reserved key %q left in params _meta", k)
			}
		}
	}
}

func TestReservedMetaKey(t *testing.T) {
	for key, want := range map[string]bool{
		"io.modelcontextprotocol/serverInfo":     true,
		"io.modelcontextprotocol/subscriptionId": true,
		"org.modelcontextprotocol.api/x":         true,
		"dev.mcp/x":                              true,
		"com.mcp.tools/x":                        true,
		"IO.ModelContextProtocol/x":              true,
		"io.MCP/x":                               true,
		".mcp/x":                                 true,
		"io.modelcontextprotocol/":               true,
		"com.example.mcp/x":                      false, // the second label is "example"
		"mcp/x":                                  false, // one label
		"modelcontextprotocol.io/x":              false,
		"io.modelcontextprotocol":                false, // no prefix: a plain name
		"io.modelcontextprotocolx/y":             false,
		"com.example/id":                         false,
		"serverInfo":                             false,
		"":                                       false,
		"a/io.modelcontextprotocol/b":            false, // only the first "/" ends the prefix
	} {
		assert.Equal(t, want, reservedMetaKey(key), key)
	}
}

func TestDecodeStripsReservedMeta(t *testing.T) {
	d, err := decodeEnvelope([]byte(`{"v":1,"o":"p","n":1,"k":"tools",`+
		`"p":{"io.modelcontextprotocol/top":1,"_meta":{"io.modelcontextprotocol/a":1,"b/c":2}},`+
		`"m":{"dev.mcp/d":3,"e":4}}`), nil)
	require.NoError(t, err)
	assert.Equal(t, 2, d.stripped)
	assert.Equal(t, map[string]any{"e": json.RawMessage("4")}, d.event.Metadata)
	assert.Equal(t, map[string]any{"b/c": json.RawMessage("2")}, d.event.Params["_meta"])
	// A params member is no _meta key: it stays.
	assert.Equal(t, json.RawMessage("1"), d.event.Params["io.modelcontextprotocol/top"])
}

// TestDecodeQuotaReport: a quota report decodes to its counts; one with a
// bad token or count, or without counts, is an invalid event (dropped
// and counted, Drops.InvalidEvent).
func TestDecodeQuotaReport(t *testing.T) {
	const head = `{"v":1,"o":"p","n":1,"t":1,"k":"quota"`
	d, err := decodeEnvelope([]byte(head+`,"q":{"h":true,"c":{"AAAAAAAAAAAAAAAA":3,"BBBBBBBBBBBBBBBB":0}}}`), nil)
	require.NoError(t, err)
	require.NotNil(t, d.quota)
	assert.Equal(t, &wireQuotaBody{H: true, C: map[string]int64{"AAAAAAAAAAAAAAAA": 3, "BBBBBBBBBBBBBBBB": 0}}, d.quota)
	assert.Equal(t, listen.Kind(0), d.event.Kind)
	for _, bad := range []string{
		head + `}`,
		head + `,"q":{"c":{"short":1}}}`,
		head + `,"q":{"c":{"AAAAAAAAAAAAAAAA":-1}}}`,
		head + `,"q":{"c":{"AAAAAAAAAAAAAAAA":1073741825}}}`,
	} {
		_, err := decodeEnvelope([]byte(bad), nil)
		assert.ErrorIs(t, err, errInvalidEvent, bad)
	}
	_, err = decodeEnvelope([]byte(head+`,"q":{"c":{"AAAAAAAAAAAAAAAA":"x"}}}`), nil)
	assert.ErrorIs(t, err, errMalformed)
}
