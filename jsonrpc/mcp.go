package jsonrpc

import "slices"

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

// ListenVersionError returns the error for a subscriptions/listen request
// naming protocol version v, or nil when v is ProtocolVersion. An older
// version the server speaks (one in supported) has no such method: -32601
// "Method not found: subscriptions/listen" (HTTP 404). Any other version,
// older or newer, well-formed or not, is one the server does not speak:
// UnsupportedVersionError (-32022 with data.supported and data.requested,
// HTTP 400), as the specification's version negotiation asks. A nil
// supported means SupportedProtocolVersions.
func ListenVersionError(supported []string, v string) *Error {
	if v == ProtocolVersion {
		return nil
	}
	if supported == nil {
		supported = SupportedProtocolVersions
	}
	if slices.Contains(supported, v) {
		return NewError(CodeMethodNotFound, MsgMethodNotFoundListen)
	}
	return UnsupportedVersionError(supported, v)
}

// Wire methods of MCP 2026-07-28.
const (
	MethodAcknowledged         = "notifications/subscriptions/acknowledged"
	MethodToolsListChanged     = "notifications/tools/list_changed"
	MethodPromptsListChanged   = "notifications/prompts/list_changed"
	MethodResourcesListChanged = "notifications/resources/list_changed"
	MethodResourceUpdated      = "notifications/resources/updated"
)
