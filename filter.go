package listen

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"

	"context"
	"errors"
	"fmt"

	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/internal/jsonobj"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// Filter is a subscriptions/listen notification filter: a JSON object such as
//
//	{"toolsListChanged": true, "resourceSubscriptions": ["file:///a"], "taskIds": ["t1"]}
//
// It holds the four core keys and any extension key. Values must be JSON
// values, which in Go are: nil, bool, string, json.Number, the integer types
// (JSON integers), float32 and float64 (JSON floats; finite only), []any,
// []string, map[string]any and Filter. Filters decoded by this package keep
// numbers as json.Number, so 1 and 1.0 stay distinct.
//
// Comparison is exact on JSON type and value: the integer 1 is not the float
// 1.0 (nor is json.Number("1") equal to float64(1)). One filter is a subset
// of another when each of its keys is in the other with a value that is a
// subset: a list's elements are all in the other's list (order and
// duplicates ignored), an object is a subset key by key, anything else is
// equal; a key absent from the other fails, even when its value is false.
type Filter map[string]any

// strings returns the string elements of the list under key, or nil. Elements
// that are not strings are skipped.
func (f Filter) strings(key string) []string {
	switch v := f[key].(type) {
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// valid reports whether f is a JSON object: every value is a JSON value (see
// Filter). A nil Filter is valid (the empty object).
func (f Filter) valid() bool {
	for _, v := range f {
		if !validJSON(v, 0) {
			return false
		}
	}
	return true
}

// maxDepth bounds recursion over nested values.
const maxDepth = 64

func validJSON(v any, depth int) bool { return validValue(v, depth, false) }

// validEventJSON is validJSON that also accepts pre-encoded JSON
// (json.RawMessage holding valid JSON), at any depth, for event params,
// metadata and extension params. Filters do not accept it: they are compared
// by value.
func validEventJSON(v any, depth int) bool { return validValue(v, depth, true) }

func validValue(v any, depth int, raw bool) bool {
	if depth > maxDepth {
		return false
	}
	switch x := v.(type) {
	case nil, bool, string,
		int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return true
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case float32:
		return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0)
	case json.Number:
		return validNumber(string(x))
	case json.RawMessage:
		return raw && json.Valid(x)
	case []string:
		return true
	case []any:
		for _, e := range x {
			if !validValue(e, depth+1, raw) {
				return false
			}
		}
		return true
	case map[string]any:
		return validObject(x, depth, raw)
	case Filter:
		return validObject(x, depth, raw)
	}
	return false
}

func validObject(m map[string]any, depth int, raw bool) bool {
	for _, e := range m {
		if !validValue(e, depth+1, raw) {
			return false
		}
	}
	return true
}

// subsetOf reports whether f is a subset of supported: f is valid, and every
// key of f is in supported with a value that is a subset of the supported
// value. Two lists: every element of f's list is in supported's list (set
// containment, exact comparison, order and duplicates ignored). Two objects:
// recursive subsetOf. Anything else: exact equality. The empty filter is a
// subset of anything; a key of f absent from supported fails, even when its
// value is false.
//
// The check is linear in the size of list values: lists are compared through
// a hash set keyed on exact JSON type and value.
func (f Filter) subsetOf(supported Filter) bool {
	if !f.valid() {
		return false
	}
	return objectSubset(f, supported)
}

func objectSubset(a, b map[string]any) bool {
	for k, av := range a {
		bv, ok := b[k]
		if !ok || !valueSubset(av, bv) {
			return false
		}
	}
	return true
}

// valueSubset is the value rule of subsetOf for already validated a.
func valueSubset(a, b any) bool {
	if as, ok := asList(a); ok {
		bs, ok := asList(b)
		if !ok {
			return false
		}
		return listSubset(as, bs)
	}
	if am, ok := asObject(a); ok {
		bm, ok := asObject(b)
		if !ok {
			return false
		}
		return objectSubset(am, bm)
	}
	if _, ok := asList(b); ok {
		return false
	}
	if _, ok := asObject(b); ok {
		return false
	}
	ka, ok := keyOf(a)
	if !ok {
		return false
	}
	kb, ok := keyOf(b)
	return ok && ka == kb
}

// list is a JSON list in one of its two Go forms.
type list struct {
	strs []string
	anys []any
	isS  bool
}

func (l list) len() int {
	if l.isS {
		return len(l.strs)
	}
	return len(l.anys)
}

func (l list) key(i int) (vkey, bool) {
	if l.isS {
		return vkey{kind: kString, s: l.strs[i]}, true
	}
	return keyOf(l.anys[i])
}

func asList(v any) (list, bool) {
	switch x := v.(type) {
	case []string:
		return list{strs: x, isS: true}, true
	case []any:
		return list{anys: x}, true
	}
	return list{}, false
}

func asObject(v any) (map[string]any, bool) {
	switch x := v.(type) {
	case map[string]any:
		return x, true
	case Filter:
		return x, true
	}
	return nil, false
}

// smallList is the size under which lists are compared pairwise instead of
// through a hash set.
const smallList = 8

func listSubset(a, b list) bool {
	na, nb := a.len(), b.len()
	if na == 0 {
		return true
	}
	if nb == 0 {
		return false
	}
	if na == nb && a.isS == b.isS && (a.isS && &a.strs[0] == &b.strs[0] || !a.isS && &a.anys[0] == &b.anys[0]) {
		return true // the same list (a source that accepts what it was offered)
	}
	if a.isS && b.isS {
		if na <= smallList && nb <= smallList {
			for _, s := range a.strs {
				if !slices.Contains(b.strs, s) {
					return false
				}
			}
			return true
		}
		set := make(map[string]struct{}, nb)
		for _, s := range b.strs {
			set[s] = struct{}{}
		}
		for _, s := range a.strs {
			if _, ok := set[s]; !ok {
				return false
			}
		}
		return true
	}
	if na <= smallList && nb <= smallList {
		for i := range na {
			ka, ok := a.key(i)
			if !ok {
				return false
			}
			found := false
			for j := range nb {
				if kb, ok := b.key(j); ok && kb == ka {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	set := make(map[vkey]struct{}, nb)
	for j := range nb {
		if kb, ok := b.key(j); ok {
			set[kb] = struct{}{}
		}
	}
	for i := range na {
		ka, ok := a.key(i)
		if !ok {
			return false
		}
		if _, ok := set[ka]; !ok {
			return false
		}
	}
	return true
}

// JSON value kinds of a vkey.
const (
	kNull byte = iota + 1
	kFalse
	kTrue
	kInt
	kFloat
	kString
	kList
	kObject
)

// vkey identifies a JSON value by exact type and value. Strings use s as is;
// numbers a canonical text; lists and objects a canonical encoding.
type vkey struct {
	kind byte
	s    string
}

func keyOf(v any) (vkey, bool) {
	switch x := v.(type) {
	case nil:
		return vkey{kind: kNull}, true
	case bool:
		if x {
			return vkey{kind: kTrue}, true
		}
		return vkey{kind: kFalse}, true
	case string:
		return vkey{kind: kString, s: x}, true
	case int:
		return vkey{kind: kInt, s: strconv.FormatInt(int64(x), 10)}, true
	case int8:
		return vkey{kind: kInt, s: strconv.FormatInt(int64(x), 10)}, true
	case int16:
		return vkey{kind: kInt, s: strconv.FormatInt(int64(x), 10)}, true
	case int32:
		return vkey{kind: kInt, s: strconv.FormatInt(int64(x), 10)}, true
	case int64:
		return vkey{kind: kInt, s: strconv.FormatInt(x, 10)}, true
	case uint:
		return vkey{kind: kInt, s: strconv.FormatUint(uint64(x), 10)}, true
	case uint8:
		return vkey{kind: kInt, s: strconv.FormatUint(uint64(x), 10)}, true
	case uint16:
		return vkey{kind: kInt, s: strconv.FormatUint(uint64(x), 10)}, true
	case uint32:
		return vkey{kind: kInt, s: strconv.FormatUint(uint64(x), 10)}, true
	case uint64:
		return vkey{kind: kInt, s: strconv.FormatUint(x, 10)}, true
	case float64:
		return floatKey(x)
	case float32:
		return floatKey(float64(x))
	case json.Number:
		return numberKey(string(x))
	case []string, []any, map[string]any, Filter:
		b, ok := appendCanonical(nil, x, 0)
		if !ok {
			return vkey{}, false
		}
		kind := kList
		if _, isObj := asObject(x); isObj {
			kind = kObject
		}
		return vkey{kind: kind, s: string(b)}, true
	}
	return vkey{}, false
}

func floatKey(f float64) (vkey, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return vkey{}, false
	}
	if f == 0 {
		f = 0 // fold -0 into 0
	}
	return vkey{kind: kFloat, s: strconv.FormatFloat(f, 'g', -1, 64)}, true
}

// numberKey keys a JSON number literal: integer literals by their text (with
// -0 folded into 0), others by their float64 value.
func numberKey(s string) (vkey, bool) {
	if !validNumber(s) {
		return vkey{}, false
	}
	if !strings.ContainsAny(s, ".eE") {
		if s == "-0" {
			s = "0"
		}
		return vkey{kind: kInt, s: s}, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil { // out of range: keep the literal
		return vkey{kind: kFloat, s: s}, true
	}
	return floatKey(f)
}

// appendCanonical appends a canonical encoding of v (sorted object keys,
// type-tagged scalars) used as a hash key for composite values.
func appendCanonical(b []byte, v any, depth int) ([]byte, bool) {
	if depth > maxDepth {
		return b, false
	}
	if l, ok := asList(v); ok {
		b = append(b, '[')
		for i := range l.len() {
			if l.isS {
				b = appendString(append(b, 's'), l.strs[i])
			} else {
				var ok bool
				if b, ok = appendCanonical(b, l.anys[i], depth+1); !ok {
					return b, false
				}
			}
			b = append(b, ',')
		}
		return append(b, ']'), true
	}
	if m, ok := asObject(v); ok {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for _, k := range keys {
			b = appendString(b, k)
			b = append(b, ':')
			var ok bool
			if b, ok = appendCanonical(b, m[k], depth+1); !ok {
				return b, false
			}
			b = append(b, ',')
		}
		return append(b, '}'), true
	}
	k, ok := keyOf(v)
	if !ok {
		return b, false
	}
	b = append(b, '0'+k.kind)
	if k.kind == kString {
		return appendString(b, k.s), true
	}
	return append(append(b, k.s...), ';'), true
}

// collisionError is returned by merge when both filters hold some keys.
type collisionError struct {
	// Keys are the colliding keys, sorted.
	Keys []string
}

func (e *collisionError) Error() string {
	return "listen: filter keys collide: " + strings.Join(e.Keys, ", ")
}

// merge returns the union of left and right. If any key is in both, it
// returns a *collisionError carrying the sorted colliding keys.
func merge(left, right Filter) (Filter, error) {
	var collide []string
	for k := range right {
		if _, ok := left[k]; ok {
			collide = append(collide, k)
		}
	}
	if len(collide) > 0 {
		slices.Sort(collide)
		return nil, &collisionError{Keys: collide}
	}
	out := make(Filter, len(left)+len(right))
	for k, v := range left {
		out[k] = v
	}
	for k, v := range right {
		out[k] = v
	}
	return out, nil
}

// project keeps the entries of accepted whose key is in contribution and
// whose value passes the value rule of subsetOf against the contribution's
// value. Entries that fail are dropped whole, not intersected:
// project({"a":["x"],"b":true}, {"a":["x","z"]}) is {"a":["x"]}.
func project(accepted, contribution Filter) Filter {
	out := Filter{}
	for k, v := range accepted {
		cv, ok := contribution[k]
		if ok && validJSON(v, 0) && valueSubset(v, cv) {
			out[k] = v
		}
	}
	return out
}

// clone returns a deep copy of f whose strings do not share memory with f's,
// so that keeping the copy does not keep a decoded request body alive.
// Non-JSON values are copied as is.
func (f Filter) clone() Filter {
	if f == nil {
		return nil
	}
	out := make(Filter, len(f))
	for k, v := range f {
		out[strings.Clone(k)] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case string:
		return strings.Clone(x)
	case json.Number:
		return json.Number(strings.Clone(string(x)))
	case []string:
		out := make([]string, len(x))
		for i, s := range x {
			out[i] = strings.Clone(s)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[strings.Clone(k)] = cloneValue(e)
		}
		return out
	case Filter:
		return x.clone()
	}
	return v
}

// MarshalJSON encodes f as a JSON object with sorted keys. A nil Filter is
// {}; nil lists are []. It fails if f is not valid (see Filter).
func (f Filter) MarshalJSON() ([]byte, error) {
	b, ok := appendJSONValue(nil, map[string]any(f), 0)
	if !ok {
		return nil, &json.UnsupportedValueError{Str: "listen: filter holds a non-JSON value"}
	}
	return b, nil
}

// appendJSONValue appends the JSON encoding of a JSON value (see Filter).
// Objects have sorted keys; nil lists and objects encode as [] and {}.
func appendJSONValue(b []byte, v any, depth int) ([]byte, bool) {
	if depth > maxDepth {
		return b, false
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, x), true
	case string:
		return appendString(b, x), true
	case json.Number:
		if !validNumber(string(x)) {
			return b, false
		}
		return append(b, x...), true
	case int:
		return strconv.AppendInt(b, int64(x), 10), true
	case int8:
		return strconv.AppendInt(b, int64(x), 10), true
	case int16:
		return strconv.AppendInt(b, int64(x), 10), true
	case int32:
		return strconv.AppendInt(b, int64(x), 10), true
	case int64:
		return strconv.AppendInt(b, x, 10), true
	case uint:
		return strconv.AppendUint(b, uint64(x), 10), true
	case uint8:
		return strconv.AppendUint(b, uint64(x), 10), true
	case uint16:
		return strconv.AppendUint(b, uint64(x), 10), true
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10), true
	case uint64:
		return strconv.AppendUint(b, x, 10), true
	case float64:
		return appendFloat(b, x, 64)
	case float32:
		return appendFloat(b, float64(x), 32)
	case []string:
		b = append(b, '[')
		for i, s := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, s)
		}
		return append(b, ']'), true
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendJSONValue(b, e, depth+1); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case Filter:
		return appendObject(b, x, depth)
	case map[string]any:
		return appendObject(b, x, depth)
	case json.RawMessage:
		if !json.Valid(x) {
			return b, false
		}
		return append(b, x...), true
	}
	return b, false
}

func appendObject(b []byte, m map[string]any, depth int) ([]byte, bool) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return appendSorted(b, keys, func(b []byte, k string) ([]byte, bool) {
		return appendJSONValue(b, m[k], depth+1)
	})
}

// appendSorted appends the JSON object whose keys are keys, which it sorts,
// each value appended by value; false if a value is not JSON.
func appendSorted(b []byte, keys []string, value func(b []byte, key string) ([]byte, bool)) ([]byte, bool) {
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		var ok bool
		if b, ok = value(b, k); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

func appendFloat(b []byte, f float64, bits int) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	// Like encoding/json: plain notation for ordinary magnitudes, and always
	// a float literal so that the JSON type survives a round trip.
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if !strings.ContainsAny(string(b[start:]), ".eE") {
		b = append(b, ".0"...)
	}
	return b, true
}

func appendString(b []byte, s string) []byte { return jsonobj.AppendString(b, s) }

func validNumber(s string) bool { return jsonobj.ValidNumber(s) }

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
			return nil, nil, jsonrpc.NewError(jsonrpc.CodeInternalError, core.ExtFiltersCollide).
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
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, core.ExtCallbackPanicked).WithCause(p)
	}
	if err != nil {
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			return nil, we
		}
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, core.ExtInvalidFilter).WithCause(err)
	}
	if !f.valid() {
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, core.ExtNonJSONFilter)
	}
	if !f.subsetOf(req.Notifications) {
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, core.ExtUnrequested)
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
		return dst, false, jsonrpc.NewError(jsonrpc.CodeInternalError, core.ExtInvalidEvent).
			WithCause(fmt.Errorf("extension %s shaped method %q", ext.ID(), method))
	}
	if !objectValid(params) {
		return dst, false, jsonrpc.NewError(jsonrpc.CodeInternalError, core.ExtNonJSONEvent)
	}
	out, ok := s.appendMessage(dst, method, "", params, ev.Metadata)
	if !ok {
		return dst, false, jsonrpc.NewError(jsonrpc.CodeInternalError, core.ExtNonJSONEvent)
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
		return "", nil, jsonrpc.NewError(jsonrpc.CodeInternalError, core.ExtCallbackPanicked).WithCause(p)
	}
	if err != nil {
		return "", nil, jsonrpc.AsError(err, core.ExtInvalidEvent)
	}
	return method, params, nil
}

// The module's other packages reach these through internal/core.
func init() {
	core.ParseParams = func(params json.RawMessage, req any) error {
		return parseParams(params, req.(*Request))
	}
	core.FilterValid = func(f map[string]any) bool { return Filter(f).valid() }
	core.FilterSubsetOf = func(f, supported map[string]any) bool {
		return Filter(f).subsetOf(supported)
	}
	core.FilterClone = func(f map[string]any) map[string]any { return Filter(f).clone() }
	core.FilterStrings = func(f map[string]any, key string) []string { return Filter(f).strings(key) }
	core.KindOf = func(key string) uint8 { return uint8(kindOf(key)) }
	core.CapabilitiesAllow = func(caps any, f map[string]any) bool {
		return caps.(Capabilities).allows(f)
	}
}
