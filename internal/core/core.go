// Package core gives the module's other packages (stdio, streamhttp, hub,
// cluster, upstream, internal/capcache) functionality of package listen that
// is not part of its exported API. Package listen sets each variable in its
// init, so that they are set whenever a package that imports listen runs;
// this package cannot import listen itself (listen imports it), hence the
// plain map and any parameters. Only the module's packages can import it.
package core

import "encoding/json"

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
