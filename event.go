package listen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"

	"github.com/mcplisten/listen/spec"
)

// Event is a protocol-neutral change a Source hands to a subscription. Build
// it with the constructors; the zero Event is invalid.
//
// Event is a small value: copy it freely. Maps inside it are shared, not
// copied, so treat them as read-only once published.
type Event struct {
	Kind Kind
	// URI is the absolute URI of a resource update; empty for other kinds.
	URI string
	// Params are extra members of a core notification's params. A "_meta"
	// object in it is merged under Metadata; "uri" is always replaced by URI.
	Params map[string]any
	// Metadata is merged into the notification's params._meta (over the
	// "_meta" of Params; the subscription id always wins).
	Metadata map[string]any
	// ExtensionID names the extension that owns an extension event.
	ExtensionID string
	// Selector picks the subscriptions of an extension event: it is delivered
	// to a subscription whose owned filter contains the selector (see Filter).
	Selector Filter
	// Payload is the extension's own data, handed to its shaper.
	Payload any
	// Scope, if set, addresses the event to one scope (a principal, a
	// tenant: whatever Options.Scopes names): only the listens whose
	// request named it (Request.Scopes) receive it; a subscription drops
	// it otherwise, whatever its source. A listen with no scope receives
	// no scoped event, and without Options.Scopes (nil) no listen has a
	// scope: a scoped event then reaches none. A scope narrows who gets an
	// event; it never widens it to every listen. Empty, the default, is
	// unscoped: the event reaches every listen that selects it, scoped or
	// not.
	Scope string
}

// ToolsListChanged returns a notifications/tools/list_changed event.
func ToolsListChanged() Event { return Event{Kind: KindToolsListChanged} }

// PromptsListChanged returns a notifications/prompts/list_changed event.
func PromptsListChanged() Event { return Event{Kind: KindPromptsListChanged} }

// ResourcesListChanged returns a notifications/resources/list_changed event.
func ResourcesListChanged() Event { return Event{Kind: KindResourcesListChanged} }

// ResourceUpdated returns a notifications/resources/updated event for the
// absolute URI uri.
func ResourceUpdated(uri string) Event { return Event{Kind: KindResourceUpdated, URI: uri} }

// ExtensionEvent returns an event owned by the extension id, delivered to the
// subscriptions whose filter contains selector, and shaped by the extension
// from payload.
func ExtensionEvent(id string, selector Filter, payload any) Event {
	return Event{Kind: KindExtension, ExtensionID: id, Selector: selector, Payload: payload}
}

// WithMetadata returns a copy of e with Metadata set to m.
func (e Event) WithMetadata(m map[string]any) Event { e.Metadata = m; return e }

// WithParams returns a copy of e with Params set to p (core kinds only).
func (e Event) WithParams(p map[string]any) Event { e.Params = p; return e }

// WithScope returns a copy of e addressed to scope (see Event.Scope).
func (e Event) WithScope(scope string) Event { e.Scope = scope; return e }

// ErrInvalidEvent matches every event validation error.
var ErrInvalidEvent = errors.New("listen: invalid subscription event")

// eventError is an event validation error: one of the exact messages
// listed at Event.Validate.
type eventError struct {
	Message string
}

func (e *eventError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrInvalidEvent) true.
func (e *eventError) Is(target error) bool { return target == ErrInvalidEvent }

// Exact validation messages.
const (
	msgEventParams        = "subscription event params must be a JSON object"
	msgEventMetadata      = "subscription event metadata must be a JSON object"
	msgEventAbsoluteURI   = "resource update events require an absolute URI"
	msgEventListURI       = "list change events cannot include a resource URI"
	msgEventCoreExtFields = "core subscription events cannot use extension event fields"
	msgEventExtID         = "extension subscription events require an extension id"
	msgEventExtSelector   = "extension subscription events require a non-empty JSON selector"
	msgEventExtCoreFields = "extension subscription events cannot use core event fields"
	msgEventInvalid       = "subscription source returned an invalid event"
)

var (
	errEventParams        = &eventError{msgEventParams}
	errEventMetadata      = &eventError{msgEventMetadata}
	errEventAbsoluteURI   = &eventError{msgEventAbsoluteURI}
	errEventListURI       = &eventError{msgEventListURI}
	errEventCoreExtFields = &eventError{msgEventCoreExtFields}
	errEventExtID         = &eventError{msgEventExtID}
	errEventExtSelector   = &eventError{msgEventExtSelector}
	errEventExtCoreFields = &eventError{msgEventExtCoreFields}
	errEventInvalid       = &eventError{msgEventInvalid}
)

// Validate checks e and returns nil or an error matching ErrInvalidEvent with one of these
// exact messages, checked in this order.
//
// Core kinds:
//   - "subscription event params must be a JSON object"
//   - "subscription event metadata must be a JSON object"
//   - "resource update events require an absolute URI" (a scheme, then ':')
//   - "list change events cannot include a resource URI"
//   - "core subscription events cannot use extension event fields"
//
// Extension kind:
//   - "extension subscription events require an extension id"
//   - "extension subscription events require a non-empty JSON selector"
//   - "subscription event metadata must be a JSON object"
//   - "extension subscription events cannot use core event fields"
//
// A zero or unknown Kind: "subscription source returned an invalid event".
// A JSON object here is a map whose values are all JSON values (see Filter);
// event params and metadata may also hold json.RawMessage values of valid
// JSON, written as they are.
// Validate does not allocate.
func (e Event) Validate() error {
	switch {
	case e.Kind.core():
		if !objectValid(e.Params) {
			return errEventParams
		}
		if !objectValid(e.Metadata) {
			return errEventMetadata
		}
		if kinds[e.Kind].uri {
			if !isAbsoluteURI(e.URI) {
				return errEventAbsoluteURI
			}
		} else if e.URI != "" {
			return errEventListURI
		}
		if e.ExtensionID != "" || len(e.Selector) > 0 || e.Payload != nil {
			return errEventCoreExtFields
		}
		return nil
	case e.Kind == KindExtension:
		if e.ExtensionID == "" {
			return errEventExtID
		}
		if len(e.Selector) == 0 || !e.Selector.valid() {
			return errEventExtSelector
		}
		if !objectValid(e.Metadata) {
			return errEventMetadata
		}
		if e.URI != "" || len(e.Params) > 0 {
			return errEventExtCoreFields
		}
		return nil
	}
	return errEventInvalid
}

func objectValid(m map[string]any) bool {
	for _, v := range m {
		if !validEventJSON(v, 1) {
			return false
		}
	}
	return true
}

// isAbsoluteURI reports whether s is an absolute URI (RFC 3986): a scheme (a
// letter, then letters, digits, '+', '-' or '.'), a ':', and a rest made of
// URI characters, where every '%' starts a valid %XX escape. When the rest
// has an authority ("//..."), its userinfo and host use only the characters
// RFC 3986 allows there (no escapes in the host), an IP literal is closed by
// ']', and a port is digits. Non-ASCII bytes (IRIs) are allowed outside the
// scheme and host. It does not allocate.
//
// Every URI it accepts also parses with net/url and passes the JSON Schema
// "uri" format check of the MCP schema.
func isAbsoluteURI(s string) bool {
	i := 0
	for i < len(s) && s[i] != ':' {
		c := s[i]
		isAlpha := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if i == 0 && !isAlpha {
			return false
		}
		if !isAlpha && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.' {
			return false
		}
		i++
	}
	if i == 0 || i == len(s) {
		return false
	}
	rest := s[i+1:]
	for j := 0; j < len(rest); j++ {
		if j+8 <= len(rest) && plainURIByte[rest[j]] && plainURIByte[rest[j+1]] && plainURIByte[rest[j+2]] && plainURIByte[rest[j+3]] &&
			plainURIByte[rest[j+4]] && plainURIByte[rest[j+5]] && plainURIByte[rest[j+6]] && plainURIByte[rest[j+7]] {
			j += 7 // eight plain bytes
			continue
		}
		if c := rest[j]; !plainURIByte[c] && (c != '%' || j+2 >= len(rest) || !isHex(rest[j+1]) || !isHex(rest[j+2])) {
			return false
		}
	}
	if len(rest) < 2 || rest[0] != '/' || rest[1] != '/' {
		return true
	}
	auth := rest[2:]
	for j := 0; j < len(auth); j++ {
		if c := auth[j]; c == '/' || c == '?' || c == '#' {
			auth = auth[:j]
			break
		}
	}
	host := auth
	if at := lastIndexByte(auth, '@'); at >= 0 {
		for j := 0; j < at; j++ {
			if c := auth[j]; c >= 0x80 || !userinfoChar[c] {
				return false
			}
		}
		host = auth[at+1:]
	}
	port := ""
	if len(host) > 0 && host[0] == '[' {
		end := indexByte(host, ']')
		if end < 0 {
			return false
		}
		for j := 1; j < end; j++ {
			if c := host[j]; !isHex(c) && c != ':' && c != '.' {
				return false
			}
		}
		// Only an IPv6 address may be bracketed (RFC 3986; net/url agrees).
		if a, err := netip.ParseAddr(host[1:end]); err != nil || a.Is4() {
			return false
		}
		after := host[end+1:]
		if after != "" {
			if after[0] != ':' {
				return false
			}
			port = after[1:]
		}
	} else {
		if colon := lastIndexByte(host, ':'); colon >= 0 {
			host, port = host[:colon], host[colon+1:]
		}
		for j := 0; j < len(host); j++ {
			if c := host[j]; c < 0x80 && !hostChar[c] {
				return false
			}
		}
	}
	for j := 0; j < len(port); j++ {
		if port[j] < '0' || port[j] > '9' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func lastIndexByte(s string, c byte) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// Character classes of RFC 3986 (ASCII only).
var uriChar, userinfoChar, hostChar [128]bool

// plainURIByte[c] is true for a byte that the rest of an absolute URI may
// hold as it is: a URI character but '%' (which starts an escape), or a
// non-ASCII byte.
var plainURIByte [256]bool

func init() {
	const (
		alnum      = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		unreserved = alnum + "-._~"
		subDelims  = "!$&'()*+,;="
	)
	for _, c := range unreserved + subDelims + ":/?#[]@%" {
		uriChar[c] = true
	}
	for c := range plainURIByte {
		plainURIByte[c] = c >= 0x80 || (uriChar[c] && c != '%')
	}
	for _, c := range unreserved + subDelims + ":%" {
		userinfoChar[c] = true
	}
	for _, c := range unreserved + subDelims {
		hostChar[c] = true
	}
}

// Kind is the kind of an Event.
type Kind uint8

// Event kinds. The zero Kind is not a valid event.
const (
	// KindToolsListChanged becomes notifications/tools/list_changed.
	KindToolsListChanged Kind = iota + 1
	// KindPromptsListChanged becomes notifications/prompts/list_changed.
	KindPromptsListChanged
	// KindResourcesListChanged becomes notifications/resources/list_changed.
	KindResourcesListChanged
	// KindResourceUpdated becomes notifications/resources/updated.
	KindResourceUpdated
	// KindExtension is shaped by the extension named in Event.ExtensionID.
	KindExtension
)

// kinds is the table of notification kinds: all the packages know of a
// core kind is in its row (validation, narrowing, selection, the hub's
// index, shaping, the methods an extension may not use, the capability
// that allows it). A new core kind is a Kind above, a row here, its field in
// Capabilities below, and its method and filter key in package spec.
var kinds = [...]kindRow{
	KindToolsListChanged: {
		name: "tools_list_changed", method: spec.MethodToolsListChanged, key: spec.KeyToolsListChanged,
		capability: [2]string{"tools", "listChanged"}, allowed: func(c *Capabilities) *bool { return &c.ToolsListChanged },
	},
	KindPromptsListChanged: {
		name: "prompts_list_changed", method: spec.MethodPromptsListChanged, key: spec.KeyPromptsListChanged,
		capability: [2]string{"prompts", "listChanged"}, allowed: func(c *Capabilities) *bool { return &c.PromptsListChanged },
	},
	KindResourcesListChanged: {
		name: "resources_list_changed", method: spec.MethodResourcesListChanged, key: spec.KeyResourcesListChanged,
		capability: [2]string{"resources", "listChanged"}, allowed: func(c *Capabilities) *bool { return &c.ResourcesListChanged },
	},
	KindResourceUpdated: {
		name: "resource_updated", method: spec.MethodResourceUpdated, key: spec.KeyResourceSubscriptions, uri: true,
		capability: [2]string{"resources", "subscribe"}, allowed: func(c *Capabilities) *bool { return &c.ResourcesSubscribe },
	},
	KindExtension: {name: "extension"},
}

// A Subscription keeps a bit per kind in a uint64 (Subscription.lists).
var _ [64 - len(kinds)]struct{}

// kindRow is one row of kinds.
type kindRow struct {
	name   string // Kind.String
	method string // the notification's method
	// key is the filter key that selects the kind: a boolean for a list
	// change; for a resource update (uri), the list of URIs its URI must
	// be in.
	key string
	uri bool
	// capability is the server/discover capability that allows the kind,
	// capabilities.<group>.<flag>; allowed is its field in Capabilities.
	capability [2]string
	allowed    func(*Capabilities) *bool
}

// core reports whether k is a core kind (a row with a method).
func (k Kind) core() bool { return int(k) < len(kinds) && kinds[k].method != "" }

// listChange reports whether k is a core list change, selected when its key
// is true.
func (k Kind) listChange() bool { return k.core() && !kinds[k].uri }

// String returns the kind's name, such as "tools_list_changed".
func (k Kind) String() string {
	if int(k) < len(kinds) && kinds[k].name != "" {
		return kinds[k].name
	}
	return "invalid"
}

// kindOf returns the core kind that the filter key selects:
// KindToolsListChanged for toolsListChanged (a list change is selected when
// its key is true), and so on, KindResourceUpdated for
// resourceSubscriptions, and 0 for any other key (an extension's). A source
// that selects events itself, as the hub does, indexes its listeners by it
// (through internal/core).
func kindOf(key string) Kind {
	for k := range kinds {
		if Kind(k).core() && kinds[k].key == key {
			return Kind(k)
		}
	}
	return 0
}

// Capabilities is what a server advertises in server/discover, as far as a
// listen is concerned. The requested filter is narrowed against it: a
// requested list change needs its flag, resourceSubscriptions needs
// ResourcesSubscribe, and an extension's filter keys need the extension in
// Extensions. The zero value supports nothing: every listen is acknowledged
// with an empty filter.
//
// Build it with the fields, or read it from the capabilities object a server
// already advertises with CapabilitiesFrom.
type Capabilities struct {
	// ToolsListChanged is capabilities.tools.listChanged.
	ToolsListChanged bool
	// PromptsListChanged is capabilities.prompts.listChanged.
	PromptsListChanged bool
	// ResourcesListChanged is capabilities.resources.listChanged.
	ResourcesListChanged bool
	// ResourcesSubscribe is capabilities.resources.subscribe.
	ResourcesSubscribe bool
	// Extensions holds the settings of each extension advertised under
	// capabilities.extensions, keyed by extension id.
	Extensions map[string]any
}

// CapabilitiesFrom reads Capabilities from a server/discover capabilities
// object: v is its JSON text ([]byte, json.RawMessage or string) or any value
// that encodes as it, such as a go-sdk *mcp.ServerCapabilities or a
// map[string]any. Only the boolean true counts for a flag. A nil v (or JSON
// null) gives the zero Capabilities; anything that is not a JSON object is
// an error.
func CapabilitiesFrom(v any) (Capabilities, error) {
	var raw []byte
	switch t := v.(type) {
	case []byte:
		raw = t
	case json.RawMessage:
		raw = t
	case string:
		raw = []byte(t)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return Capabilities{}, fmt.Errorf("listen: encoding capabilities: %w", err)
		}
		raw = b
	}
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return Capabilities{}, nil
	}
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if len(raw) == 0 || raw[0] != '{' || dec.Decode(&obj) != nil {
		return Capabilities{}, errors.New("listen: capabilities must be a JSON object")
	}
	var c Capabilities
	for _, row := range kinds {
		if row.allowed != nil {
			g, _ := obj[row.capability[0]].(map[string]any)
			b, _ := g[row.capability[1]].(bool)
			*row.allowed(&c) = b
		}
	}
	if exts, ok := obj["extensions"].(map[string]any); ok && len(exts) > 0 {
		c.Extensions = exts
	}
	return c, nil
}

// allows reports whether c advertises every core kind f asks for: each list
// change whose key is true, and resource updates when f has a list under
// resourceSubscriptions. Narrowing f against c, as Open does, then keeps
// each of them; the other keys (extensions') are not looked at. An adapter
// that caches what its server advertises (Options.CapabilitiesFor) can
// tell with it when a listen asks for more than its last reading.
func (c Capabilities) allows(f Filter) bool {
	for k := range kinds {
		row := &kinds[k]
		if !Kind(k).core() || *row.allowed(&c) {
			continue
		}
		v, ok := f[row.key]
		switch {
		case !ok:
		case row.uri:
			if _, isList := asList(v); isList {
				return false
			}
		case v == true:
			return false
		}
	}
	return true
}

// hasExtension reports whether the extension id is advertised.
func (c Capabilities) hasExtension(id string) bool {
	_, ok := c.Extensions[id]
	return ok
}
