// Package jsonrpc is the JSON-RPC 2.0 layer of the listen packages: request
// ids that keep their JSON type (ID), wire errors with their codes (Error,
// read with CodeOf), error responses, and message parsing for
// transports (ParseMessage). The MCP vocabulary (versions, methods, _meta
// keys) is package spec.
//
// Server authors rarely need it: the root package listen opens and serves
// subscriptions, and the streamhttp and stdio packages are the transports.
// Write a transport of your own, or match the errors Open returns
// (jsonrpc.CodeOf(err) == jsonrpc.CodeInvalidParams), with it.
//
// The package starts no goroutine: everything runs on its caller's.
package jsonrpc
