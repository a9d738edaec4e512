package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcplisten/listen"
)

// envelopeVersion is the version of the wire envelope this package writes
// and reads.
const envelopeVersion = 1

// Wire kinds of the envelope's "k" member.
const (
	wireTools     = "tools"     // notifications/tools/list_changed
	wirePrompts   = "prompts"   // notifications/prompts/list_changed
	wireResources = "resources" // notifications/resources/list_changed
	wireUpdated   = "updated"   // notifications/resources/updated
	wireExt       = "ext"       // an extension event
	wireSync      = "sync"      // no event: announces the sender's sequence number
	wireQuota     = "quota"     // no event: the sender's quota counts (see Quota)
)

func wireKind(k listen.Kind) string {
	switch k {
	case listen.KindToolsListChanged:
		return wireTools
	case listen.KindPromptsListChanged:
		return wirePrompts
	case listen.KindResourcesListChanged:
		return wireResources
	case listen.KindResourceUpdated:
		return wireUpdated
	case listen.KindExtension:
		return wireExt
	}
	return ""
}

// envelopeHead returns the fixed start of every envelope of origin, up to
// the sequence number: {"v":1,"o":"<origin>","n":. The sequence number,
// then ,"t":<timestamp>, then the body follow (appendStamp, appendBody).
func envelopeHead(origin string) []byte {
	b := []byte(`{"v":` + strconv.Itoa(envelopeVersion) + `,"o":`)
	b = strconv.AppendQuote(b, origin)
	return append(b, `,"n":`...)
}

// appendStamp appends the sequence number and the timestamp (Unix
// milliseconds) after the envelope head: 42,"t":1733000000000
func appendStamp(b []byte, seq uint64, ms int64) []byte {
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"t":`...)
	return strconv.AppendInt(b, ms, 10)
}

// appendBody appends the envelope's members after the sequence number, from
// the comma on, and the closing brace: ,"k":"tools"} for a list change. ev
// must be valid (listen.Event.Validate).
func appendBody(b []byte, ev listen.Event) ([]byte, error) {
	b = append(b, `,"k":"`...)
	b = append(b, wireKind(ev.Kind)...)
	b = append(b, '"')
	if ev.URI != "" {
		b = append(b, `,"u":`...)
		b = appendJSONString(b, ev.URI)
	}
	var err error
	if len(ev.Params) > 0 {
		if b, err = appendObject(b, `,"p":`, ev.Params); err != nil {
			return nil, err
		}
	}
	if len(ev.Metadata) > 0 {
		if b, err = appendObject(b, `,"m":`, ev.Metadata); err != nil {
			return nil, err
		}
	}
	if ev.ExtensionID != "" {
		b = append(b, `,"x":`...)
		b = appendJSONString(b, ev.ExtensionID)
	}
	if len(ev.Selector) > 0 {
		if b, err = appendObject(b, `,"s":`, ev.Selector); err != nil {
			return nil, err
		}
	}
	if ev.Payload != nil {
		raw, err := json.Marshal(ev.Payload)
		if err != nil {
			return nil, fmt.Errorf("%w: payload: %v", ErrEncode, err)
		}
		b = append(b, `,"d":`...)
		b = append(b, raw...)
	}
	if ev.Scope != "" {
		b = append(b, `,"a":`...)
		b = appendJSONString(b, ev.Scope)
	}
	return append(b, '}'), nil
}

// appendObject appends name and m encoded by the listen core's encoder, so
// that a value renders on a remote stream exactly as on a local one (a
// float stays a float literal).
func appendObject(b []byte, name string, m map[string]any) ([]byte, error) {
	raw, err := listen.Filter(m).MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEncode, err)
	}
	b = append(b, name...)
	return append(b, raw...), nil
}

func appendJSONString(b []byte, s string) []byte {
	raw, _ := json.Marshal(s) // a string always encodes
	return append(b, raw...)
}

// wireEnvelope is the decoded form of a version 1 envelope. Unknown
// members are ignored, so that a member can be added without a new version.
type wireEnvelope struct {
	V json.RawMessage            `json:"v"`
	O string                     `json:"o"`
	N uint64                     `json:"n"`
	T int64                      `json:"t"`
	K string                     `json:"k"`
	U string                     `json:"u"`
	P map[string]json.RawMessage `json:"p"`
	M map[string]json.RawMessage `json:"m"`
	X string                     `json:"x"`
	S map[string]any             `json:"s"`
	D json.RawMessage            `json:"d"`
	A string                     `json:"a"`
	Q *wireQuotaBody             `json:"q"`
}

// wireQuotaBody is the "q" member of a quota report: "c" maps a key's
// token to the sender's count of it (absolute; 0 when it has none left),
// "h" (hello) asks the receivers for a report of all their counts, "b"
// (bye) says the sender leaves.
type wireQuotaBody struct {
	C map[string]int64 `json:"c"`
	H bool             `json:"h"`
	B bool             `json:"b"`
}

// decoded is a received message: who sent it, its sequence number, its
// timestamp (Unix milliseconds, 0 when absent) and its event (Kind 0 for a
// sync message).
type decoded struct {
	origin string
	seq    uint64
	stamp  int64
	event  listen.Event
	// stripped counts the reserved _meta keys removed from the event.
	stripped int
	// quota is a quota report's body (event Kind 0).
	quota *wireQuotaBody
}

// Classes of undecodable messages.
var (
	errMalformed      = errors.New("malformed envelope")
	errUnknownVersion = errors.New("unknown envelope version")
	errInvalidEvent   = errors.New("invalid event")
)

// decodeEnvelope decodes a message. Its errors wrap errMalformed,
// errUnknownVersion or errInvalidEvent.
func decodeEnvelope(data []byte, decodePayload func(string, json.RawMessage) (any, error)) (decoded, error) {
	var e wireEnvelope
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&e); err != nil {
		// A later version may change the members' types: look for its
		// version before calling the message malformed.
		if v, ok := versionOf(data); ok && v != strconv.Itoa(envelopeVersion) {
			return decoded{}, fmt.Errorf("%w %s", errUnknownVersion, v)
		}
		return decoded{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if dec.More() {
		return decoded{}, fmt.Errorf("%w: data after the envelope", errMalformed)
	}
	switch v := string(e.V); {
	case v == "":
		return decoded{}, fmt.Errorf("%w: no version", errMalformed)
	case v != strconv.Itoa(envelopeVersion):
		return decoded{}, fmt.Errorf("%w %s", errUnknownVersion, v)
	}
	if e.O == "" || e.N == 0 {
		return decoded{}, fmt.Errorf("%w: no origin or sequence number", errMalformed)
	}
	d := decoded{origin: e.O, seq: e.N, stamp: e.T}
	switch e.K {
	case wireSync:
		return d, nil
	case wireQuota:
		if e.Q == nil {
			return decoded{}, fmt.Errorf("%w: quota report without counts", errInvalidEvent)
		}
		for tok, c := range e.Q.C {
			if len(tok) != quotaTokenLen || c < 0 || c > maxQuotaCount {
				return decoded{}, fmt.Errorf("%w: quota report with a bad count", errInvalidEvent)
			}
		}
		d.quota = e.Q
		return d, nil
	case wireTools:
		d.event.Kind = listen.KindToolsListChanged
	case wirePrompts:
		d.event.Kind = listen.KindPromptsListChanged
	case wireResources:
		d.event.Kind = listen.KindResourcesListChanged
	case wireUpdated:
		d.event.Kind = listen.KindResourceUpdated
	case wireExt:
		d.event.Kind = listen.KindExtension
	default:
		return decoded{}, fmt.Errorf("%w: unknown kind %q", errMalformed, e.K)
	}
	d.event.URI = e.U
	d.event.Params = rawObject(e.P, nil)
	if meta, ok := e.P["_meta"]; ok {
		// The core merges an object under params._meta into the
		// notification's _meta: it must be a map to be merged.
		var m map[string]json.RawMessage
		if json.Unmarshal(meta, &m) == nil && m != nil {
			d.event.Params["_meta"] = rawObject(m, &d.stripped)
		}
	}
	d.event.Metadata = rawObject(e.M, &d.stripped)
	d.event.ExtensionID = e.X
	d.event.Scope = e.A
	if e.S != nil {
		d.event.Selector = listen.Filter(e.S)
	}
	if len(e.D) > 0 {
		var p any
		var err error
		if decodePayload != nil {
			p, err = decodePayload(e.X, e.D)
		} else {
			pd := json.NewDecoder(bytes.NewReader(e.D))
			pd.UseNumber()
			err = pd.Decode(&p)
		}
		if err != nil {
			return decoded{}, fmt.Errorf("%w: payload: %v", errInvalidEvent, err)
		}
		d.event.Payload = p
	}
	if err := d.event.Validate(); err != nil {
		return decoded{}, fmt.Errorf("%w: %w", errInvalidEvent, err)
	}
	return d, nil
}

// rawObject returns m as an event object whose values are pre-encoded JSON:
// the core writes them as they are, so that a remote stream renders params
// and metadata byte for byte as the local one did. For a _meta object
// (stripped not nil) it leaves out the keys the MCP specification
// reserves, and adds their number to *stripped.
func rawObject(m map[string]json.RawMessage, stripped *int) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if stripped != nil && reservedMetaKey(k) {
			*stripped++
			continue
		}
		out[k] = v
	}
	return out
}

// reservedMetaKey reports whether a _meta key has a prefix the MCP
// specification reserves for MCP itself: a prefix (the part before the
// first "/") whose second dot-separated label is "modelcontextprotocol" or
// "mcp", such as io.modelcontextprotocol/serverInfo, dev.mcp/x or
// com.mcp.tools/y (but not com.example.mcp/z). Labels are compared without
// regard to case, so that no variant a client might honour gets through.
//
// A Node removes these keys from the metadata and the params _meta of
// every event it receives: their meaning belongs to the receiving server
// (its core and its extensions), never to a message from the broker.
func reservedMetaKey(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	_, rest, ok := strings.Cut(prefix, ".")
	if !ok {
		return false
	}
	second, _, _ := strings.Cut(rest, ".")
	return strings.EqualFold(second, "modelcontextprotocol") || strings.EqualFold(second, "mcp")
}

// versionOf returns the text of the top-level "v" member of a JSON object,
// if data is one.
func versionOf(data []byte) (string, bool) {
	var head struct {
		V json.RawMessage `json:"v"`
	}
	if json.Unmarshal(data, &head) != nil || len(head.V) == 0 {
		return "", false
	}
	return string(head.V), true
}
