package listen

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Protocol versions.
const (
	// ProtocolVersion is the MCP version whose subscriptions/listen this
	// package implements.
	ProtocolVersion = "2026-07-28"
	// MethodListen is the method of the listen request.
	MethodListen = "subscriptions/listen"
	// MethodCancelled is the client's cancellation notification.
	MethodCancelled = "notifications/cancelled"
	// MetaSubscriptionID is the _meta key that tags every message of a
	// subscription with the listen request's id.
	MetaSubscriptionID = "io.modelcontextprotocol/subscriptionId"
	// MetaServerInfo is the _meta key of the completion result's server info.
	MetaServerInfo = "io.modelcontextprotocol/serverInfo"
	// MetaProtocolVersion is the request _meta key of the protocol version.
	MetaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	// MetaClientCapabilities is the request _meta key of the client's
	// capabilities.
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	// MetaClientInfo is the request _meta key of the client's implementation.
	MetaClientInfo = "io.modelcontextprotocol/clientInfo"
)

// SupportedProtocolVersions lists the protocol versions a listen request may
// name, newest first. Only ProtocolVersion has subscriptions/listen; the
// others are the earlier versions a server commonly also speaks, for
// the "supported" list of an unsupported-version error.
var SupportedProtocolVersions = []string{ProtocolVersion, "2025-11-25", "2025-06-18", "2025-03-26"}

// HasListen reports whether protocol version v has subscriptions/listen
// (true for 2026-07-28; false for the initialize-era versions before it).
func HasListen(v string) bool { return v == ProtocolVersion }

// IsLegacyVersion reports whether v is a well-formed protocol version older
// than 2026-07-28 (those versions have no subscriptions/listen).
func IsLegacyVersion(v string) bool {
	if len(v) != 10 || v[4] != '-' || v[7] != '-' {
		return false
	}
	for i := range len(v) {
		if i != 4 && i != 7 && (v[i] < '0' || v[i] > '9') {
			return false
		}
	}
	return v < ProtocolVersion
}

// ID is a JSON-RPC request id: a JSON string or integer, kept as its exact
// JSON token so that it is echoed with its type (a string stays a string, an
// integer an integer). The zero ID is invalid. IDs are comparable.
type ID struct {
	raw string
}

// StringID returns the id "s".
func StringID(s string) ID { return ID{raw: string(appendString(nil, s))} }

// IntID returns the integer id n.
func IntID(n int64) ID { return ID{raw: string(appendInt(nil, n))} }

// ParseID reads a JSON-RPC id token. It accepts a JSON string or an integer
// literal; null, fractions, exponents and other values are refused.
func ParseID(raw []byte) (ID, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ID{}, false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return ID{}, false
		}
		return StringID(s), true
	}
	if !validNumber(string(raw)) || bytes.ContainsAny(raw, ".eE") {
		return ID{}, false
	}
	return ID{raw: string(raw)}, true
}

// Valid reports whether id is set.
func (id ID) Valid() bool { return id.raw != "" }

// IsString reports whether the id is a JSON string.
func (id ID) IsString() bool { return len(id.raw) > 0 && id.raw[0] == '"' }

// Raw returns the id's JSON token, such as `"listen-1"` or `7`.
func (id ID) Raw() string { return id.raw }

// String returns the id for humans: the string's value, or the integer.
func (id ID) String() string {
	if id.IsString() {
		var s string
		_ = json.Unmarshal([]byte(id.raw), &s)
		return s
	}
	return id.raw
}

// MarshalJSON returns the id's JSON token (null for the zero ID).
func (id ID) MarshalJSON() ([]byte, error) {
	if id.raw == "" {
		return []byte("null"), nil
	}
	return []byte(id.raw), nil
}

// UnmarshalJSON reads a string or integer id.
func (id *ID) UnmarshalJSON(b []byte) error {
	v, ok := ParseID(b)
	if !ok {
		return NewError(CodeInvalidRequest, "JSON-RPC request id must be a string or an integer")
	}
	*id = v
	return nil
}

// Implementation names a server or client (name and version are required).
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Title   string `json:"title,omitempty"`
}

// Capabilities is a server's capabilities object as advertised in
// server/discover, decoded as JSON. Only the boolean true counts for
// tools.listChanged, prompts.listChanged, resources.listChanged and
// resources.subscribe. Extensions are advertised under "extensions".
type Capabilities map[string]any

// ParseCapabilities decodes a capabilities JSON object, for example the one
// an existing MCP server puts in its server/discover result.
func ParseCapabilities(raw []byte) (Capabilities, error) {
	var c Capabilities
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&c); err != nil {
		return nil, err
	}
	return c, nil
}

// Flag reports whether capabilities[group][flag] is the boolean true.
func (c Capabilities) Flag(group, flag string) bool {
	g, ok := c[group].(map[string]any)
	if !ok {
		return false
	}
	b, ok := g[flag].(bool)
	return ok && b
}

// Extension reports whether the extension id is advertised under
// capabilities.extensions.
func (c Capabilities) Extension(id string) bool {
	exts, ok := c["extensions"].(map[string]any)
	if !ok {
		return false
	}
	_, ok = exts[id]
	return ok
}

// Transport describes how a request arrived. The subscription keeps only
// Kind after open.
type Transport struct {
	// Kind is "streamable_http", "stdio", "direct", ...
	Kind string
	// RemoteAddr is the peer address, when known.
	RemoteAddr string
	// Header holds the HTTP request headers, when any.
	Header map[string][]string
}

// Request is a decoded subscriptions/listen request: everything Source.Open
// may look at. The subscription does not keep it after Open returns (see
// Subscription).
type Request struct {
	ID              ID
	ProtocolVersion string
	// Notifications is the requested filter, params.notifications.
	Notifications Filter
	// Params is the request's whole params object as received.
	Params json.RawMessage
	// Meta is the request's params._meta, decoded.
	Meta map[string]any
	// ClientInfo is _meta io.modelcontextprotocol/clientInfo, when given.
	ClientInfo *Implementation
	// ClientCapabilities is _meta io.modelcontextprotocol/clientCapabilities.
	ClientCapabilities map[string]any
	Transport          Transport
	// Auth is what the transport's authentication hook produced for this
	// request (a principal, a token's claims); nil when there is none.
	Auth any
}

// ClientExtension reports whether the client declared the extension id in
// its capabilities (clientCapabilities.extensions).
func (r *Request) ClientExtension(id string) bool {
	exts, ok := r.ClientCapabilities["extensions"].(map[string]any)
	if !ok {
		return false
	}
	_, ok = exts[id]
	return ok
}

// Exact -32602 messages of the listen params checks, in the order they run.
const (
	MsgNotificationsObject = "subscriptions/listen requires a notifications object"
	MsgNotificationsJSON   = "subscriptions/listen notifications must be a JSON object"
	MsgURIsList            = "subscriptions/listen resourceSubscriptions must be a list"
	MsgURIsTooMany         = "subscriptions/listen resourceSubscriptions accepts at most 1000 URIs"
	MsgURIsAbsolute        = "subscriptions/listen resourceSubscriptions must contain absolute URI strings"
	MsgMetaObject          = "subscriptions/listen requires a _meta object"
	MsgMetaProtocolVersion = "subscriptions/listen _meta requires io.modelcontextprotocol/protocolVersion as a string"
	MsgMetaCapabilities    = "subscriptions/listen _meta requires io.modelcontextprotocol/clientCapabilities as an object"
	MsgParamsObject        = "subscriptions/listen params must be an object"
)

// MaxResourceSubscriptions is the most URIs a listen request may name.
const MaxResourceSubscriptions = 1000

// ValidateNotifications runs the 2026-07-28 checks of params.notifications
// in order and returns nil or an *Error (-32602) with the exact message:
//
//  1. missing or not an object: "subscriptions/listen requires a notifications object"
//  2. a value that is not JSON: "subscriptions/listen notifications must be a JSON object"
//  3. a list-changed flag that is not a boolean: "subscriptions/listen <key> must be a boolean"
//  4. resourceSubscriptions not a list: "subscriptions/listen resourceSubscriptions must be a list"
//  5. more than 1,000 URIs: "subscriptions/listen resourceSubscriptions accepts at most 1000 URIs"
//  6. an element that is not an absolute URI string:
//     "subscriptions/listen resourceSubscriptions must contain absolute URI strings"
//
// Unknown keys (extension keys such as taskIds) pass; {} is valid. A nil
// Filter is "missing".
func ValidateNotifications(f Filter) error {
	if f == nil {
		return NewError(CodeInvalidParams, MsgNotificationsObject)
	}
	if !f.Valid() {
		return NewError(CodeInvalidParams, MsgNotificationsJSON)
	}
	for _, k := range [...]string{KeyToolsListChanged, KeyPromptsListChanged, KeyResourcesListChanged} {
		if v, ok := f[k]; ok {
			if _, isBool := v.(bool); !isBool {
				return NewError(CodeInvalidParams, "subscriptions/listen "+k+" must be a boolean")
			}
		}
	}
	v, ok := f[KeyResourceSubscriptions]
	if !ok {
		return nil
	}
	l, isList := asList(v)
	if !isList {
		return NewError(CodeInvalidParams, MsgURIsList)
	}
	if l.len() > MaxResourceSubscriptions {
		return NewError(CodeInvalidParams, MsgURIsTooMany)
	}
	for i := range l.len() {
		var s string
		if l.isS {
			s = l.strs[i]
		} else if str, ok := l.anys[i].(string); ok {
			s = str
		} else {
			return NewError(CodeInvalidParams, MsgURIsAbsolute)
		}
		if !AbsoluteURI(s) {
			return NewError(CodeInvalidParams, MsgURIsAbsolute)
		}
	}
	return nil
}

// envelope is the JSON-RPC request as first decoded.
type envelope struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// Message is one decoded JSON-RPC message, before it is known to be a
// listen request. Transports use it to route messages.
type Message struct {
	// ID is the request id; invalid for notifications.
	ID ID
	// HasID reports whether the message had an "id" member at all.
	HasID  bool
	Method string
	Params json.RawMessage
}

// ParseMessage decodes one JSON-RPC request or notification. It returns a
// -32700 *Error for malformed JSON and a -32600 *Error for a message that is
// not a valid request or notification (the returned Message then still holds
// the id when it could be read, so the error can echo it).
func ParseMessage(data []byte) (Message, error) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		if _, isSyntax := err.(*json.SyntaxError); isSyntax || !json.Valid(data) {
			return Message{}, NewError(CodeParseError, "Parse error")
		}
		return Message{}, NewError(CodeInvalidRequest, "Invalid request: expected a JSON-RPC object")
	}
	var m Message
	if len(env.ID) > 0 {
		m.HasID = true
		id, ok := ParseID(env.ID)
		if !ok {
			return m, NewError(CodeInvalidRequest, "Invalid request: id must be a string or an integer")
		}
		m.ID = id
	}
	if env.JSONRPC == nil || *env.JSONRPC != "2.0" {
		return m, NewError(CodeInvalidRequest, `Invalid request: jsonrpc must be "2.0"`)
	}
	if env.Method == nil || *env.Method == "" {
		return m, NewError(CodeInvalidRequest, "Invalid request: method must be a non-empty string")
	}
	m.Method = *env.Method
	m.Params = env.Params
	return m, nil
}

// listenParams is the decoded params of a listen request.
type listenParams struct {
	Meta          map[string]any `json:"_meta"`
	Notifications any            `json:"notifications"`
}

// ParseListenParams decodes and validates the params of a subscriptions/listen
// request into req (ProtocolVersion, Notifications, Params, Meta,
// ClientInfo, ClientCapabilities). Numbers decode as json.Number. Errors are
// -32602 *Errors with exact messages: the _meta checks first, then those of
// ValidateNotifications. It does not check the protocol version's value.
func ParseListenParams(params json.RawMessage, req *Request) error {
	trimmed := bytes.TrimSpace(params)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return NewError(CodeInvalidParams, MsgParamsObject)
	}
	var p listenParams
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field == "_meta" {
			return NewError(CodeInvalidParams, MsgMetaObject)
		}
		return NewError(CodeInvalidParams, MsgParamsObject).WithCause(err)
	}
	if p.Meta == nil {
		return NewError(CodeInvalidParams, MsgMetaObject)
	}
	pv, ok := p.Meta[MetaProtocolVersion].(string)
	if !ok {
		return NewError(CodeInvalidParams, MsgMetaProtocolVersion)
	}
	caps, ok := p.Meta[MetaClientCapabilities].(map[string]any)
	if !ok {
		return NewError(CodeInvalidParams, MsgMetaCapabilities)
	}
	notif, _ := p.Notifications.(map[string]any)
	if err := ValidateNotifications(Filter(notif)); err != nil {
		return err
	}
	req.ProtocolVersion = pv
	req.Notifications = Filter(notif)
	req.Params = params
	req.Meta = p.Meta
	req.ClientCapabilities = caps
	if ci, ok := p.Meta[MetaClientInfo].(map[string]any); ok {
		name, _ := ci["name"].(string)
		version, _ := ci["version"].(string)
		title, _ := ci["title"].(string)
		req.ClientInfo = &Implementation{Name: name, Version: version, Title: title}
	}
	return nil
}

// ParseListenRequest decodes a whole subscriptions/listen JSON-RPC request:
// ParseMessage, a method check (-32601 "Method not found: subscriptions/listen"
// for any other method), a required id (-32600), then ParseListenParams. On
// error the returned Request still carries the id when it could be read.
func ParseListenRequest(data []byte) (*Request, error) {
	m, err := ParseMessage(data)
	req := &Request{ID: m.ID}
	if err != nil {
		return req, err
	}
	if m.Method != MethodListen {
		return req, NewError(CodeMethodNotFound, "Method not found: "+m.Method)
	}
	if !m.HasID {
		return req, NewError(CodeInvalidRequest, "Invalid request: subscriptions/listen requires an id")
	}
	if err := ParseListenParams(m.Params, req); err != nil {
		return req, err
	}
	return req, nil
}
