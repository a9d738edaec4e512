package listen

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/mcplisten/listen/internal/echo"
	"github.com/mcplisten/listen/internal/jsonobj"
	"github.com/mcplisten/listen/internal/wiremsg"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// Implementation names a server or client (name and version are required).
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Title   string `json:"title,omitempty"`
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
	ID              jsonrpc.ID
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
	// Expiry is when the credential the listen was opened with expires
	// (a token's exp), set by the transport's authentication; zero when it
	// does not. The stream ends then, with the early ending ErrExpired
	// (see Options.EndWithError), so that the client opens a new listen with a fresh
	// credential.
	Expiry time.Time
	// SubResources is the server's sub-resource rule for this listen
	// (Options.SubResources), set by Open before it calls Source.Open: nil
	// when its URIs cover only themselves. A source that selects resource
	// updates itself applies it, as the hub does.
	SubResources *SubResources
	// Scopes are the scopes this listen belongs to (Options.Scopes), set by
	// Open before it calls Source.Open: an event with a Scope reaches the
	// listen only when it is one of them. A source that selects events
	// itself applies them, as the hub does (it indexes the listen under
	// each).
	Scopes []string
}

// clientExtension reports whether the client declared the extension id in
// its capabilities (clientCapabilities.extensions).
func (r *Request) clientExtension(id string) bool {
	exts, ok := r.ClientCapabilities["extensions"].(map[string]any)
	if !ok {
		return false
	}
	_, ok = exts[id]
	return ok
}

// validateNotifications runs the 2026-07-28 checks of params.notifications
// in order and returns nil or an *jsonrpc.Error (-32602) with the exact message:
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
func validateNotifications(f Filter) error {
	if f == nil {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, wiremsg.NotificationsObject)
	}
	if !f.valid() {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, wiremsg.NotificationsJSON)
	}
	for k := range kinds {
		if key := kinds[k].key; Kind(k).listChange() {
			if v, ok := f[key]; ok {
				if _, isBool := v.(bool); !isBool {
					return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "subscriptions/listen "+key+" must be a boolean")
				}
			}
		}
	}
	v, ok := f[spec.KeyResourceSubscriptions]
	if !ok {
		return nil
	}
	l, isList := asList(v)
	if !isList {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, wiremsg.URIsList)
	}
	if l.len() > spec.MaxResourceSubscriptions {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, wiremsg.URIsTooMany)
	}
	for i := range l.len() {
		var s string
		if l.isS {
			s = l.strs[i]
		} else if str, ok := l.anys[i].(string); ok {
			s = str
		} else {
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams, wiremsg.URIsAbsolute)
		}
		if !isAbsoluteURI(s) {
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams, wiremsg.URIsAbsolute)
		}
	}
	return nil
}

// parseParams decodes and validates the params of a subscriptions/listen
// request into req (ProtocolVersion, Notifications, Params, Meta,
// ClientInfo, ClientCapabilities). Numbers decode as json.Number. Errors are
// -32602 *Errors with exact messages, in this order:
//
//  1. params not a JSON object: "subscriptions/listen params must be an object";
//  2. a member name repeated in params, params._meta or
//     params.notifications: "subscriptions/listen params, _meta and notifications must not repeat a member name";
//  3. the _meta checks (a _meta object, its protocolVersion string, its
//     clientCapabilities object);
//  4. those of validateNotifications;
//  5. a resource URI whose JSON string holds a lone surrogate escape
//     ("\ud800") or invalid UTF-8: "subscriptions/listen resourceSubscriptions must not contain lone surrogates or invalid UTF-8".
//
// Member names are matched exactly ("_META" is not "_meta"), as
// jsonrpc.ParseMessage matches them. A URI is kept exactly as sent, or
// refused: encoding/json would decode every lone surrogate, and invalid
// UTF-8, to U+FFFD, so that "file:///\ud800", "file:///\udfff" and
// "file:///\ufffd" would be one URI. It does not check the protocol
// version's value.
func parseParams(params json.RawMessage, req *Request) error {
	trimmed := bytes.TrimSpace(params)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, wiremsg.ParamsObject)
	}
	// One pass checks and decodes the whole object (as json.Valid, then
	// encoding/json with UseNumber, would); the member walks below only
	// find the raw text of _meta and notifications again.
	decoded, ok := jsonobj.Decode(trimmed)
	if !ok {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, wiremsg.ParamsObject)
	}
	values, _ := decoded.(map[string]any)
	nTop, rawMeta, rawNotif := countFind(trimmed, "_meta", "notifications")
	nMeta, _, _ := countFind(rawMeta, "", "")
	nNotif, rawURIs, _ := countFind(rawNotif, spec.KeyResourceSubscriptions, "")
	meta, isObject := values["_meta"].(map[string]any)
	notif, _ := values["notifications"].(map[string]any)
	// A decoded object keeps one member per name (the last): it has fewer
	// than the raw text exactly when a name is repeated.
	if len(values) != nTop || len(meta) != nMeta || len(notif) != nNotif {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, wiremsg.ParamsDuplicate)
	}
	// No name is repeated: the decoded members are those of the raw text.
	if !isObject {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, wiremsg.MetaObject)
	}
	pv, ok := meta[spec.MetaProtocolVersion].(string)
	if !ok {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, wiremsg.MetaProtocolVersion)
	}
	caps, ok := meta[spec.MetaClientCapabilities].(map[string]any)
	if !ok {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, wiremsg.MetaCapabilities)
	}
	if err := validateNotifications(Filter(notif)); err != nil {
		return err
	}
	if !exactURIs(rawURIs) {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, wiremsg.URIsUnicode)
	}
	req.ProtocolVersion = pv
	req.Notifications = Filter(notif)
	req.Params = params
	req.Meta = meta
	req.ClientCapabilities = caps
	if ci, ok := meta[spec.MetaClientInfo].(map[string]any); ok {
		name, _ := ci["name"].(string)
		version, _ := ci["version"].(string)
		title, _ := ci["title"].(string)
		req.ClientInfo = &Implementation{Name: name, Version: version, Title: title}
	}
	return nil
}

// countFind walks the members of the JSON object obj (nothing if obj is not
// one) without keeping them: it returns how many there are and the raw
// values of the last members named a and b ("" names none), so that an
// object of many members costs no slice of them.
func countFind(obj []byte, a, b string) (n int, va, vb []byte) {
	if len(obj) == 0 || obj[0] != '{' {
		return 0, nil, nil
	}
	jsonobj.Each(obj, func(m jsonobj.Member) bool {
		n++
		switch m.Which(a, b) {
		case 0:
			va = m.Value
		case 1:
			vb = m.Value
		}
		return true
	})
	return n, va, vb
}

// exactURIs reports whether every string of rawURIs, the JSON text of
// notifications.resourceSubscriptions, decodes to exactly the text it
// spells (see jsonobj.ExactString).
func exactURIs(rawURIs []byte) bool {
	if jsonobj.ExactStrings(rawURIs) {
		return true
	}
	exact := true
	jsonobj.Elements(rawURIs, func(elem []byte) bool {
		if elem[0] == '"' && !jsonobj.ExactString(elem) {
			exact = false
		}
		return exact
	})
	return exact
}

// ParseRequest decodes a whole subscriptions/listen JSON-RPC request:
// jsonrpc.ParseMessage, a method check (-32601 "Method not found: subscriptions/listen"
// for any other method), a required id (-32600), then the params checks. On
// error the returned Request still carries the id when it could be read.
// It does not bound the id: Open does (Options.MaxIDBytes), and clears it
// when it refuses it.
func ParseRequest(data []byte) (*Request, error) {
	m, err := jsonrpc.ParseMessageMaxID(data, len(data)) // no token is longer than data
	req := &Request{ID: m.ID}
	if err != nil {
		return req, err
	}
	if m.Method != spec.MethodListen {
		return req, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found: "+echo.Cut(m.Method))
	}
	if !m.HasID {
		return req, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "Invalid request: subscriptions/listen requires an id")
	}
	if err := parseParams(m.Params, req); err != nil {
		return req, err
	}
	return req, nil
}
