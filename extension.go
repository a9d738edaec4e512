package listen

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/mcplisten/listen/internal/wiremsg"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// Extension is an MCP extension known to the server, such as the tasks
// extension (io.modelcontextprotocol/tasks).
type Extension interface {
	// ID is the extension's identifier, as advertised under
	// capabilities.extensions.
	ID() string
	// SupportsProtocol reports whether the extension works with the protocol
	// version.
	SupportsProtocol(version string) bool
}

// SubscriptionExtension is an Extension that adds filter keys to
// subscriptions/listen and shapes its own events. An extension implements
// both hooks or neither: registering one with only one of the two methods
// fails.
type SubscriptionExtension interface {
	Extension
	// SubscriptionFilter returns the part of the requested (raw, not
	// narrowed) filter this extension owns and will serve, such as
	// {"taskIds": [...]}. It must be a subset of requested. Return an *jsonrpc.Error
	// to refuse the listen with your own code (for example -32021 when the
	// client did not declare the extension).
	SubscriptionFilter(ctx context.Context, req *Request, requested Filter) (Filter, error)
	// ShapeSubscriptionEvent turns one of the extension's events into a
	// notification method and params. The method must be a notification
	// ("notifications/...") other than the core's own and the request-scoped
	// ones (progress, message, cancelled); anything else is the internal error
	// "Extension shaped an invalid subscription event". owned is the part of
	// the subscription's accepted filter the extension owns (treat it as
	// read-only); settings is a read-only view of the settings the client
	// declared for the extension (clientCapabilities.extensions[id]), which
	// the subscription keeps from its open on and shares with every event it
	// shapes: reading it copies nothing (see Settings). The subscription id
	// is added to params._meta afterwards (it cannot be overridden).
	ShapeSubscriptionEvent(ev Event, owned Filter, settings Settings) (method string, params map[string]any, err error)
}

// Settings is a read-only view of the settings a client declared for an
// extension (clientCapabilities.extensions[id]), as a subscription keeps
// them: one copy, made at open and bounded by Options.MaxSettingsBytes,
// shared by every event the subscription shapes. So an event costs its
// shaper the same with settings as without: nothing is copied unless the
// shaper asks for a copy (Value of an object or a list). Nothing it returns
// shares memory the subscription keeps. An extension reads the settings it
// defines by their keys.
//
// The zero Settings is empty (a client that declared the extension without
// settings, or with {}).
type Settings struct{ f Filter }

// Value returns a copy of the member key (a JSON value: nil, bool, string,
// json.Number, []any or map[string]any) and whether it is present. A
// string, a number or a boolean costs nothing; an object or a list is a
// deep copy, the caller's to keep or modify.
func (s Settings) Value(key string) (any, bool) {
	v, ok := s.f[key]
	if !ok {
		return nil, false
	}
	switch v.(type) {
	case []any, []string, map[string]any, Filter:
		return cloneValue(v), true
	}
	return v, true
}

type filterHook interface {
	SubscriptionFilter(ctx context.Context, req *Request, requested Filter) (Filter, error)
}

type shapeHook interface {
	ShapeSubscriptionEvent(ev Event, owned Filter, settings Settings) (method string, params map[string]any, err error)
}

// ExtensionRegistry holds the server's extensions in registration order.
// Build it once at startup; it is read-only afterwards and safe for
// concurrent use.
type ExtensionRegistry struct {
	exts []Extension
}

// NewExtensionRegistry registers exts in order. It fails for an empty or
// duplicate id, and for an extension that has only one of the two
// subscription hooks ("extension <id> must implement both SubscriptionFilter
// and ShapeSubscriptionEvent").
func NewExtensionRegistry(exts ...Extension) (*ExtensionRegistry, error) {
	r := &ExtensionRegistry{}
	for _, e := range exts {
		if e == nil || e.ID() == "" {
			return nil, errors.New("listen: extension with an empty id")
		}
		if slices.ContainsFunc(r.exts, func(o Extension) bool { return o.ID() == e.ID() }) {
			return nil, fmt.Errorf("listen: extension %s registered twice", e.ID())
		}
		_, f := e.(filterHook)
		_, s := e.(shapeHook)
		if f != s {
			return nil, fmt.Errorf("listen: extension %s must implement both SubscriptionFilter and ShapeSubscriptionEvent", e.ID())
		}
		r.exts = append(r.exts, e)
	}
	return r, nil
}

// lookup returns the registered extension with the id.
func (r *ExtensionRegistry) lookup(id string) (Extension, bool) {
	if r == nil {
		return nil, false
	}
	for _, e := range r.exts {
		if e.ID() == id {
			return e, true
		}
	}
	return nil, false
}

// subscriptionFilters asks every candidate extension (supports the version,
// advertised in caps, has the hooks; in registration order) for its part of
// the requested filter, and merges the contributions.
func (r *ExtensionRegistry) subscriptionFilters(ctx context.Context, req *Request, caps Capabilities) (Filter, map[string]Filter, error) {
	if r == nil {
		return nil, nil, nil
	}
	var merged Filter
	var contributions map[string]Filter
	for _, e := range r.exts {
		se, ok := e.(SubscriptionExtension)
		if !ok || !e.SupportsProtocol(req.ProtocolVersion) || !caps.hasExtension(e.ID()) {
			continue
		}
		contrib, err := callFilterHook(ctx, se, req)
		if err != nil {
			return nil, nil, err
		}
		if len(contrib) == 0 {
			continue
		}
		m, err := merge(merged, contrib)
		if err != nil {
			return nil, nil, jsonrpc.NewError(jsonrpc.CodeInternalError, wiremsg.ExtFiltersCollide).
				WithCause(fmt.Errorf("extension %s: %w", e.ID(), err))
		}
		merged = m
		if contributions == nil {
			contributions = make(map[string]Filter)
		}
		contributions[e.ID()] = contrib
	}
	return merged, contributions, nil
}

func callFilterHook(ctx context.Context, e SubscriptionExtension, req *Request) (f Filter, err error) {
	if p := catch("SubscriptionFilter", func() { f, err = e.SubscriptionFilter(ctx, req, req.Notifications) }); p != nil {
		p.Op = e.ID() + "." + p.Op
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, wiremsg.ExtCallbackPanicked).WithCause(p)
	}
	if err != nil {
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			return nil, we
		}
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, wiremsg.ExtInvalidFilter).WithCause(err)
	}
	if !f.valid() {
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, wiremsg.ExtNonJSONFilter)
	}
	if !f.subsetOf(req.Notifications) {
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, wiremsg.ExtUnrequested)
	}
	return f, nil
}

// shapeExtensionEvent shapes an extension event for sub, or reports a drop.
func (s *Subscription) shapeExtensionEvent(dst []byte, ev Event) ([]byte, bool, error) {
	if s.ext == nil {
		return dst, false, nil
	}
	owned, ok := s.ext.filters[ev.ExtensionID]
	if !ok || !ev.Selector.subsetOf(owned) {
		return dst, false, nil
	}
	settings, ok := s.ext.negotiated[ev.ExtensionID]
	if !ok {
		return dst, false, nil
	}
	ext, ok := s.opts.Extensions.lookup(ev.ExtensionID)
	if !ok || !ext.SupportsProtocol(spec.ProtocolVersion) {
		return dst, false, nil
	}
	sh, ok := ext.(shapeHook)
	if !ok {
		return dst, false, nil
	}
	method, params, err := callShapeHook(sh, ext.ID(), ev, owned, settings)
	if err != nil {
		return dst, false, err
	}
	if !extensionMethod(method) {
		return dst, false, jsonrpc.NewError(jsonrpc.CodeInternalError, wiremsg.ExtInvalidEvent).
			WithCause(fmt.Errorf("extension %s shaped method %q", ext.ID(), method))
	}
	if !objectValid(params) {
		return dst, false, jsonrpc.NewError(jsonrpc.CodeInternalError, wiremsg.ExtNonJSONEvent)
	}
	out, ok := s.appendMessage(dst, method, "", params, ev.Metadata)
	if !ok {
		return dst, false, jsonrpc.NewError(jsonrpc.CodeInternalError, wiremsg.ExtNonJSONEvent)
	}
	return out, true, nil
}

// reservedMethods are the notifications an extension may not put on a listen
// stream: the core's own (their shapes and filters belong to the core: the
// acknowledgement and each core kind's) and the request-scoped ones that
// never go on a listen stream.
var reservedMethods = func() map[string]bool {
	m := map[string]bool{
		spec.MethodAcknowledged:            true,
		spec.MethodCancelled:               true,
		"notifications/progress":           true,
		"notifications/message":            true,
		"notifications/initialized":        true,
		"notifications/roots/list_changed": true,
	}
	for _, row := range kinds {
		if row.method != "" {
			m[row.method] = true
		}
	}
	return m
}()

// extensionMethod reports whether an extension may send method on a listen
// stream: a notification ("notifications/...") that is not reserved.
func extensionMethod(method string) bool {
	const prefix = "notifications/"
	return len(method) > len(prefix) && method[:len(prefix)] == prefix && !reservedMethods[method]
}

func callShapeHook(sh shapeHook, id string, ev Event, owned, settings Filter) (method string, params map[string]any, err error) {
	if p := catch("ShapeSubscriptionEvent", func() { method, params, err = sh.ShapeSubscriptionEvent(ev, owned, Settings{settings}) }); p != nil {
		p.Op = id + "." + p.Op
		return "", nil, jsonrpc.NewError(jsonrpc.CodeInternalError, wiremsg.ExtCallbackPanicked).WithCause(p)
	}
	if err != nil {
		return "", nil, jsonrpc.AsError(err, wiremsg.ExtInvalidEvent)
	}
	return method, params, nil
}
