package listen

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcplisten/listen/internal/resuri"
	"github.com/mcplisten/listen/jsonrpc"
)

// DefaultReleaseTimeout is Options.ReleaseTimeout's default.
const DefaultReleaseTimeout = 5 * time.Second

// Options configure Open. They describe the server, so one Options value is
// normally shared by every Open call; Open only reads it.
type Options struct {
	// Capabilities are the server's capabilities, as it advertises them in
	// server/discover (see CapabilitiesFrom). The requested filter is
	// narrowed against them.
	Capabilities Capabilities
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
	// it refuses is dropped. See the package documentation, Sub-resources.
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
	// The subscription keeps one copy of its accepted filter for its life,
	// shared with a source that accepts the supported filter as it is (the
	// hub does), so this also bounds what one open listen holds.
	MaxFilterBytes int
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
	// SubResources makes every URI of resourceSubscriptions also cover its
	// sub-resources (file:///a/ covers file:///a/b/c): a resources/updated
	// for a covered URI is delivered too. Off, the default, a URI covers
	// only itself, byte for byte. The acknowledgement is the same either
	// way. The rule is in the package documentation, Sub-resources.
	SubResources bool
	// ResourceFolders, if set, replaces the built-in rule of SubResources
	// for the updated URIs it claims (ok true): it returns the URIs that
	// cover uri besides itself. With ok false the built-in rule applies.
	// See the package documentation, Sub-resources.
	ResourceFolders func(uri string) (folders []string, ok bool)
	// ReleaseTimeout bounds how long Close waits for a worker whose Next is
	// still blocked after the stream was closed (a source that breaks the
	// Stream contract). Zero means DefaultReleaseTimeout. After it, Close returns and the
	// worker goroutine exits whenever Next returns.
	ReleaseTimeout time.Duration
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
// drop) and calls Continue again; on OutcomeClosed it writes Completion, on
// OutcomeError Failure. Close ends it with a reason.
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
// stream. OpenOwned names the first owner apart from the open context.
//
// # What it keeps
//
// A subscription keeps only what it serves: the request id, the protocol
// version, the accepted filter, the extension projections, the ids and
// settings of the extensions the client negotiated, and the server info.
// It holds no pointer to the Request, its Params, Meta, client capabilities,
// headers or auth: Open copies the values it keeps (strings.Clone, Filter.Clone)
// so that an open stream never keeps a request body alive. (With
// Options.SubResources and CanRead both set it also keeps a detached copy of
// the request's id, version, client info, transport kind and address, and
// Auth's value: see the package documentation, Sub-resources.)
//
// All methods are safe for concurrent use. Close is idempotent and waits.
type Subscription struct {
	id         jsonrpc.ID
	accepted   Filter
	tools      bool
	prompts    bool
	resources  bool
	uris       []string
	sorted     bool           // uris is sorted (and deduplicated) for binary search
	res        *resourceMatch // Options.SubResources; nil when off
	extFilters map[string]Filter
	negotiated map[string]Filter // extension id -> the client's settings
	registry   *ExtensionRegistry
	serverInfo Implementation
	release    time.Duration

	guard guard // kept in the subscription itself: one object, one cache line fewer per message

	mu     sync.Mutex
	worker *Worker
}

// Open opens a subscription for req on src.
//
// It validates req (validateNotifications; a protocol version without
// subscriptions/listen is the internal error "Protocol does not implement
// subscription wire shaping"), narrows the requested filter against
// opts.Capabilities and opts.CanRead, merges in the extensions' filters, and
// calls src.Open with that supported filter. If the source accepts
// notifications that were not supported, the new stream is closed with a
// Failed reason and Open returns the internal error "Subscription source
// accepted notifications not requested".
//
// Errors are *jsonrpc.Error values for the client (match them with errors.Is against
// jsonrpc.ErrInvalidParams, jsonrpc.ErrInternal, ...). ctx is passed to src.Open and is the
// subscription's owner (see Subscription). opts may be nil.
func Open(ctx context.Context, src Source, req *Request, opts *Options) (*Subscription, error) {
	return OpenOwned(ctx, ctx, src, req, opts)
}

// OpenOwned is Open with the owner given apart from ctx: ctx is passed to
// src.Open, Options.CanRead and the extension hooks (so a slow open sees the
// request go away), while owner is what the guard watches for the life of the
// subscription. A nil owner, or one that can never end, leaves the
// subscription without an owner until StartWorker hands one over.
//
// Transports use it when the request's context ends for reasons the stream
// should report itself (net/http cancels a request's context on a failed
// write, which would otherwise race the transport's own Disconnected reason).
func OpenOwned(ctx, owner context.Context, src Source, req *Request, opts *Options) (*Subscription, error) {
	if opts == nil {
		opts = &Options{}
	}
	if req == nil || !req.ID.Valid() {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "Invalid request: subscriptions/listen requires an id")
	}
	if !jsonrpc.HasListen(req.ProtocolVersion) {
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, jsonrpc.MsgNoShaping)
	}
	if err := validateNotifications(req.Notifications); err != nil {
		return nil, err
	}
	if err := checkSize(req.Notifications, opts); err != nil {
		return nil, err
	}
	core, err := narrow(ctx, req, opts)
	if err != nil {
		return nil, err
	}
	supported := core
	extMerged, contributions, err := opts.Extensions.subscriptionFilters(ctx, req, opts.Capabilities)
	if err != nil {
		return nil, err
	}
	if len(extMerged) > 0 {
		supported, err = merge(core, extMerged)
		if err != nil {
			return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, jsonrpc.MsgExtCollideWithCore).WithCause(err)
		}
	}
	if err := checkSettings(req, contributions, opts); err != nil {
		return nil, err
	}
	supported = supported.Clone()

	accepted, stream, err := openSource(sourceContext(ctx, opts), src, req, supported)
	if err != nil {
		return nil, err
	}
	if !accepted.SubsetOf(supported) {
		werr := jsonrpc.NewError(jsonrpc.CodeInternalError, jsonrpc.MsgSourceOverclaimed)
		closeStream(stream, Failed(werr))
		return nil, werr
	}

	s := &Subscription{
		id:         cloneID(req.ID),
		accepted:   keep(accepted, supported),
		registry:   opts.Extensions,
		serverInfo: opts.ServerInfo,
		release:    opts.ReleaseTimeout,
	}
	s.guard.stream = stream
	if s.release <= 0 {
		s.release = DefaultReleaseTimeout
	}
	s.tools = s.accepted.Bool(KeyToolsListChanged)
	s.prompts = s.accepted.Bool(KeyPromptsListChanged)
	s.resources = s.accepted.Bool(KeyResourcesListChanged)
	if _, ok := s.accepted[KeyResourceSubscriptions]; ok {
		s.uris = s.accepted.Strings(KeyResourceSubscriptions)
		if len(s.uris) > smallList {
			// Sorted for binary search: 16 bytes per URI, sharing the
			// accepted filter's strings (a set would cost about three
			// times that).
			s.uris = slices.Clone(s.uris) // Strings may return the filter's own slice
			slices.Sort(s.uris)
			s.uris = slices.Compact(s.uris)
			s.sorted = true
		}
		s.res = newResourceMatch(req, opts, s.uris)
	}
	for id, contrib := range contributions {
		if p := project(s.accepted, contrib); len(p) > 0 {
			if s.extFilters == nil {
				s.extFilters = make(map[string]Filter, len(contributions))
			}
			s.extFilters[id] = p
			if req.ClientExtension(id) {
				if s.negotiated == nil {
					s.negotiated = make(map[string]Filter, len(contributions))
				}
				// The one copy of the settings: every event shares it.
				s.negotiated[strings.Clone(id)] = clientSettings(req, id).Clone()
			}
		}
	}
	s.guard.handOver(owner)
	return s, nil
}

// narrow builds the core filter: the requested core keys the server's
// capabilities allow, with requested false never carried forward.
func narrow(ctx context.Context, req *Request, opts *Options) (Filter, error) {
	f := Filter{}
	caps := opts.Capabilities
	want := req.Notifications
	if want.Bool(KeyToolsListChanged) && caps.ToolsListChanged {
		f[KeyToolsListChanged] = true
	}
	if want.Bool(KeyPromptsListChanged) && caps.PromptsListChanged {
		f[KeyPromptsListChanged] = true
	}
	if want.Bool(KeyResourcesListChanged) && caps.ResourcesListChanged {
		f[KeyResourcesListChanged] = true
	}
	if v, ok := want[KeyResourceSubscriptions]; ok && caps.ResourcesSubscribe {
		if _, isList := asList(v); isList {
			uris := want.Strings(KeyResourceSubscriptions)
			if opts.CanRead != nil {
				kept := make([]string, 0, len(uris))
				for _, u := range uris {
					ok, err := canRead(ctx, opts.CanRead, req, u)
					if err != nil {
						return nil, err
					}
					if ok {
						kept = append(kept, u)
					}
				}
				uris = kept
			}
			list := make([]any, len(uris))
			for i, u := range uris {
				list[i] = u
			}
			f[KeyResourceSubscriptions] = list
		}
	}
	return f, nil
}

// ID returns the listen request's id, which is also the subscription id.
func (s *Subscription) ID() jsonrpc.ID { return s.id }

// Accepted returns the accepted filter, as the acknowledgement echoes it.
// Treat it as read-only.
func (s *Subscription) Accepted() Filter { return s.accepted }

// ErrWorkerRunning is returned by StartWorker while the subscription's
// previous worker goroutine is still running.
var ErrWorkerRunning = errors.New("listen: the subscription's worker is still running")

// StartWorker starts the subscription's worker and hands the subscription to
// owner.
//
// A non-nil owner becomes the subscription's only owner: the watch on the
// previous owner (the ctx given to Open) is released, so that context may
// end without closing the stream, and owner's end now closes it (reason
// Disconnected with cause ErrOwnerGone). An owner that can never end, such
// as context.Background(), leaves the subscription without an owner: only
// Close ends it. A nil owner keeps the current owner. The worker stops when
// its owner ends, on Stop, or when the subscription is closed.
//
// A subscription has one worker at a time: StartWorker returns
// ErrWorkerRunning until the previous worker's goroutine has exited (see
// Worker.Done), and then starts a new one. A worker started after Close
// still works: its pulls answer whatever the closed stream's Next answers
// (ErrClosed, by the Stream contract), so the owner sees OutcomeClosed.
func (s *Subscription) StartWorker(owner context.Context) (*Worker, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.worker != nil {
		select {
		case <-s.worker.done:
		default:
			return nil, ErrWorkerRunning
		}
	}
	s.guard.handOver(owner)
	s.worker = startWorker(s.guard.stream, owner, s.guard.closingChan())
	return s.worker, nil
}

// Close closes the subscription with reason (see Classify): the stream is
// closed exactly once, whether by this call, an earlier one or the owner's
// end, and the worker is stopped. Close returns after the stream's Close has
// returned and the worker goroutine has exited (or ReleaseTimeout passed, for
// a Next that ignores the stream's Close). A nil reason is ErrComplete. A
// Close called from inside the stream's own Close (directly or through
// other code) returns at once without waiting.
func (s *Subscription) Close(reason error) {
	if reason == nil {
		reason = ErrComplete
	}
	_, nested := s.guard.close(reason)
	s.mu.Lock()
	w := s.worker
	s.mu.Unlock()
	if w == nil {
		return
	}
	w.Stop()
	if nested {
		// Called from inside the stream's Close: the worker's Next returns
		// only once that Close has, so waiting here would wait on itself.
		return
	}
	select {
	case <-w.done:
	default:
		t := time.NewTimer(s.release)
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
	defer func() {
		if v := recover(); v != nil {
			ok, err = false, jsonrpc.NewError(jsonrpc.CodeInternalError, jsonrpc.MsgSourceFailedToOpen).WithCause(newPanicError("Options.CanRead", v))
		}
	}()
	return f(ctx, req, uri), nil
}

// cloneID copies id so that the subscription keeps no byte of the request.
func cloneID(id jsonrpc.ID) jsonrpc.ID {
	c, _ := jsonrpc.ParseID([]byte(id.Raw()))
	return c
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
	for _, u := range f.Strings(KeyResourceSubscriptions) {
		if len(u) > maxURI {
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams,
				"subscriptions/listen resourceSubscriptions URIs must be at most "+strconv.Itoa(maxURI)+" bytes")
		}
		if opts.SubResources && resuri.Segments(u) > maxSegments {
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

// keep returns the accepted filter the subscription keeps for its life: the
// supported filter itself when the source accepted it as it is (it is a
// fresh copy that Open gave the source; the hub keeps the same map, so one
// open listen holds one copy of its filter), or a copy of anything else.
func keep(accepted, supported Filter) Filter {
	if len(accepted) > 0 && reflect.ValueOf(accepted).UnsafePointer() == reflect.ValueOf(supported).UnsafePointer() {
		return accepted
	}
	return accepted.Clone()
}
