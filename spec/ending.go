package spec

// The wire of an early ending: the server ends a stream on its own
// initiative (a revoked principal, an expired credential, a lifetime
// bound, a client that fell behind) and tells the client why. MCP
// 2026-07-28 does not define it; these are the listen packages' own (see
// listen.Options.EndWithError for the two forms and why there are two).
const (
	// MetaEndReason is the _meta key of the completion result of an early
	// ending: its value is the reason ("revoked", "expired", "lifetime",
	// "fell_behind"). A _meta key of this library's own prefix, which MCP
	// leaves to implementations.
	MetaEndReason = "io.github.mcplisten/endReason"
	// MetaRetryAfterMs is the _meta key of a shutdown completion's retry
	// hint (listen.Options.RetryHint): how long, in milliseconds, the client
	// should wait before it listens again.
	MetaRetryAfterMs = "io.github.mcplisten/retryAfterMs"
	// CodeEnded is the JSON-RPC error code of an early ending sent as an
	// error: an implementation-defined server error, in the range JSON-RPC
	// reserves for them (-32000 to -32099), clear of the codes MCP
	// 2026-07-28 uses (-32020 to -32022). Its data is {"reason": "<reason>"}.
	CodeEnded = -32050
)
