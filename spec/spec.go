// Package spec names the MCP 2026-07-28 vocabulary of subscriptions/listen
// that the listen packages and their users share: the protocol versions,
// the methods, the _meta keys, the filter keys, the wire of an early ending
// (MetaEndReason, CodeEnded) and the unsupported-version error.
//
// Server authors rarely need it: the root package listen opens and serves
// subscriptions. Tests and transports use it to speak of the wire without
// repeating its strings. The JSON-RPC layer (ids, errors, message parsing)
// is package jsonrpc.
//
// The package starts no goroutine: everything runs on its caller's.
package spec

// ProtocolVersion is the MCP version whose subscriptions/listen the listen
// packages implement.
const ProtocolVersion = "2026-07-28"

// SupportedProtocolVersions lists the protocol versions a listen request may
// name, newest first. Only ProtocolVersion has subscriptions/listen; the
// others are the earlier versions a server commonly also speaks, for the
// "supported" list of an unsupported-version error.
var SupportedProtocolVersions = []string{ProtocolVersion, "2025-11-25", "2025-06-18", "2025-03-26"}

// Methods of MCP 2026-07-28 on a listen stream.
const (
	// MethodListen is the method of the listen request.
	MethodListen = "subscriptions/listen"
	// MethodCancelled is the client's cancellation notification.
	MethodCancelled = "notifications/cancelled"
	// MethodAcknowledged is the first message of every listen stream.
	MethodAcknowledged         = "notifications/subscriptions/acknowledged"
	MethodToolsListChanged     = "notifications/tools/list_changed"
	MethodPromptsListChanged   = "notifications/prompts/list_changed"
	MethodResourcesListChanged = "notifications/resources/list_changed"
	MethodResourceUpdated      = "notifications/resources/updated"
)

// _meta keys of MCP 2026-07-28.
const (
	// MetaSubscriptionID tags every message of a subscription with the
	// listen request's id.
	MetaSubscriptionID = "io.modelcontextprotocol/subscriptionId"
	// MetaServerInfo is the completion result's server info.
	MetaServerInfo = "io.modelcontextprotocol/serverInfo"
	// MetaProtocolVersion is the request's protocol version.
	MetaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	// MetaClientCapabilities is the request's client capabilities.
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	// MetaClientInfo is the request's client implementation.
	MetaClientInfo = "io.modelcontextprotocol/clientInfo"
)

// Core filter keys of a listen's params.notifications.
const (
	KeyToolsListChanged      = "toolsListChanged"
	KeyPromptsListChanged    = "promptsListChanged"
	KeyResourcesListChanged  = "resourcesListChanged"
	KeyResourceSubscriptions = "resourceSubscriptions"
)

// MaxResourceSubscriptions is the most URIs a listen request may name.
const MaxResourceSubscriptions = 1000
