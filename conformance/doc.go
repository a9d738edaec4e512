// Package conformance checks every message that package listen shapes
// against the official MCP 2026-07-28 JSON Schema, and the rules of the
// subscriptions/listen stream that the schema cannot express.
//
// It has no API: everything is in its tests. The schema is embedded from
// testdata/schema.json (see testdata/README.md). Run
//
//	go test -race ./...
//
// from this directory; -v prints how many messages were validated.
package conformance
