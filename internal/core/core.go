// Package core is what the root module's packages share that is not part
// of their exported API: functionality of package listen that stdio,
// streamhttp, hub, cluster, upstream and internal/capcache use (package
// listen sets each variable in its init, so that they are set whenever a
// package that imports listen runs; this package cannot import listen
// itself, hence the plain map and any parameters); the exact messages of
// the JSON-RPC errors the packages answer with; SafeCall, the one place
// the module recovers a user callback's panic; and ValidatedStream. Only
// the module's packages can import it.
package core

import (
	"bytes"
	"encoding/json"
	"runtime/debug"
	"strconv"
)

var (
	// ParseParams decodes and validates the params of a
	// subscriptions/listen request into req, a *listen.Request (the
	// transports' parse; listen.ParseRequest is the whole-request form).
	ParseParams func(params json.RawMessage, req any) error
	// FilterValid reports whether f, a listen.Filter, holds only JSON
	// values within the nesting bound.
	FilterValid func(f map[string]any) bool
	// FilterSubsetOf reports whether every notification f asks for is one
	// supported offers (the upstream's acknowledgement check).
	FilterSubsetOf func(f, supported map[string]any) bool
	// FilterClone returns a deep copy of f, a listen.Filter, whose strings
	// do not share memory with f's.
	FilterClone func(f map[string]any) map[string]any
	// FilterStrings returns the string elements of the list under key in
	// f, a listen.Filter, or nil.
	FilterStrings func(f map[string]any, key string) []string
	// KindOf returns the listen.Kind that the filter key selects: a core
	// key's kind, 0 for any other key (an extension's).
	KindOf func(key string) uint8
	// CapabilitiesAllow reports whether caps, a listen.Capabilities, let a
	// listen ask for every core kind in f.
	CapabilitiesAllow func(caps any, f map[string]any) bool
)

// Panic is a recovered panic: its value and the stack of the goroutine
// where it happened.
type Panic struct {
	Value any
	Stack []byte
}

// Call runs f and returns its panic, or nil when f returned. A panic is
// recovered whatever its value (http.ErrAbortHandler included: a callback
// has no handler to abort; panic(nil) comes back as a
// *runtime.PanicNilError, so it is never mistaken for a return).
func SafeCall(f func()) (p *Panic) {
	defer func() {
		if v := recover(); v != nil {
			p = &Panic{Value: v, Stack: debug.Stack()}
		}
	}()
	f()
	return nil
}

// Stream is implemented by such a stream. EventsValidated reports whether
// its events are validated. (The core looks through its own stream
// wrappers itself; otel's wrapper passes on the word of the stream it
// wraps.)
type ValidatedStream interface{ EventsValidated() bool }

// Validated reports whether the events of stream, which may be any value,
// were validated when they were published.
func Validated(stream any) bool {
	v, ok := stream.(ValidatedStream)
	return ok && v.EventsValidated()
}

// Messages of the internal errors the core produces.
const (
	SourceFailed         = "Subscription source failed"
	SourceFailedToOpen   = "Subscription source failed to open"
	InvalidOpenResult    = "Subscription source returned an invalid open result"
	SourceOverclaimed    = "Subscription source accepted notifications not requested"
	CapacityExhausted    = "Server subscription capacity exhausted"
	NoShaping            = "Protocol does not implement subscription wire shaping"
	InvalidMessage       = "Protocol produced an invalid subscription message"
	ExtNonJSONFilter     = "Extension returned a non-JSON subscription filter"
	ExtUnrequested       = "Extension accepted subscription filters not requested"
	ExtInvalidFilter     = "Extension returned an invalid subscription filter"
	ExtCallbackPanicked  = "Extension callback raised"
	ExtFiltersCollide    = "Extension subscription filters collide"
	ExtCollideWithCore   = "Extension subscription filters collide with core"
	ExtNonJSONEvent      = "Extension shaped a non-JSON subscription event"
	ExtInvalidEvent      = "Extension shaped an invalid subscription event"
	DuplicateID          = "Duplicate in-flight request id"
	MethodNotFoundListen = "Method not found: subscriptions/listen"
	UnsupportedVersion   = "Unsupported protocol version"
)

// Exact -32602 messages of the listen params checks, in the order they run.
const (
	NotificationsObject = "subscriptions/listen requires a notifications object"
	NotificationsJSON   = "subscriptions/listen notifications must be a JSON object"
	URIsList            = "subscriptions/listen resourceSubscriptions must be a list"
	URIsTooMany         = "subscriptions/listen resourceSubscriptions accepts at most 1000 URIs"
	URIsAbsolute        = "subscriptions/listen resourceSubscriptions must contain absolute URI strings"
	MetaObject          = "subscriptions/listen requires a _meta object"
	MetaProtocolVersion = "subscriptions/listen _meta requires io.modelcontextprotocol/protocolVersion as a string"
	MetaCapabilities    = "subscriptions/listen _meta requires io.modelcontextprotocol/clientCapabilities as an object"
	ParamsObject        = "subscriptions/listen params must be an object"
	ParamsDuplicate     = "subscriptions/listen params, _meta and notifications must not repeat a member name"
	URIsUnicode         = "subscriptions/listen resourceSubscriptions must not contain lone surrogates or invalid UTF-8"
)

// Messages of the listen switch and of the JSON-RPC envelope.
const (
	// ListenDisabled is the message of the -32601 error every new listen
	// gets while listen.Options.Disabled is set.
	ListenDisabled = "Method not found: subscriptions/listen is turned off on this server"
	// DuplicateMember is the message of the -32600 error for a message that
	// repeats a member of the JSON-RPC envelope.
	DuplicateMember = "Invalid request: a JSON-RPC member is repeated"
	// ShuttingDown is the message of the -32603 error a listen gets while
	// the server drains.
	ShuttingDown = "Server is shutting down"
	// TooManyForKey is the message of the -32603 error a listen gets over
	// the per-key stream limit.
	TooManyForKey = "Too many subscriptions open for this client"
)

// DefaultMaxIDBytes is the default bound of a request's id
// (jsonrpc.ParseMessage, and the MaxIDBytes of the listen packages'
// options): 256 bytes of its JSON token, quotes and escapes included. Real
// clients send integers or short strings (a UUID is 38 bytes with its
// quotes, an id with a prefix and a UUID rarely 60); 256 is four times
// that, and small enough that a stream which repeats its listen's id in
// every notification stays small.
const DefaultMaxIDBytes = 256

// IDTooLarge returns the message of the -32600 error for a message whose
// id is longer than max bytes (zero or less: DefaultMaxIDBytes): "Invalid
// request: id must be at most <max> bytes". The error is answered without
// an id: an id that long is not repeated.
func IDTooLarge(max int) string {
	if max <= 0 {
		max = DefaultMaxIDBytes
	}
	return "Invalid request: id must be at most " + strconv.Itoa(max) + " bytes"
}

// IDTooLong reports whether the id token raw (a member's raw JSON value,
// surrounding spaces not counted) is longer than max bytes (zero or less:
// DefaultMaxIDBytes). Transports use it on the members they do not parse
// (a response's id, a cancellation's requestId).
func IDTooLong(raw []byte, max int) bool {
	if max <= 0 {
		max = DefaultMaxIDBytes
	}
	return len(raw) > max && len(bytes.TrimSpace(raw)) > max
}

// Internal is a parameter type of methods that only the module's packages
// can implement: no other module can name it.
type Internal struct{}

// Offerer is a fast stream that takes a plain list change (an event with
// only its Kind, a list-change kind) straight from the hub, encoded by the
// stream itself without a round through the subscription and the hub
// listener. The hub offers an event only to a listener armed for its next
// one (nothing queued, nothing handed over) and keeps it armed when Offer
// takes it; the subscription's poller takes the offered event
// (TakeOffered) before pulling the listener whenever it runs, so that the
// order of events is kept.
type Offerer interface {
	// Offer takes a list change of kind; false when one is still pending
	// (the hub then hands the event over as usual). It never blocks.
	Offer(kind uint8) bool
	// TakeOffered takes the pending list change, if any.
	TakeOffered() (kind uint8, ok bool)
	// Direct tells the stream the subscription's id, as JSON.
	Direct(id string)
}
