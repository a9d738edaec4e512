package spec

import (
	"slices"

	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
)

// ListenVersionError returns the error for a subscriptions/listen request
// naming protocol version v, or nil when v is ProtocolVersion. An older
// version the server speaks (one in supported) has no such method: -32601
// "Method not found: subscriptions/listen" (HTTP 404). Any other version,
// older or newer, well-formed or not, is one the server does not speak:
// UnsupportedVersionError (-32022 with data.supported and data.requested,
// HTTP 400), as the specification's version negotiation asks. A nil
// supported means SupportedProtocolVersions.
func ListenVersionError(supported []string, v string) *jsonrpc.Error {
	if v == ProtocolVersion {
		return nil
	}
	if supported == nil {
		supported = SupportedProtocolVersions
	}
	if slices.Contains(supported, v) {
		return jsonrpc.NewError(jsonrpc.CodeMethodNotFound, core.MethodNotFoundListen)
	}
	return UnsupportedVersionError(supported, v)
}

// UnsupportedVersionError returns the -32022 error for a request naming a
// protocol version the server does not speak, with data.supported and
// data.requested (UnsupportedProtocolVersionError in the schema), in the
// order of the specification's example. A nil supported list means
// SupportedProtocolVersions.
func UnsupportedVersionError(supported []string, requested string) *jsonrpc.Error {
	if supported == nil {
		supported = SupportedProtocolVersions
	}
	return jsonrpc.NewError(jsonrpc.CodeUnsupportedProtocolVersion, core.UnsupportedVersion).
		WithData(unsupportedVersionData{Supported: supported, Requested: requested})
}

// unsupportedVersionData is the data of UnsupportedVersionError.
type unsupportedVersionData struct {
	Supported []string `json:"supported"`
	Requested string   `json:"requested"`
}
