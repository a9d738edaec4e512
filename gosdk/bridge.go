package gosdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// Options configure a Bridge, and the part of NewHandler and NewStdio
// they share.
type Options struct {
	// Hub is where the go-sdk server's changes are published and the
	// listens are served from. Nil means a new hub.Hub with hub.Options{}
	// (100 events per listener, drop-oldest). Publishing to it yourself
	// (an extension event, a change the go-sdk does not know about) is
	// allowed.
	Hub *hub.Hub
	// Listen configures listen.Open: Extensions, CanRead and
	// ReleaseTimeout are used as given. Its Capabilities and ServerInfo
	// are ignored: they are read from the go-sdk server (see Bridge).
	Listen listen.Options
	// Logger receives the bridge's warnings (a server that advertises
	// nothing a listen can receive, a failed watch) and debug diagnostics.
	// Nil means slog.Default().
	Logger *slog.Logger
	// OnRepublish, if set, is called after each go-sdk notification was
	// republished into the hub (method is its JSON-RPC method, uri is set
	// for notifications/resources/updated), with the hub's report, on the
	// go-sdk goroutine that sent it. It must be quick.
	OnRepublish func(method, uri string, r hub.Report)
	// CallTimeout bounds each call this package makes to the go-sdk server
	// in process (server/discover per listen, resources/subscribe and
	// resources/unsubscribe when a URI gets its first or loses its last
	// watcher): they run the server's own handlers, including your
	// SubscribeHandler. Zero means DefaultCallTimeout.
	CallTimeout time.Duration
}

// DefaultCallTimeout is the default of Options.CallTimeout.
const DefaultCallTimeout = 5 * time.Second

// ClientName is the client name the bridge's in-process sessions give the
// go-sdk server (in server/discover's _meta and in initialize): a
// SubscribeHandler, middleware or Server.Sessions loop may meet them.
const ClientName = "mcplisten-gosdk"

// legacyVersion is the protocol version of the observer session: an
// initialize-era session is told every list change without opting in, and
// may subscribe to resources with resources/subscribe.
const legacyVersion = "2025-11-25"

// Bridge connects a go-sdk *mcp.Server to this library: it serves listens
// from a hub.Hub, with the capabilities and server info the go-sdk server
// advertises, and republishes into that hub every change the go-sdk server
// notifies: list changes after AddTool, RemoveTools, AddPrompt,
// RemovePrompts, AddResource, RemoveResources, AddResourceTemplate and
// RemoveResourceTemplates (after the go-sdk's own 10 ms debounce), and
// Server.ResourceUpdated(uri), to the listens watching that URI only.
//
// NewHandler (HTTP) and NewStdio (stdio) build one; use a Bridge directly to
// serve listens over another transport: its Source and ListenOptions are
// what listen.Open, streamhttp.New or stdio.New take.
//
// # How it works
//
// A Bridge holds two in-process sessions of the go-sdk server, connected
// with Server.Connect over a transport of this package (messages pass as Go
// values; nothing is encoded to bytes, no goroutine is added in between):
//
//   - the observer, an initialize-era (2025-11-25) session: the go-sdk sends
//     such sessions every list change, and sends it
//     notifications/resources/updated for each URI it subscribed to with
//     resources/subscribe. The bridge subscribes to a URI when a listen
//     first watches it and unsubscribes when the last one ends (your
//     SubscribeHandler and UnsubscribeHandler are called then, once per
//     URI, not per listen). Each notification is published into the hub
//     on the go-sdk goroutine that sends it.
//   - the probe, a 2026-07-28 session on which the bridge runs an
//     in-memory server/discover to read the capabilities exactly as
//     server/discover advertises them (inferred or explicit, with whatever
//     tools, prompts and resources are registered). It reads them when the
//     Bridge is made, again at the first listen after any list change (the
//     only changes that can turn an inferred capability on or off), and
//     again, at most once per RefreshInterval, when a listen asks for a
//     kind the last reading did not allow (which also catches a capability
//     turned on before the go-sdk's debounced list change went out). A
//     server/discover costs about 0.5 ms and 215 KB of garbage in the
//     go-sdk (it decodes each _meta value on its own), so listens do not
//     run one each.
//
// Both appear in Server.Sessions, under ClientName. Neither sends
// notifications/initialized, so an InitializedHandler does not see them.
//
// # Lifecycle
//
// NewBridge connects both sessions and reads the server's versions and
// server info; Close ends them (idempotent, waits). Close does not end the
// listens served from the hub: end them with your transport's Shutdown
// first (or Hub.Complete). A Bridge starts no goroutine of its own but one
// per keep-alive ping a session sends it, until answered: the sessions'
// goroutines belong to the go-sdk, and all end with Close.
type Bridge struct {
	server  *mcp.Server
	hub     *hub.Hub
	opts    Options
	log     *slog.Logger
	timeout time.Duration

	observer, probe    *link
	obsSess, probeSess *mcp.ServerSession
	probeMeta          map[string]any
	versions           []string
	info               listen.Implementation
	extensions         map[string]any
	closeOnce          sync.Once

	// snap is the capabilities server/discover last advertised; stale is
	// set by every list change the observer sees (the change that may have
	// turned an inferred capability on or off).
	snap        atomic.Pointer[snapshot]
	stale       atomic.Bool
	refreshMu   sync.Mutex
	emptyWarned atomic.Bool
	probes      atomic.Uint64

	listChanges, updates atomic.Uint64
	subscribes, unsubs   atomic.Uint64
	watchMu              sync.Mutex
	watches              map[string]*watch
}

// snapshot is one server/discover's capabilities.
type snapshot struct {
	caps listen.Capabilities
	raw  json.RawMessage
	at   time.Time
}

// watch is the observer's subscription to one URI, shared by the listens
// watching it.
type watch struct {
	// mu serialises the subscribe and unsubscribe calls for the URI.
	mu sync.Mutex
	// refs counts the listens holding or acquiring it (under Bridge.watchMu).
	refs int
	// subscribed is whether the observer is subscribed (under mu).
	subscribed bool
}

// NewBridge connects to server (see Bridge). It fails if the server does
// not serve protocol version 2026-07-28 (ServerOptions.SupportedProtocolVersions
// left it out) or cannot be reached in process. If the server advertises no
// capability a listen can receive (tools.listChanged, prompts.listChanged,
// resources.listChanged, resources.subscribe), it logs a warning: every
// listen would be acknowledged with an empty filter until it does.
func NewBridge(ctx context.Context, server *mcp.Server, opts Options) (*Bridge, error) {
	if server == nil {
		return nil, errors.New("gosdk: nil *mcp.Server")
	}
	if opts.CallTimeout < 0 {
		return nil, fmt.Errorf("gosdk: negative CallTimeout %v", opts.CallTimeout)
	}
	b := &Bridge{server: server, opts: opts, log: opts.Logger, timeout: opts.CallTimeout, watches: make(map[string]*watch)}
	if b.log == nil {
		b.log = slog.Default()
	}
	if b.timeout == 0 {
		b.timeout = DefaultCallTimeout
	}
	b.hub = opts.Hub
	if b.hub == nil {
		h, err := hub.New(hub.Options{})
		if err != nil {
			return nil, err
		}
		b.hub = h
	}
	b.initProbeMeta()

	b.probe = newLink(nil)
	ps, err := server.Connect(ctx, b.probe, nil)
	if err != nil {
		return nil, fmt.Errorf("gosdk: connecting the in-process probe: %w", err)
	}
	b.probeSess = ps
	d, err := b.discover(ctx)
	if err != nil {
		_ = b.Close()
		var we *jsonrpc.Error
		if errors.As(err, &we) && we.Code == jsonrpc.CodeUnsupportedProtocolVersion {
			return nil, fmt.Errorf("gosdk: the go-sdk server does not serve protocol version %s, which subscriptions/listen needs (ServerOptions.SupportedProtocolVersions): %w", spec.ProtocolVersion, err)
		}
		return nil, fmt.Errorf("gosdk: server/discover: %w", err)
	}
	b.versions = d.Versions
	b.info = d.ServerInfo
	b.extensions = d.Capabilities.Extensions
	b.store(d)

	b.observer = newLink(b.onNotify)
	os, err := server.Connect(ctx, b.observer, nil)
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("gosdk: connecting the in-process observer: %w", err)
	}
	b.obsSess = os
	cctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	_, err = b.observer.call(cctx, "initialize", map[string]any{
		"protocolVersion": legacyVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": ClientName, "version": "0"},
	})
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("gosdk: initializing the in-process observer: %w", err)
	}
	return b, nil
}

// Discovery is what a go-sdk server advertises in server/discover, as far
// as listens are concerned.
type Discovery struct {
	// Capabilities are the capabilities, read with listen.CapabilitiesFrom.
	Capabilities listen.Capabilities
	// CapabilitiesJSON is the capabilities object exactly as advertised.
	CapabilitiesJSON json.RawMessage
	// Versions are the supported protocol versions, newest first.
	Versions []string
	// ServerInfo is the server's implementation (_meta
	// io.modelcontextprotocol/serverInfo).
	ServerInfo listen.Implementation
}

// Discover runs an in-memory server/discover on server (a session of its
// own, closed before Discover returns) and returns what it advertises. It is
// exact however the capabilities came about: go-sdk v1.8.0 has no exported
// accessor for them, and infers tools, prompts and resources from what is
// registered unless ServerOptions.Capabilities sets them.
func Discover(ctx context.Context, server *mcp.Server) (*Discovery, error) {
	if server == nil {
		return nil, errors.New("gosdk: nil *mcp.Server")
	}
	b := &Bridge{timeout: DefaultCallTimeout}
	b.probe = newLink(nil)
	ss, err := server.Connect(ctx, b.probe, nil)
	if err != nil {
		return nil, err
	}
	defer func() {
		_ = ss.Close()
		_ = ss.Wait()
		_ = b.probe.Close()
	}()
	b.initProbeMeta()
	d, err := b.discover(ctx)
	if err != nil {
		return nil, err
	}
	return &d, nil
}

func (b *Bridge) initProbeMeta() {
	b.probeMeta = map[string]any{
		spec.MetaProtocolVersion:    spec.ProtocolVersion,
		spec.MetaClientCapabilities: map[string]any{},
		spec.MetaClientInfo:         map[string]any{"name": ClientName, "version": "0"},
	}
}

// discover runs server/discover on the probe session.
func (b *Bridge) discover(ctx context.Context) (Discovery, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	res, err := b.probe.call(ctx, "server/discover", map[string]any{"_meta": b.probeMeta})
	if err != nil {
		return Discovery{}, err
	}
	var r struct {
		Meta struct {
			ServerInfo *listen.Implementation `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return Discovery{}, fmt.Errorf("gosdk: decoding server/discover: %w", err)
	}
	caps, err := listen.CapabilitiesFrom(r.Capabilities)
	if err != nil {
		return Discovery{}, err
	}
	d := Discovery{Capabilities: caps, CapabilitiesJSON: r.Capabilities, Versions: r.SupportedVersions}
	if r.Meta.ServerInfo != nil {
		d.ServerInfo = *r.Meta.ServerInfo
	}
	return d, nil
}

// RefreshInterval is the shortest time between two readings of the
// capabilities caused by listens asking for a kind the last reading did not
// allow (see Bridge): it bounds what such listens can cost. It equals the
// go-sdk's debounce of list changes.
const RefreshInterval = 10 * time.Millisecond

// Capabilities returns the capabilities the go-sdk server advertises in
// server/discover right now, read with an in-memory server/discover.
func (b *Bridge) Capabilities(ctx context.Context) (listen.Capabilities, error) {
	d, err := b.discover(ctx)
	if err == nil {
		b.store(d)
	}
	return d.Capabilities, err
}

// store keeps d as the last reading of the capabilities, and warns if it
// allows no listen anything.
func (b *Bridge) store(d Discovery) {
	b.snap.Store(&snapshot{caps: d.Capabilities, raw: d.CapabilitiesJSON, at: time.Now()})
	b.probes.Add(1)
	c := d.Capabilities
	if c.ToolsListChanged || c.PromptsListChanged || c.ResourcesListChanged || c.ResourcesSubscribe {
		b.emptyWarned.Store(false)
		return
	}
	b.warnEmpty(d.CapabilitiesJSON)
}

// caps returns the capabilities to narrow a listen requesting f against:
// the last reading, read again first if a list change happened since, or if
// f asks for a kind it does not allow and it is older than RefreshInterval.
// Concurrent listens share one reading.
func (b *Bridge) caps(ctx context.Context, f listen.Filter) (listen.Capabilities, error) {
	s := b.snap.Load()
	if !b.stale.Load() && (allows(s.caps, f) || time.Since(s.at) < RefreshInterval) {
		return s.caps, nil
	}
	asked := time.Now()
	b.refreshMu.Lock()
	defer b.refreshMu.Unlock()
	if s := b.snap.Load(); s.at.After(asked) {
		return s.caps, nil // read by another listen while this one waited
	}
	b.stale.Store(false)
	d, err := b.discover(ctx)
	if err != nil {
		b.stale.Store(true)
		return listen.Capabilities{}, err
	}
	b.store(d)
	return d.Capabilities, nil
}

// Versions returns the protocol versions the go-sdk server supports, as its
// server/discover lists them (newest first).
func (b *Bridge) Versions() []string { return slices.Clone(b.versions) }

// ServerInfo returns the go-sdk server's implementation, as server/discover
// reports it.
func (b *Bridge) ServerInfo() listen.Implementation { return b.info }

// Hub returns the hub the listens are served from.
func (b *Bridge) Hub() *hub.Hub { return b.hub }

// Source returns the listen.Source to serve listens from: the hub, each
// listen narrowed against the capabilities server/discover advertises when
// it opens, and the URIs it watches subscribed to on the go-sdk server.
// Serve it with ListenOptions.
func (b *Bridge) Source() listen.Source { return (*source)(b) }

// ListenOptions returns the listen.Options to serve Source with: base (as
// Options.Listen) with the server's info, and capabilities that let every
// core key through to Source, which narrows each listen against the live
// capabilities itself.
func (b *Bridge) ListenOptions() listen.Options {
	o := b.opts.Listen
	o.ServerInfo = b.info
	o.Capabilities = listen.Capabilities{
		ToolsListChanged:     true,
		PromptsListChanged:   true,
		ResourcesListChanged: true,
		ResourcesSubscribe:   true,
		Extensions:           b.extensions,
	}
	return o
}

// Stats is a snapshot of a Bridge's counters.
type Stats struct {
	// ListChanges and ResourceUpdates count the go-sdk notifications
	// republished into the hub.
	ListChanges, ResourceUpdates uint64
	// Discovers counts the in-memory server/discover calls that read the
	// capabilities.
	Discovers uint64
	// Watched is the number of URIs the observer is subscribed to (or
	// being subscribed to) for open listens.
	Watched int
	// Subscribes and Unsubscribes count the observer's calls.
	Subscribes, Unsubscribes uint64
}

// Stats returns the Bridge's counters.
func (b *Bridge) Stats() Stats {
	b.watchMu.Lock()
	n := len(b.watches)
	b.watchMu.Unlock()
	return Stats{
		ListChanges:     b.listChanges.Load(),
		ResourceUpdates: b.updates.Load(),
		Discovers:       b.probes.Load(),
		Watched:         n,
		Subscribes:      b.subscribes.Load(),
		Unsubscribes:    b.unsubs.Load(),
	}
}

// Close ends both in-process sessions and waits for their goroutines. It is
// idempotent. Listens still served from the hub are not ended (see Bridge).
func (b *Bridge) Close() error {
	b.closeOnce.Do(func() {
		for _, s := range []*mcp.ServerSession{b.obsSess, b.probeSess} {
			if s != nil {
				_ = s.Close()
				_ = s.Wait()
			}
		}
		for _, l := range []*link{b.observer, b.probe} {
			if l != nil {
				_ = l.Close()
			}
		}
	})
	return nil
}

// onNotify republishes one go-sdk notification into the hub. It runs on the
// go-sdk goroutine that sent it.
func (b *Bridge) onNotify(method string, params json.RawMessage) {
	var (
		r   hub.Report
		uri string
	)
	switch method {
	case spec.MethodToolsListChanged, spec.MethodPromptsListChanged, spec.MethodResourcesListChanged:
		b.stale.Store(true)
	}
	switch method {
	case spec.MethodToolsListChanged:
		r = b.hub.ToolsListChanged()
		b.listChanges.Add(1)
	case spec.MethodPromptsListChanged:
		r = b.hub.PromptsListChanged()
		b.listChanges.Add(1)
	case spec.MethodResourcesListChanged:
		r = b.hub.ResourcesListChanged()
		b.listChanges.Add(1)
	case spec.MethodResourceUpdated:
		var p struct {
			URI string `json:"uri"`
		}
		if err := json.Unmarshal(params, &p); err != nil || p.URI == "" {
			b.log.Warn("gosdk: resources/updated without a uri", "params", string(params))
			return
		}
		var err error
		if r, err = b.hub.ResourceUpdated(p.URI); err != nil {
			b.log.Warn("gosdk: resources/updated not republished", "uri", p.URI, "err", err)
			return
		}
		b.updates.Add(1)
		uri = p.URI
	default:
		return // logging and other notifications of an observer: not for listens
	}
	b.log.Debug("gosdk: republished", "method", method, "uri", uri, "matched", r.Matched, "delivered", r.Delivered, "dropped", r.Dropped)
	if b.opts.OnRepublish != nil {
		b.opts.OnRepublish(method, uri, r)
	}
}

// warnEmpty reports a server that advertises nothing a listen can receive.
// It warns once until the server advertises something again.
func (b *Bridge) warnEmpty(raw json.RawMessage) {
	if b.emptyWarned.Swap(true) {
		return
	}
	b.log.Warn("gosdk: the go-sdk server advertises no capability a listen can receive "+
		"(tools.listChanged, prompts.listChanged, resources.listChanged or resources.subscribe): "+
		"every subscriptions/listen is acknowledged with an empty filter until it does "+
		"(register a tool, prompt or resource, or set ServerOptions.Capabilities)",
		"capabilities", string(raw))
}
