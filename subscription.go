package listen

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unique"

	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/internal/resuri"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// defaultReleaseTimeout is Options.ReleaseTimeout's default.
const defaultReleaseTimeout = 5 * time.Second

// Options configure Open. They describe the server, so one Options value is
// normally shared by every Open call (the transports keep theirs). Open
// reads it, and so does each subscription it opens while it lives (its
// ServerInfo, Extensions and ReleaseTimeout): do not modify an Options
// while listens opened with it are open.
type Options struct {
	// Capabilities are the server's capabilities, as it advertises them in
	// server/discover (see CapabilitiesFrom). The requested filter is
	// narrowed against them.
	Capabilities Capabilities
	// CapabilitiesFor, if set, replaces Capabilities: Open calls it once per
	// listen, with Open's context and the request, and narrows against what
	// it returns, for a server whose capabilities change while it runs (an
	// adapter states what the server advertises now). An *jsonrpc.Error it
	// returns goes to the client unchanged; any other error, or a panic,
	// becomes the internal error "Subscription source failed to open".
	CapabilitiesFor func(ctx context.Context, req *Request) (Capabilities, error)
	// ServerInfo goes into the completion result's _meta
	// (io.modelcontextprotocol/serverInfo) when its Name is set.
	ServerInfo Implementation
	// Extensions, if set, may add their own filter keys and shape their own
	// events.
	Extensions *ExtensionRegistry
	// CanRead, if set, narrows resourceSubscriptions to the URIs the caller
	// may read: a URI for which it returns false is left out of the
	// acknowledgement (not an error). Order is kept. It runs during Open,
	// with Open's context.
	//
	// With SubResources it also runs when an update is shaped, for each
	// update covered without being an accepted URI byte for byte; an update
	// it refuses is dropped. See SubResources.
	CanRead func(ctx context.Context, req *Request, uri string) bool
	// MaxURIBytes is the longest URI a listen may name in
	// resourceSubscriptions, in bytes. Zero means 4,096; a longer URI is
	// refused with -32602 "subscriptions/listen resourceSubscriptions URIs
	// must be at most <N> bytes".
	MaxURIBytes int
	// MaxFilterBytes bounds the size of a listen's notifications object,
	// counted as compact JSON (escapes not counted). Zero means 131,072
	// (128 KiB): room for the 1,000 URIs a listen may name at about 128
	// bytes each. A larger filter is refused with -32602
	// "subscriptions/listen notifications must be at most <N> bytes".
	// The subscription keeps the values of its accepted filter for its
	// life (shared with the hub), so this also bounds what one open listen
	// holds.
	MaxFilterBytes int
	// MaxIDBytes bounds a request's JSON-RPC id: the bytes of its JSON
	// token, quotes and escapes included. Zero means 256: real clients send
	// integers or short strings. Open refuses a listen whose id is longer
	// with -32600 "Invalid request: id must be at most <N> bytes" and
	// clears Request.ID, so that the error response written for it
	// (jsonrpc.ErrorResponse(req.ID, err)) carries no id. The subscription
	// keeps its id for its life and repeats it in every message of its
	// stream, so this bounds both. The transports of this module (streamhttp,
	// its Front, stdio, and the adapters built on them) apply it to every
	// message they read, listens or not, before anything else sees it.
	MaxIDBytes int
	// MaxSettingsBytes bounds the settings a listen's client declared for
	// the extensions that serve part of its filter
	// (clientCapabilities.extensions[id] of each, added up), counted as
	// compact JSON like MaxFilterBytes. Zero means 16,384 (16 KiB): MCP
	// extensions' settings are a few flags. Larger settings are refused
	// with -32602 "subscriptions/listen extension settings must be at most
	// <N> bytes", before the Source is opened. The subscription keeps one
	// copy of them for its life, which every extension event shares (see
	// Settings).
	MaxSettingsBytes int
	// MaxURISegments, with SubResources, bounds the path segments of each
	// URI of resourceSubscriptions (the '/' of its path: file:///a/b/ has
	// 3). Zero means 128: real paths are far shallower (a 4 KiB Linux path
	// of 2-byte names would have 2,048), and a folder URI costs its hub and
	// every update it covers in proportion to its depth. A deeper URI is
	// refused with -32602 "subscriptions/listen resourceSubscriptions URIs
	// must have at most <N> path segments". Without SubResources a URI
	// covers only itself and its segments are not counted.
	MaxURISegments int
	// SubResources, if set, makes every URI of resourceSubscriptions also
	// cover its sub-resources (file:///a/ covers file:///a/b/c): a
	// resources/updated for a covered URI is delivered too. Nil, the
	// default, a URI covers only itself, byte for byte. The acknowledgement
	// is the same either way. Open hands it to the Source as
	// Request.SubResources (the hub indexes such listens by folder). The
	// rule is at SubResources.
	SubResources *SubResources
	// Scopes, if set, names the scopes each listen belongs to (a
	// principal, a tenant, derived from Request.Auth): Open calls it once
	// per listen and sets the Request.Scopes the Source sees (a copy of the
	// request) from its result (empty strings
	// and duplicates left out). An event published with a Scope
	// (Event.Scope) reaches only the listens of that scope; unscoped events
	// reach every listen. Nil, the default: no listen has a scope, so a
	// scoped event reaches none (and an unscoped one every listen that
	// selects it). The hub indexes a listen under
	// each of its scopes, so a scoped publication costs what its own
	// listens cost. A panic in it is the internal error "Subscription
	// source failed to open".
	Scopes func(req *Request) []string
	// MaxLifetime, if positive, bounds how long a stream lives: it ends,
	// with the completion result (reason ErrLifetime, "lifetime" in its
	// _meta), between MaxLifetime-LifetimeJitter and MaxLifetime after it
	// opened, so that its client opens a new listen (through a proxy with
	// an idle timeout, on a server that rebalances). Zero, the default:
	// streams live until their client or the server ends them.
	MaxLifetime time.Duration
	// LifetimeJitter spreads the ends of streams opened together: each
	// ends a random time, uniform in [0, LifetimeJitter], before
	// MaxLifetime. Zero means MaxLifetime/10; it is at most MaxLifetime.
	LifetimeJitter time.Duration
	// Access, if set, binds every listen to its principal for its life:
	// scheduled and on-demand re-checks of its access, and CanRead at
	// delivery (see Access). Share one Access among the transports of a
	// server, and Close it at shutdown.
	Access *Access
	// Disabled switches subscriptions/listen off: every new listen is
	// refused, before its Source is opened, with -32601 "Method not found:
	// subscriptions/listen is turned off on this server" (HTTP 404); the
	// open streams and every other method are untouched.
	Disabled bool
	// EndWithError chooses the wire form of an early ending: a stream the
	// server ends on its own initiative (ErrRevoked, ErrExpired,
	// ErrFellBehind; ErrLifetime is always the completion) ends with the
	// reason, in one of two forms, because MCP 2026-07-28 says such a
	// server SHOULD send the completion result and leaves open whether the
	// end must be told apart from a graceful one:
	//
	//   - false, the default: the completion result, resultType "complete",
	//     with the reason ("revoked", "expired", "lifetime", "fell_behind")
	//     in its _meta under spec.MetaEndReason
	//     ("io.github.mcplisten/endReason"). A client unaware of the key
	//     sees a graceful end and opens a new listen, which meets the real
	//     answer where it can act on it: a revoked principal is refused by
	//     the authentication (401), an expired token is refreshed, a client
	//     that fell behind reads the lists again.
	//   - true: the JSON-RPC error spec.CodeEnded (-32050), message
	//     "Subscription ended: access revoked" (credential expired, client
	//     fell behind), data {"reason": "revoked"}, for clients that must
	//     see the loss of access as an error on the stream itself.
	//
	// On stdio either form follows notifications/cancelled, as in a drain.
	// ErrShutdown keeps its completion result without a reason.
	EndWithError bool
	// ReleaseTimeout bounds how long Close waits for a worker whose Next is
	// still blocked after the stream was closed (a source that breaks the
	// Stream contract). Zero means 5 seconds. After it, Close returns and the
	// worker goroutine exits whenever Next returns.
	ReleaseTimeout time.Duration

	// The fields below are the Server's policy (see Server); Open alone
	// ignores them.

	// MaxStreams is the most listens a Server serves at once, on all its
	// transports, counted from Admit to Done. Zero means
	// 1024.
	MaxStreams int
	// MaxStreamsPerKey is the most listens served at once for one key
	// (StreamKey), so that one client cannot take every slot. Zero means
	// a quarter of MaxStreams (256 with the default), on the listens that
	// have a key to tell clients apart: a StreamKey, or a remote address (a
	// stdio listen has none, so without a StreamKey only MaxStreams bounds
	// it). A negative value means no bound per key. Behind a proxy every
	// client has the proxy's address: set StreamKey (a principal, a
	// forwarded address you trust).
	MaxStreamsPerKey int
	// StreamKey returns the key a listen counts against under
	// MaxStreamsPerKey: the principal (from Request.Auth), a tenant. Nil
	// means the host of Request.Transport.RemoteAddr: the client's IP
	// address over HTTP (a proxy's, behind one), one key for every stdio
	// listen.
	StreamKey func(req *Request) string
	// Quota, if set, admits every listen the Server's own limits admitted
	// against shares they do not know (a tenant's share of a deployment).
	Quota Quota
	// RetryAfter is the delay the capacity and drain refusals tell clients
	// to wait (HTTP Retry-After, whole seconds rounded up), and the bound of
	// RetryHint. Zero means DefaultRetryAfter (5 s).
	RetryAfter time.Duration
	// DrainWindow, if positive, spreads Shutdown's completions over that
	// long, so that the clients of a stopping instance re-listen elsewhere
	// at a steady rate (see Server.Shutdown). Zero ends every stream at
	// once.
	DrainWindow time.Duration
	// RetryHint puts a random delay in [0, RetryAfter] in the _meta of every
	// shutdown completion (spec.MetaRetryAfterMs, milliseconds): a client
	// that honours it spreads its re-listen.
	RetryHint bool
	// SupportedVersions is the "supported" list of the unsupported-version
	// error (-32022). Nil means spec.SupportedProtocolVersions.
	SupportedVersions []string
	// Logger receives the Server's diagnostics: a hook's panic, a panicking
	// Source.Open. Nil means slog.Default().
	Logger *slog.Logger
	// OnOpen, if set, is called once a subscription is open, before its
	// acknowledgement is written, on the goroutine that opened it.
	OnOpen func(sub *Subscription)
	// OnClose, if set, is called once for every subscription OnOpen saw,
	// after its stream has ended, with its close reason (see Classify). The
	// slot is already free and counted in Stats when it runs.
	OnClose func(sub *Subscription, reason error)
	// OnRefuse, if set, is called for every listen answered with an error
	// instead of a stream, with the error sent (a *jsonrpc.Error whose
	// cause, errors.Unwrap, tells what the client is not told) and the
	// request as far as it was read (the transports of this module always
	// set its Transport, so that a refusal is counted under its transport
	// kind, and its ID when they could read it), before the answer is
	// written.
	OnRefuse func(req *Request, err error)
}

// Subscription is an opened subscriptions/listen request.
//
// # Lifecycle
//
// Open narrows the requested filter, opens the Source, checks what it
// accepted and starts the guard. Most callers then call Serve, which writes
// every message of the stream through a Sink. A caller driving the stream by
// hand writes Acknowledgement, starts the worker (StartWorker), calls
// Continue, and for each outcome writes the notification (or nothing, for a
// drop) and calls Continue again; on the graceful end (ErrClosed) it writes
// Completion, on a failure Failure. Close ends it with a reason.
//
// # Ownership
//
// The guard closes the stream exactly once: at the first Close, or when the
// owner context ends (reason Disconnected with cause ErrOwnerGone). A
// subscription has at most one owner at a time. The ctx given to Open is the
// first owner, so a transport that opens on a connection's context is
// protected from the start; StartWorker(owner) with a non-nil owner hands the
// subscription over: from then on only owner's end closes it, and the ctx
// given to Open may end (a per-request context, say) without closing the
// stream. A Server's Slot.Open names the first owner apart from the open context.
//
// # What it keeps
//
// A subscription keeps only what it serves: the request id, the accepted
// filter's flags and URIs, the extension projections (the rest of the
// accepted filter), the ids and settings of the extensions the client
// negotiated, and the Options it was opened with.
// It holds no pointer to the Request, its Params, Meta, client capabilities,
// headers or auth: Open copies the values it keeps (deep copies that share no memory with the request)
// so that an open stream never keeps a request body alive. (With
// Options.SubResources and CanRead both set, or Options.Access, it also
// keeps a detached copy of the request's id, version, client info,
// transport kind and address, and Auth's value: see SubResources and
// Access. With Options.Scopes it keeps its scopes; with a lifetime or an
// expiry, one runtime timer.)
//
// All methods are safe for concurrent use. Close is idempotent and waits.
type Subscription struct {
	// The fields each notification reads come first, close together: on
	// the fast path a stream's state is out of the CPU's caches by the
	// time its next event comes, so each cache line touched costs.

	// fast is the fast path's poller (attach), kept in the subscription
	// itself: one allocation and one cache line fewer per message.
	fast  poller
	id    jsonrpc.ID
	lists uint64 // bit k: the list change of Kind k is accepted
	// watch is the accepted resourceSubscriptions (nil when not accepted);
	// ext the extensions' parts (nil when none). With lists, they are the
	// accepted filter: no map of it is kept.
	watch *watchedURIs
	ext   *extParts
	// life ties the stream to its clock, its principal and its scopes
	// (guard.go); nil without a lifetime, an expiry, an Access or scopes.
	life     *life
	endState       // End's reason and the driver's wake-up (errors.go)
	guard    guard // kept in the subscription itself: one object, one cache line fewer per message

	// opts is the Options it was opened with, read for ServerInfo,
	// Extensions and ReleaseTimeout while it lives.
	opts *Options
	// kind is the Kind of the Transport of the request it was opened for,
	// interned (8 bytes where a string takes 16: the subscription fits in
	// 224).
	kind unique.Handle[string]
	// worker is the last worker started (guarded by guard.mu).
	worker *Worker
}

// watchedURIs is a subscription's accepted resourceSubscriptions.
type watchedURIs struct {
	// list is as accepted (order and duplicates kept, for the
	// acknowledgement); order, for more than smallList URIs, indexes list
	// sorted by URI, for binary search (2 bytes per URI).
	list  []string
	order []uint16
	res   *resourceMatch // Options.SubResources; nil when off
}

// extParts is what a subscription keeps of the extensions it serves.
type extParts struct {
	filters    map[string]Filter // extension id -> its part of the accepted filter
	negotiated map[string]Filter // extension id -> the client's settings
}

// Open opens a subscription for req on src.
//
// It validates req (validateNotifications; a protocol version without
// subscriptions/listen is the internal error "Protocol does not implement
// subscription wire shaping"), narrows the requested filter against
// opts.Capabilities (or opts.CapabilitiesFor's) and opts.CanRead, merges in the extensions' filters, and
// calls src.Open with that supported filter. If the source accepts
// notifications that were not supported, the new stream is closed with a
// Failed reason and Open returns the internal error "Subscription source
// accepted notifications not requested".
//
// Errors are *jsonrpc.Error values for the client (read their code with
// jsonrpc.CodeOf: jsonrpc.CodeInvalidParams, jsonrpc.CodeInternalError, ...). ctx is passed to src.Open and is the
// subscription's owner (see Subscription). opts may be nil.
func Open(ctx context.Context, src Source, req *Request, opts *Options) (*Subscription, error) {
	return openOwned(ctx, ctx, src, req, opts)
}

// openOwned is Open with the owner given apart from ctx: ctx is passed to
// src.Open, Options.CanRead and the extension hooks (so a slow open sees the
// request go away), while owner is what the guard watches for the life of the
// subscription. An owner that can never end (context.Background()) leaves
// the subscription without an owner until StartWorker hands one over; a nil
// owner is a programming error (openOwned panics).
//
// Transports use it when the request's context ends for reasons the stream
// should report itself (net/http cancels a request's context on a failed
// write, which would otherwise race the transport's own Disconnected reason).
func openOwned(ctx, owner context.Context, src Source, req *Request, opts *Options) (*Subscription, error) {
	if owner == nil {
		panic("listen: openOwned with a nil owner context (pass context.Background() for no owner)")
	}
	if opts == nil {
		opts = &Options{}
	}
	if req == nil || !req.ID.Valid() {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "Invalid request: subscriptions/listen requires an id")
	}
	if idTooLong(req.ID, opts) {
		req.ID = jsonrpc.ID{}
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, core.IDTooLarge(opts.MaxIDBytes))
	}
	if opts.Disabled {
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, core.ListenDisabled)
	}
	// The Source sees a copy, with SubResources and Scopes set: the
	// caller's request is left as it was (but for an id that was too long).
	r := *req
	req = &r
	req.SubResources = opts.SubResources
	req.Scopes = nil
	if req.ProtocolVersion != spec.ProtocolVersion {
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, core.NoShaping)
	}
	if err := validateNotifications(req.Notifications); err != nil {
		return nil, err
	}
	if err := checkSize(req.Notifications, opts); err != nil {
		return nil, err
	}
	caps, err := capabilities(ctx, req, opts)
	if err != nil {
		return nil, err
	}
	if req.Scopes, err = scopes(req, opts); err != nil {
		return nil, err
	}
	narrowed, err := narrow(ctx, req, caps, opts.CanRead)
	if err != nil {
		return nil, err
	}
	extMerged, contributions, err := opts.Extensions.subscriptionFilters(ctx, req, caps)
	if err != nil {
		return nil, err
	}
	// The supported filter is a fresh map detached from the request: narrow
	// copies the URIs, and the extensions' parts (which come from the
	// request) are deep copies.
	supported := narrowed
	if len(extMerged) > 0 {
		if _, err := merge(narrowed, extMerged); err != nil {
			return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, core.ExtCollideWithCore).WithCause(err)
		}
		for k, v := range extMerged {
			supported[strings.Clone(k)] = cloneValue(v)
		}
	}
	if err := checkSettings(req, contributions, opts); err != nil {
		return nil, err
	}

	accepted, stream, err := openSource(ctx, src, req, supported)
	if err != nil {
		return nil, err
	}
	if !accepted.subsetOf(supported) {
		werr := jsonrpc.NewError(jsonrpc.CodeInternalError, core.SourceOverclaimed)
		closeStream(stream, Failed(werr))
		return nil, werr
	}

	// The id is kept as it is: an ID holds its own copy of its token.
	s := &Subscription{id: req.ID, opts: opts, kind: unique.Make(req.Transport.Kind)}
	s.guard.stream = stream
	for k := range kinds {
		if Kind(k).listChange() && accepted[kinds[k].key] == true {
			s.lists |= 1 << k
		}
	}
	if _, ok := accepted[spec.KeyResourceSubscriptions]; ok {
		w := &watchedURIs{}
		if l, ok := accepted[spec.KeyResourceSubscriptions].([]string); ok {
			w.list = slices.Clone(l)
		} else {
			w.list = accepted.strings(spec.KeyResourceSubscriptions) // a new slice
		}
		if n := len(w.list); n > smallList && n <= math.MaxUint16 {
			w.order = make([]uint16, n)
			for i := range w.order {
				w.order[i] = uint16(i)
			}
			slices.SortFunc(w.order, func(a, b uint16) int { return strings.Compare(w.list[a], w.list[b]) })
		}
		w.res = newResourceMatch(req, s.id, opts, w.list)
		s.watch = w
	}
	// Every other key of the accepted filter belongs to an extension's
	// contribution: the projections hold them all.
	for id, contrib := range contributions {
		if p := project(accepted, contrib); len(p) > 0 {
			if s.ext == nil {
				s.ext = &extParts{filters: make(map[string]Filter, len(contributions))}
			}
			s.ext.filters[id] = p
			if req.clientExtension(id) {
				if s.ext.negotiated == nil {
					s.ext.negotiated = make(map[string]Filter, len(contributions))
				}
				// The one copy of the settings: every event shares it.
				s.ext.negotiated[strings.Clone(id)] = clientSettings(req, id).clone()
			}
		}
	}
	if s.life = newLife(s, req, opts); s.life != nil {
		if s.life.timer != nil || s.life.p != nil {
			// Its timer and its Access let go once the stream is closed.
			s.guard.stream = wrapStream(stream, streamHooks{Close: s.life.release})
		}
	}
	s.guard.handOver(owner)
	return s, nil
}

// scopes returns the listen's scopes (Options.Scopes): distinct, not
// empty, copied. A panic is the internal error of a failed open.
func scopes(req *Request, opts *Options) (out []string, err error) {
	if opts.Scopes == nil {
		return nil, nil
	}
	var scopes []string
	if p := catch("Options.Scopes", func() { scopes = opts.Scopes(req) }); p != nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, core.SourceFailedToOpen).WithCause(p)
	}
	for _, sc := range scopes {
		if sc != "" && !slices.Contains(out, sc) {
			out = append(out, strings.Clone(sc))
		}
	}
	return out, nil
}

// capabilities returns the capabilities to narrow req against:
// opts.CapabilitiesFor's, or opts.Capabilities.
func capabilities(ctx context.Context, req *Request, opts *Options) (caps Capabilities, err error) {
	if opts.CapabilitiesFor == nil {
		return opts.Capabilities, nil
	}
	if p := catch("Options.CapabilitiesFor", func() { caps, err = opts.CapabilitiesFor(ctx, req) }); p != nil {
		return Capabilities{}, jsonrpc.NewError(jsonrpc.CodeInternalError, core.SourceFailedToOpen).WithCause(p)
	}
	if err != nil {
		return Capabilities{}, jsonrpc.AsError(err, core.SourceFailedToOpen)
	}
	return caps, nil
}

// narrow builds the core filter: the requested core keys the server's
// capabilities allow, with requested false never carried forward, and the
// URIs canRead (if set) allows.
func narrow(ctx context.Context, req *Request, caps Capabilities, canReadFn func(context.Context, *Request, string) bool) (Filter, error) {
	f := Filter{}
	want := req.Notifications
	for k := range kinds {
		row := &kinds[k]
		if !Kind(k).core() || !*row.allowed(&caps) {
			continue
		}
		v, ok := want[row.key]
		switch {
		case !ok:
		case !row.uri:
			if b, _ := v.(bool); b {
				f[row.key] = true
			}
		default:
			list, err := narrowURIs(ctx, req, v, canReadFn)
			if err != nil {
				return nil, err
			}
			if list != nil {
				f[row.key] = list
			}
		}
	}
	return f, nil
}

// narrowURIs narrows a requested list of URIs v to those canRead (if set)
// allows, in order, each a copy (strings.Clone: the supported filter keeps
// nothing of the request); nil when v is not a list.
func narrowURIs(ctx context.Context, req *Request, v any, canReadFn func(context.Context, *Request, string) bool) ([]any, error) {
	l, isList := asList(v)
	if !isList {
		return nil, nil
	}
	list := make([]any, 0, l.len())
	for i := range l.len() {
		var u string
		if l.isS {
			u = l.strs[i]
		} else if s, ok := l.anys[i].(string); ok {
			u = s
		} else {
			continue
		}
		if canReadFn != nil {
			ok, err := canRead(ctx, canReadFn, req, u)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		list = append(list, strings.Clone(u))
	}
	return list, nil
}

// ID returns the listen request's id, which is also the subscription id.
func (s *Subscription) ID() jsonrpc.ID { return s.id }

// TransportKind is the Kind of the Transport of the request the
// subscription was opened for ("streamable_http", "stdio", ...).
func (s *Subscription) TransportKind() string { return s.kind.Value() }

// errWorkerRunning is returned by StartWorker while the subscription's
// previous worker goroutine is still running.
var errWorkerRunning = errors.New("listen: the subscription's worker is still running")

// StartWorker starts the subscription's worker and hands the subscription to
// owner, for a transport that writes the stream's messages itself
// (ExampleSubscription_StartWorker).
//
// owner becomes the subscription's only owner: the watch on the previous
// owner (the ctx given to Open, or the owner given to openOwned) is
// released, so that context may end without closing the stream, and
// owner's end now closes it (reason Disconnected with cause ErrOwnerGone).
// To keep the owner, pass it again. An owner that can never end, such as
// context.Background(), leaves the subscription without an owner: only
// Close ends it. A nil owner is a programming error (StartWorker panics).
// The worker stops when its owner ends, on Stop, or when the subscription
// is closed.
//
// A subscription has one worker at a time: StartWorker returns an error
// until the previous worker's goroutine has exited (its Outcomes is
// closed), and then starts a new one. A worker started after Close
// still works: its pulls answer whatever the closed stream's Next answers
// (ErrClosed, by the Stream contract), so the owner sees the graceful end.
func (s *Subscription) StartWorker(owner context.Context) (*Worker, error) {
	if owner == nil {
		panic("listen: StartWorker with a nil owner context (pass context.Background() for no owner)")
	}
	s.guard.mu.Lock()
	defer s.guard.mu.Unlock()
	if s.workerRunningLocked() {
		return nil, errWorkerRunning
	}
	s.guard.handOverLocked(owner)
	s.worker = startWorker(s.guard.stream, owner.Done(), s.guard.closingChanLocked(), &s.endState, nil)
	s.wake = s.worker.signalEnd // End's wake-up (s.guard.mu is held)
	return s.worker, nil
}

// serveWorker starts the worker of Serve's poller, for a stream that
// blocks: it hands its outcomes over through notify, and the subscription
// keeps its owner (the guard watches it, and its close stops the worker).
func (s *Subscription) serveWorker(notify func()) (*Worker, error) {
	s.guard.mu.Lock()
	defer s.guard.mu.Unlock()
	if s.workerRunningLocked() {
		return nil, errWorkerRunning
	}
	s.worker = startWorker(s.guard.stream, nil, s.guard.closingChanLocked(), nil, notify)
	return s.worker, nil
}

// workerRunningLocked reports whether the subscription's worker goroutine
// is still running (and not yet exiting). s.guard.mu is held.
func (s *Subscription) workerRunningLocked() bool {
	if s.worker == nil {
		return false
	}
	return !s.worker.exiting.Load()
}

// Close closes the subscription with reason (see Classify), if it is still
// open: the stream is closed exactly once, whether by this call, an earlier
// one or the owner's end, and the worker is stopped. A nil reason is
// ErrComplete.
//
// The Close that closes the stream returns after the stream's Close has
// returned and the worker goroutine has exited (or ReleaseTimeout passed,
// for a Next that ignores the stream's Close); so does a Close made after
// that. A Close made while another one is running the stream's Close
// returns at once, without waiting: it may be made from inside the
// stream's Close (a source that ends its subscriptions in one place), where
// waiting would wait on itself. Receive from Closed to wait for the
// release.
func (s *Subscription) Close(reason error) {
	if reason == nil {
		reason = ErrComplete
	}
	released := s.guard.close(reason)
	s.guard.mu.Lock()
	w := s.worker
	s.guard.mu.Unlock()
	if w == nil {
		return
	}
	w.Stop()
	if released {
		s.waitWorker(w)
	}
}

// waitWorker waits for w's goroutine to exit, at most ReleaseTimeout.
func (s *Subscription) waitWorker(w *Worker) {
	select {
	case <-w.done:
	default:
		release := s.opts.ReleaseTimeout
		if release <= 0 {
			release = defaultReleaseTimeout
		}
		t := time.NewTimer(release)
		defer t.Stop()
		select {
		case <-w.done:
		case <-t.C:
		}
	}
}

// CloseReason returns the reason the stream was closed with, or nil while it
// is open.
func (s *Subscription) CloseReason() error { return s.guard.closeReason() }

// Closed returns a channel closed once the stream has been closed and its
// Close has returned.
func (s *Subscription) Closed() <-chan struct{} { return s.guard.doneChan() }

// canRead calls a CanRead policy, turning its panic into the internal error
// of a failed open (as for a panic in Source.Open).
func canRead(ctx context.Context, f func(context.Context, *Request, string) bool, req *Request, uri string) (ok bool, err error) {
	if p := catch("Options.CanRead", func() { ok = f(ctx, req, uri) }); p != nil {
		return false, jsonrpc.NewError(jsonrpc.CodeInternalError, core.SourceFailedToOpen).WithCause(p)
	}
	return ok, nil
}

// idTooLong reports whether id is longer than Options.MaxIDBytes allows.
func idTooLong(id jsonrpc.ID, opts *Options) bool {
	limit := opts.MaxIDBytes
	if limit <= 0 {
		limit = core.DefaultMaxIDBytes
	}
	return len(id.Raw()) > limit
}

// Default limits of Options.MaxURIBytes, Options.MaxFilterBytes,
// Options.MaxSettingsBytes and Options.MaxURISegments.
const (
	defaultMaxURIBytes      = 4 << 10
	defaultMaxFilterBytes   = 128 << 10
	defaultMaxSettingsBytes = 16 << 10
	defaultMaxURISegments   = 128
)

// clientSettings returns the settings the client of req declared for the
// extension id (nil when they are not an object).
func clientSettings(req *Request, id string) Filter {
	exts, _ := req.ClientCapabilities["extensions"].(map[string]any)
	settings, _ := asObject(exts[id])
	return settings
}

// checkSettings applies Options.MaxSettingsBytes to the settings of the
// extensions that contributed to the listen's filter and that the client
// declared: the ones the subscription may keep.
func checkSettings(req *Request, contributions map[string]Filter, opts *Options) error {
	limit := opts.MaxSettingsBytes
	if limit <= 0 {
		limit = defaultMaxSettingsBytes
	}
	n := 0
	for id := range contributions {
		if settings := clientSettings(req, id); settings != nil {
			if n += jsonSize(map[string]any(settings), 0, limit-n); n > limit {
				return jsonrpc.NewError(jsonrpc.CodeInvalidParams,
					"subscriptions/listen extension settings must be at most "+strconv.Itoa(limit)+" bytes")
			}
		}
	}
	return nil
}

// checkSize applies Options.MaxURIBytes, Options.MaxURISegments (with
// SubResources) and Options.MaxFilterBytes to a validated requested filter.
func checkSize(f Filter, opts *Options) error {
	maxURI, maxFilter, maxSegments := opts.MaxURIBytes, opts.MaxFilterBytes, opts.MaxURISegments
	if maxURI <= 0 {
		maxURI = defaultMaxURIBytes
	}
	if maxFilter <= 0 {
		maxFilter = defaultMaxFilterBytes
	}
	if maxSegments <= 0 {
		maxSegments = defaultMaxURISegments
	}
	for _, u := range f.strings(spec.KeyResourceSubscriptions) {
		if len(u) > maxURI {
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams,
				"subscriptions/listen resourceSubscriptions URIs must be at most "+strconv.Itoa(maxURI)+" bytes")
		}
		if opts.SubResources != nil && resuri.Segments(u) > maxSegments {
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams,
				"subscriptions/listen resourceSubscriptions URIs must have at most "+strconv.Itoa(maxSegments)+" path segments")
		}
	}
	if jsonSize(map[string]any(f), 0, maxFilter) > maxFilter {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams,
			"subscriptions/listen notifications must be at most "+strconv.Itoa(maxFilter)+" bytes")
	}
	return nil
}

// jsonSize returns the size of v as compact JSON, escapes not counted. It
// stops counting once the size passes limit.
func jsonSize(v any, depth, limit int) int {
	if depth > maxDepth {
		return limit + 1
	}
	switch x := v.(type) {
	case nil:
		return 4
	case bool:
		if x {
			return 4
		}
		return 5
	case string:
		return len(x) + 2
	case json.Number:
		return len(x)
	case []string:
		n, sep := 2, 0
		for _, s := range x {
			if n += sep + len(s) + 2; n > limit {
				return n
			}
			sep = 1
		}
		return n
	case []any:
		n, sep := 2, 0
		for _, e := range x {
			if n += sep + jsonSize(e, depth+1, limit); n > limit {
				return n
			}
			sep = 1
		}
		return n
	case map[string]any:
		n, sep := 2, 0
		for k, e := range x {
			if n += sep + len(k) + 3 + jsonSize(e, depth+1, limit); n > limit {
				return n
			}
			sep = 1
		}
		return n
	case Filter:
		return jsonSize(map[string]any(x), depth, limit)
	default:
		return 24 // other numbers
	}
}
