// Package wiremsg holds the exact messages of the JSON-RPC errors the listen
// packages answer with. They are exact: the tests compare them, and a client
// may show them. Users match errors by code (jsonrpc.CodeOf), never by
// message, so the messages are not part of the public API.
package wiremsg

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
)
