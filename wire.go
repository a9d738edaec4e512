package listen

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"bytes"

	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/internal/echo"
	"github.com/mcplisten/listen/internal/jsonobj"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// The wire shapes below follow MCP 2026-07-28 where earlier implementations
// were looser:
//   - the completion result always carries resultType "complete" and the
//     subscription id, and serverInfo only when the server named itself
//     (the schema requires name and version in Implementation);
//   - notifications never carry an "id" member;
//   - params is always present on core notifications, because every
//     notification on a listen stream must carry the subscription id.

const (
	prefixNotification = `{"jsonrpc":"2.0","method":`
	metaOpen           = `"_meta":{"` + spec.MetaSubscriptionID + `":`
)

// Acknowledgement returns notifications/subscriptions/acknowledged: the
// accepted filter verbatim (extension keys included) and a _meta holding only
// the subscription id. Write it before anything else.
func (s *Subscription) Acknowledgement() ([]byte, error) {
	n := 200 + len(s.id.Raw())
	for k := range kinds {
		if s.lists&(1<<k) != 0 {
			n += len(kinds[k].key) + 8
		}
	}
	if s.watch != nil {
		for _, u := range s.watch.list {
			n += len(u) + 3
		}
	}
	b := make([]byte, 0, n)
	b = append(b, prefixNotification...)
	b = appendString(b, spec.MethodAcknowledged)
	b = append(b, `,"params":{`...)
	b = append(b, metaOpen...)
	b = append(b, s.id.Raw()...)
	b = append(b, `},"notifications":`...)
	b, ok := s.appendAccepted(b)
	if !ok {
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, core.InvalidMessage)
	}
	return append(b, "}}"...), nil
}

// appendAccepted appends the accepted filter as a JSON object with sorted
// keys, as the accepted filter's MarshalJSON would, from its parts (no map is built
// for a listen without extension keys).
func (s *Subscription) appendAccepted(b []byte) ([]byte, bool) {
	var stack [8]string
	keys := stack[:0]
	for k := range kinds {
		if s.lists&(1<<k) != 0 {
			keys = append(keys, kinds[k].key)
		}
	}
	if s.watch != nil {
		keys = append(keys, spec.KeyResourceSubscriptions)
	}
	var ext Filter
	if s.ext != nil {
		if len(s.ext.filters) == 1 {
			for _, p := range s.ext.filters {
				ext = p
			}
		} else {
			ext = make(Filter)
			for _, p := range s.ext.filters {
				for k, v := range p {
					ext[k] = v
				}
			}
		}
		for k := range ext {
			keys = append(keys, k)
		}
	}
	return appendSorted(b, keys, func(b []byte, k string) ([]byte, bool) {
		switch v, isExt := ext[k]; {
		case isExt:
			return appendJSONValue(b, v, 1)
		case k == spec.KeyResourceSubscriptions:
			return appendJSONValue(b, s.watch.list, 1) // strings: always JSON
		}
		return append(b, "true"...), true
	})
}

// Notification shapes ev for this subscription. It returns (nil, nil) when
// the event is not selected by the accepted filter (a drop: write nothing and
// continue). An event that fails Validate is an error, not a drop: the caller
// must end the stream with Failure.
//
// A list change is selected when its filter key is true; a resource update
// when its URI is in resourceSubscriptions (or, with Options.SubResources,
// covered by one of them and readable: see SubResources; a CanRead or
// SubResources.Folders that panics is an error, as for an invalid event;
// CanRead gets context.Background() here); an
// extension event when its extension owns a part of the accepted filter that
// contains the event's selector and the extension was negotiated with this
// client (otherwise it is dropped). Params' "_meta" is merged under the
// event's Metadata, and the subscription id is set last, so an event can
// never forge it. The "uri" of a resource update always comes from the
// event.
func (s *Subscription) Notification(ev Event) ([]byte, error) {
	b, ok, err := s.appendNotification(context.Background(), nil, ev, false)
	if !ok {
		return nil, err
	}
	return b, nil
}

// appendNotification is Notification appending to dst, with the context
// CanRead gets for a covered sub-resource (Serve's). validated tells that
// ev was validated already: pulled from a stream whose events were
// validated as they were published (the hub's; see validatedStream). ok
// is false for a drop or an error; dst is then returned unchanged.
func (s *Subscription) appendNotification(ctx context.Context, dst []byte, ev Event, validated bool) (out []byte, ok bool, err error) {
	if !validated {
		if err := ev.Validate(); err != nil {
			return dst, false, err
		}
	}
	if ev.Scope != "" && (s.life == nil || !slices.Contains(s.life.scopes, ev.Scope)) {
		return dst, false, nil // addressed to another scope
	}
	switch {
	case ev.Kind == KindExtension:
		return s.shapeExtensionEvent(dst, ev)
	case !ev.Kind.core():
		return dst, false, errEventInvalid
	case kinds[ev.Kind].uri:
		deliver := s.life != nil && s.life.deliver // Access.Deliver
		var res *resourceMatch
		if s.watch != nil {
			res = s.watch.res
		}
		switch {
		case s.watches(ev.URI):
			ok = true
		case res == nil:
		case deliver:
			ok, err = res.covers(ev.URI)
		default:
			ok, err = res.deliver(ctx, ev.URI)
		}
		if ok && err == nil && deliver {
			ok, err = s.life.readable(ctx, ev.URI)
		}
		if err != nil {
			return dst, false, err
		}
	default:
		ok = s.lists&(1<<ev.Kind) != 0
	}
	if !ok {
		return dst, false, nil
	}
	uri := ""
	if kinds[ev.Kind].uri {
		uri = ev.URI
	}
	b, ok := s.appendMessage(dst, kinds[ev.Kind].method, uri, ev.Params, ev.Metadata)
	if !ok {
		return dst, false, jsonrpc.NewError(jsonrpc.CodeInternalError, core.InvalidMessage)
	}
	return b, true, nil
}

// watches reports whether uri is in the accepted resourceSubscriptions,
// byte for byte (the sub-resources of Options.SubResources are resourceMatch's).
func (s *Subscription) watches(uri string) bool {
	w := s.watch
	switch {
	case w == nil:
		return false
	case w.order != nil:
		_, ok := slices.BinarySearchFunc(w.order, uri, func(i uint16, uri string) int { return strings.Compare(w.list[i], uri) })
		return ok
	}
	return slices.Contains(w.list, uri)
}

// appendMessage is the encoder of every notification of the stream: it
// writes method with params whose "_meta" is the merge of params["_meta"]
// (if an object), metadata and the subscription id (last, so that it cannot
// be forged), and whose "uri", when uri is set, is uri. Members are sorted.
// ok is false (dst returned unchanged) when a value is not JSON.
func (s *Subscription) appendMessage(dst []byte, method, uri string, params, metadata map[string]any) ([]byte, bool) {
	if len(params) == 0 && len(metadata) == 0 {
		// No map work, one growth of dst at most.
		b := slices.Grow(dst, len(prefixNotification)+len(method)+len(metaOpen)+len(s.id.Raw())+len(uri)+48)
		b = append(b, prefixNotification...)
		b = appendString(b, method)
		b = append(b, `,"params":{`...)
		b = append(b, metaOpen...)
		b = append(b, s.id.Raw()...)
		b = append(b, '}')
		if uri != "" {
			b = append(b, `,"uri":`...)
			b = appendString(b, uri)
		}
		return append(b, "}}"...), true
	}
	meta := make(map[string]any, len(metadata)+2)
	switch pm := params["_meta"].(type) {
	case map[string]any:
		for k, v := range pm {
			meta[k] = v
		}
	case Filter:
		for k, v := range pm {
			meta[k] = v
		}
	case json.RawMessage: // pre-encoded: merged when it is an object
		var m map[string]json.RawMessage
		if json.Unmarshal(pm, &m) == nil {
			for k, v := range m {
				meta[k] = v
			}
		}
	}
	for k, v := range metadata {
		meta[k] = v
	}
	meta[spec.MetaSubscriptionID] = json.RawMessage(s.id.Raw())

	keys := make([]string, 0, len(params)+2)
	for k := range params {
		if k != "_meta" && !(uri != "" && k == "uri") {
			keys = append(keys, k)
		}
	}
	keys = append(keys, "_meta")
	if uri != "" {
		keys = append(keys, "uri")
	}
	slices.Sort(keys)

	b := append(dst, prefixNotification...)
	b = appendString(b, method)
	b = append(b, `,"params":{`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		var v any
		switch {
		case k == "_meta":
			v = meta
		case k == "uri" && uri != "":
			v = uri
		default:
			v = params[k]
		}
		var ok bool
		if b, ok = appendJSONValue(b, v, 1); !ok {
			return dst, false
		}
	}
	return append(b, "}}"...), true
}

// Completion returns the graceful end of the stream: the JSON-RPC result of
// the listen request, with resultType "complete", the subscription id and
// (when Options.ServerInfo named the server) the server info in _meta.
func (s *Subscription) Completion() []byte { return s.completion("") }

// completion returns the completion result, with reason (an early
// ending's class) in _meta under MetaEndReason when it is not empty.
func (s *Subscription) completion(reason string) []byte { return s.completionHint(reason, -1) }

// shutdownCompletion is the completion result of a drain ended with cause
// (ErrShutdown, with the Server's retry hint if it carries one).
func (s *Subscription) shutdownCompletion(cause error) []byte {
	var se *shutdownError
	if errors.As(cause, &se) {
		return s.completionHint("", se.retry)
	}
	return s.Completion()
}

// completionHint is completion with a retry hint in _meta (none when retry
// is negative).
func (s *Subscription) completionHint(reason string, retry time.Duration) []byte {
	info := s.opts.ServerInfo
	b := make([]byte, 0, 200+2*len(s.id.Raw())+len(info.Name)+len(info.Version)+len(reason))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, s.id.Raw()...)
	b = append(b, `,"result":{"_meta":{`...)
	if reason != "" { // keys in order: io.github... sorts first
		b = append(b, `"`+spec.MetaEndReason+`":"`...)
		b = append(b, reason...) // a class: plain ASCII
		b = append(b, `",`...)
	}
	if retry >= 0 {
		b = append(b, `"`+spec.MetaRetryAfterMs+`":`...)
		b = strconv.AppendInt(b, retry.Milliseconds(), 10)
		b = append(b, ',')
	}
	if info.Name != "" {
		b = appendString(b, spec.MetaServerInfo)
		b = append(b, `:{"name":`...)
		b = appendString(b, info.Name)
		if info.Title != "" {
			b = append(b, `,"title":`...)
			b = appendString(b, info.Title)
		}
		b = append(b, `,"version":`...)
		b = appendString(b, info.Version)
		b = append(b, "},"...)
	}
	b = appendString(b, spec.MetaSubscriptionID)
	b = append(b, ':')
	b = append(b, s.id.Raw()...)
	return append(b, `},"resultType":"complete"}}`...)
}

// Terminal returns the terminal message for the end of a stream driven by
// hand (an Outcome's Err, or the error of a Notification that failed), and
// the reason to close the subscription with once it is written:
//
//   - ErrClosed or io.EOF (the source's graceful end): the completion
//     result, ErrComplete;
//   - an early ending (ErrRevoked, ErrExpired, ErrLifetime, ErrFellBehind,
//     or an error wrapping one): its ending in the form of
//     Options.EndWithError, err itself;
//   - ErrShutdown: the completion result, err itself;
//   - anything else: the failure, Failed(err) (err itself when it already
//     matches ErrFailed).
func (s *Subscription) Terminal(err error) (msg []byte, reason error) {
	switch {
	case errors.Is(err, ErrFailed):
		return s.Failure(), err
	case endingOf(err) != nil:
		s.ending.CompareAndSwap(nil, &err) // a later End finds the stream ending
		return s.endingMessage(endingOf(err)), err
	case errors.Is(err, ErrShutdown):
		s.ending.CompareAndSwap(nil, &err)
		return s.shutdownCompletion(err), err
	case errors.Is(err, ErrClosed), errors.Is(err, io.EOF):
		return s.Completion(), ErrComplete
	}
	return s.Failure(), Failed(err)
}

// Failure returns the terminal JSON-RPC error of a failed stream, always
// -32603 "Subscription source failed" with no data: why the stream failed is
// the server's business (it is the Failed close reason) and never sent.
func (s *Subscription) Failure() []byte {
	return jsonrpc.ErrorResponse(s.id, jsonrpc.NewError(jsonrpc.CodeInternalError, core.SourceFailed))
}

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
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, core.NotificationsObject)
	}
	if !f.valid() {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, core.NotificationsJSON)
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
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, core.URIsList)
	}
	if l.len() > spec.MaxResourceSubscriptions {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, core.URIsTooMany)
	}
	for i := range l.len() {
		var s string
		if l.isS {
			s = l.strs[i]
		} else if str, ok := l.anys[i].(string); ok {
			s = str
		} else {
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams, core.URIsAbsolute)
		}
		if !isAbsoluteURI(s) {
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams, core.URIsAbsolute)
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
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, core.ParamsObject)
	}
	// One pass checks and decodes the whole object (as json.Valid, then
	// encoding/json with UseNumber, would); the member walks below only
	// find the raw text of _meta and notifications again.
	decoded, ok := jsonobj.Decode(trimmed)
	if !ok {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, core.ParamsObject)
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
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, core.ParamsDuplicate)
	}
	// No name is repeated: the decoded members are those of the raw text.
	if !isObject {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, core.MetaObject)
	}
	pv, ok := meta[spec.MetaProtocolVersion].(string)
	if !ok {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, core.MetaProtocolVersion)
	}
	caps, ok := meta[spec.MetaClientCapabilities].(map[string]any)
	if !ok {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, core.MetaCapabilities)
	}
	if err := validateNotifications(Filter(notif)); err != nil {
		return err
	}
	if !exactURIs(rawURIs) {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, core.URIsUnicode)
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
