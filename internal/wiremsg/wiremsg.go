// Package wiremsg holds the exact messages of the JSON-RPC errors the listen
// packages answer with, and the bound on request ids one of them states. They are exact: the tests compare them, and a client
// may show them. Users match errors by code (jsonrpc.CodeOf), never by
// message, so the messages are not part of the public API.
package wiremsg

import (
	"bytes"
	"strconv"
)

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
