// Package jsonrpc is the JSON-RPC 2.0 and MCP plumbing of the listen
// packages: request ids that keep their JSON type, wire errors with their
// codes and exact messages, message parsing for transports, and the MCP
// 2026-07-28 method names, _meta keys and protocol versions that a
// subscriptions/listen stream uses.
//
// Server authors rarely need it: the root package listen opens and serves
// subscriptions, and the streamhttp and stdio packages are the transports.
// Write a transport of your own, or match the errors Open returns
// (errors.Is(err, jsonrpc.ErrInvalidParams)), with it.
//
// The package starts no goroutine: everything runs on its caller's.
package jsonrpc
