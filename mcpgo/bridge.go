package mcpgo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/capcache"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// Options configure a Bridge, and the part of NewHandler and NewStdio they
// share.
type Options struct {
	// Hub is where the mcp-go server's changes are published and the
	// listens are served from. Nil means a new hub.Hub with hub.Options{}
	// (100 events per listener, drop-oldest). Publishing to it yourself
	// (an extension event, a change mcp-go does not broadcast) is allowed.
	Hub *hub.Hub
	// Listen configures listen.Open. Every field is used as given
	// (Extensions, CanRead, MaxURIBytes, MaxFilterBytes, MaxIDBytes,
	// MaxSettingsBytes, MaxURISegments, SubResources, Scopes, MaxLifetime,
	// LifetimeJitter, Access, Disabled, EndWithError, ReleaseTimeout) but
	// Capabilities, CapabilitiesFor and ServerInfo: they are read from the
	// mcp-go server (see Bridge), and Capabilities set here that differ
	// from what the server advertises are logged as a warning.
	Listen listen.Options
	// Logger receives the bridge's warnings (a server that advertises
	// nothing a listen can receive, a capability turned off, a broadcast
	// it cannot read) and debug diagnostics. Nil means slog.Default().
	Logger *slog.Logger
	// OnRepublish, if set, is called after each mcp-go broadcast was
	// republished into the hub (method is its JSON-RPC method, uri is set
	// for notifications/resources/updated), with the hub's report, on the
	// Bridge's goroutine. It must be quick, and must not broadcast on the
	// mcp-go server itself.
	OnRepublish func(method, uri string, r hub.Report)
}

// ClientName is the client name of the bridge's in-process server/discover
// (in its _meta clientInfo), which mcp-go's hooks (OnBeforeAny,
// OnRequestInitialization, ...) see.
const ClientName = "mcplisten-mcpgo"

// bridgeKey marks the context of the bridge's own requests.
type bridgeKey struct{}

// FromBridge reports whether ctx is that of one of the Bridge's in-process
// requests (its server/discover). An mcp-go hook that refuses requests
// (without a token, say) must let them through:
//
//	hooks.AddOnRequestInitialization(func(ctx context.Context, id any, msg any) error {
//		if mcpgo.FromBridge(ctx) || authorized(ctx) {
//			return nil
//		}
//		return errors.New("unauthorized")
//	})
//
// No client request carries the mark: it is a context value, not a field.
func FromBridge(ctx context.Context) bool {
	v, _ := ctx.Value(bridgeKey{}).(bool)
	return v
}

// SessionIDPrefix begins the session id of the bridge's observer session,
// which OnRegisterSession and OnUnregisterSession hooks see.
const SessionIDPrefix = "mcplisten-observer-"

// RefreshInterval is the shortest time between two readings of the
// capabilities caused by listens asking for a kind the last reading did not
// allow (see Bridge): it bounds what such listens can cost.
const RefreshInterval = 10 * time.Millisecond

// observerSeq numbers the observer sessions of a process.
var observerSeq atomic.Uint64

// Bridge connects an mcp-go *server.MCPServer to this library: it serves
// listens from a hub.Hub, with the capabilities and server info the mcp-go
// server advertises in server/discover, and republishes into that hub every
// broadcast of the mcp-go server that a listen can receive: the list
// changes of AddTool(s), SetTools, DeleteTools, AddPrompt(s), SetPrompts,
// DeletePrompts, AddResource(s), SetResources, DeleteResources,
// RemoveResource and the resource-template equivalents (mcp-go sends them
// when the capability's listChanged is on, at once: it has no debounce),
// and SendNotificationToAllClients("notifications/resources/updated",
// {"uri": ...}), to exactly the listens covering that URI (exact and
// folder listens alike; see listen.Options.SubResources). Each reaches a
// listen once.
//
// NewHandler (HTTP) and NewStdio build one; use a Bridge directly to serve
// listens over another transport: its Source and ListenOptions are what
// listen.Open, streamhttp.New or stdio.New take.
//
// # How it works
//
// A Bridge registers one session of its own with the mcp-go server
// (RegisterSession; its id begins with SessionIDPrefix), initialized and
// unfiltered, to which mcp-go hands every broadcast, on the broadcasting
// goroutine. The bridge takes each off that session's queue on a goroutine
// of its own and publishes it into the hub. mcp-go drops a notification a
// session's queue has no room for; the bridge's session never lets that
// happen: a broadcast waits for room instead (see the package
// documentation, No silent loss).
//
// The capabilities are read with an in-memory server/discover
// (MCPServer.HandleMessage, which runs the server's hooks; the request
// names ClientName). They are read when the Bridge is made, again at the
// first listen after any list change (mcp-go turns tools.listChanged on in
// the first AddTool, for one), and again, at most once per
// RefreshInterval, when a listen asks for a kind the last reading did not
// allow (which catches a capability turned on without a broadcast, as
// AddSessionTool does). A reading that turns a capability off is logged as
// a warning, one that turns one on at Info.
//
// # Lifecycle
//
// NewBridge registers the session and starts the goroutine; Close
// unregisters the session and ends the goroutine (idempotent, waits). Close
// does not end the listens served from the hub: end them with your
// transport's Shutdown first (or Hub.Shutdown).
type Bridge struct {
	server *server.MCPServer
	hub    *hub.Hub
	opts   Options
	log    *slog.Logger
	obs    *observer

	versions  []string
	info      listen.Implementation
	closeOnce sync.Once

	// caps is the capabilities server/discover last advertised, told of
	// every list change the observer sees.
	caps *capcache.Cache

	listChanges, updates, ignored atomic.Uint64
}

// NewBridge connects to s (see Bridge). It fails if the server does not
// answer server/discover (a hook refused it, for one). If the server
// advertises no capability a listen can receive (tools.listChanged,
// prompts.listChanged, resources.listChanged, resources.subscribe), it logs
// a warning: every listen is acknowledged with an empty filter until it
// does.
func NewBridge(ctx context.Context, s *server.MCPServer, opts Options) (*Bridge, error) {
	if s == nil {
		return nil, errors.New("mcpgo: nil *server.MCPServer")
	}
	b := &Bridge{server: s, opts: opts, log: opts.Logger}
	if b.log == nil {
		b.log = slog.Default()
	}
	b.hub = opts.Hub
	if b.hub == nil {
		h, err := hub.New(hub.Options{})
		if err != nil {
			return nil, err
		}
		b.hub = h
	}
	d, err := discover(ctx, s)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(d.Versions, spec.ProtocolVersion) {
		return nil, fmt.Errorf("mcpgo: the mcp-go server does not serve protocol version %s, which subscriptions/listen needs (it lists %v)", spec.ProtocolVersion, d.Versions)
	}
	b.versions = d.Versions
	b.info = d.ServerInfo
	b.caps = capcache.New(d.reading(), capcache.Options{
		Read: func(ctx context.Context) (capcache.Reading, error) {
			d, err := discover(ctx, s)
			return d.reading(), err
		},
		Refresh: RefreshInterval,
		OnStore: b.logChange,
		OnEmpty: b.warnEmpty,
	})
	b.warnIgnored(d.Capabilities)

	b.obs = newObserver(SessionIDPrefix+strconv.FormatUint(observerSeq.Add(1), 10), observerQueue, b.onNotify)
	b.obs.start()
	if err := s.RegisterSession(ctx, b.obs); err != nil {
		b.obs.stop()
		return nil, fmt.Errorf("mcpgo: registering the observer session: %w", err)
	}
	return b, nil
}

// Discovery is what an mcp-go server advertises in server/discover, as far
// as listens are concerned.
type Discovery struct {
	// Capabilities are the capabilities, read with listen.CapabilitiesFrom.
	Capabilities listen.Capabilities
	// CapabilitiesJSON is the capabilities object exactly as advertised.
	CapabilitiesJSON json.RawMessage
	// Versions are the supported protocol versions, newest first, as
	// server/discover lists them outside any transport (every version
	// mcp-go implements; a transport may serve fewer).
	Versions []string
	// ServerInfo is the server's implementation (_meta
	// io.modelcontextprotocol/serverInfo).
	ServerInfo listen.Implementation
}

// Discover runs an in-memory server/discover on s and returns what it
// advertises: exactly the capabilities a client reads, however they came
// about (mcp-go turns some on as tools, prompts and resources are
// registered).
func Discover(ctx context.Context, s *server.MCPServer) (*Discovery, error) {
	if s == nil {
		return nil, errors.New("mcpgo: nil *server.MCPServer")
	}
	d, err := discover(ctx, s)
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// discoverRequest is the bridge's server/discover.
var discoverRequest = func() json.RawMessage {
	b, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": string(mcp.MethodServerDiscover),
		"params": map[string]any{"_meta": map[string]any{
			spec.MetaProtocolVersion:    spec.ProtocolVersion,
			spec.MetaClientCapabilities: map[string]any{},
			spec.MetaClientInfo:         map[string]any{"name": ClientName, "version": "0"},
		}},
	})
	if err != nil {
		panic(err)
	}
	return b
}()

// discover runs server/discover on s with HandleMessage.
func discover(ctx context.Context, s *server.MCPServer) (Discovery, error) {
	resp := s.HandleMessage(context.WithValue(ctx, bridgeKey{}, true), discoverRequest)
	raw, err := json.Marshal(resp)
	if err != nil {
		return Discovery{}, fmt.Errorf("mcpgo: server/discover: encoding the answer: %w", err)
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return Discovery{}, fmt.Errorf("mcpgo: server/discover: decoding the answer: %w", err)
	}
	if r.Error != nil {
		return Discovery{}, fmt.Errorf("mcpgo: the mcp-go server refused the bridge's in-process server/discover (a hook refusing requests must let those for which mcpgo.FromBridge(ctx) is true through): %w", r.Error)
	}
	if len(r.Result) == 0 || string(r.Result) == "null" {
		return Discovery{}, fmt.Errorf("mcpgo: server/discover: no result in %s", raw)
	}
	d, err := capcache.Parse(r.Result)
	if err != nil {
		return Discovery{}, fmt.Errorf("mcpgo: server/discover: %w", err)
	}
	return Discovery{Capabilities: d.Caps, CapabilitiesJSON: d.JSON, Versions: d.Versions, ServerInfo: d.ServerInfo}, nil
}

// Capabilities returns the capabilities the mcp-go server advertises in
// server/discover right now, read with an in-memory server/discover.
func (b *Bridge) Capabilities(ctx context.Context) (listen.Capabilities, error) {
	r, err := b.caps.Read(ctx)
	return r.Caps, err
}

// reading is d as a reading of the capabilities.
func (d Discovery) reading() capcache.Reading {
	return capcache.Reading{Caps: d.Capabilities, JSON: d.CapabilitiesJSON}
}

// logChange logs what a reading turned on or off.
func (b *Bridge) logChange(prev *capcache.Reading, next capcache.Reading) {
	if prev == nil {
		return
	}
	on, off := diffKinds(prev.Caps, next.Caps)
	if len(off) > 0 {
		b.log.Warn("mcpgo: the mcp-go server stopped advertising a capability: listens acknowledged with it receive no more of it, new listens are acknowledged without it",
			"off", off, "capabilities", string(next.JSON))
	}
	if len(on) > 0 {
		b.log.Info("mcpgo: the mcp-go server advertises a new capability", "on", on, "capabilities", string(next.JSON))
	}
}

// warnEmpty reports a server that advertises nothing a listen can receive
// (once until it advertises something again: see capcache.Options).
func (b *Bridge) warnEmpty(r capcache.Reading) {
	b.log.Warn("mcpgo: the mcp-go server advertises no capability a listen can receive "+
		"(tools.listChanged, prompts.listChanged, resources.listChanged or resources.subscribe): "+
		"every subscriptions/listen is acknowledged with an empty filter until it does "+
		"(server.WithToolCapabilities(true), WithPromptCapabilities(true), WithResourceCapabilities(true, true), or AddTool)",
		"capabilities", string(r.JSON))
}

// kinds names the listen-relevant capabilities, in a fixed order.
var kinds = []struct {
	name string
	get  func(listen.Capabilities) bool
}{
	{"tools.listChanged", func(c listen.Capabilities) bool { return c.ToolsListChanged }},
	{"prompts.listChanged", func(c listen.Capabilities) bool { return c.PromptsListChanged }},
	{"resources.listChanged", func(c listen.Capabilities) bool { return c.ResourcesListChanged }},
	{"resources.subscribe", func(c listen.Capabilities) bool { return c.ResourcesSubscribe }},
}

// diffKinds names the capabilities next turns on and off against prev.
func diffKinds(prev, next listen.Capabilities) (on, off []string) {
	for _, k := range kinds {
		switch a, b := k.get(prev), k.get(next); {
		case !a && b:
			on = append(on, k.name)
		case a && !b:
			off = append(off, k.name)
		}
	}
	return on, off
}

// warnIgnored warns about Options.Listen.Capabilities that differ from what
// the server advertises: they are not used.
func (b *Bridge) warnIgnored(advertised listen.Capabilities) {
	c := b.opts.Listen.Capabilities
	if (capcache.Reading{Caps: c}).Empty() {
		return // not set
	}
	if on, off := diffKinds(c, advertised); len(on)+len(off) == 0 {
		return
	}
	b.log.Warn("mcpgo: Options.Listen.Capabilities differ from what the mcp-go server advertises in server/discover and are ignored: listens are acknowledged against the server's own",
		"advertised", string(b.caps.Last().JSON))
}

// Versions returns the protocol versions the mcp-go server supports, as its
// server/discover lists them (newest first).
func (b *Bridge) Versions() []string { return slices.Clone(b.versions) }

// ServerInfo returns the mcp-go server's implementation, as server/discover
// reports it.
func (b *Bridge) ServerInfo() listen.Implementation { return b.info }

// Hub returns the hub the listens are served from.
func (b *Bridge) Hub() *hub.Hub { return b.hub }

// Source returns the listen.Source to serve listens from: the hub. Serve it
// with ListenOptions, which narrows each listen against the capabilities
// server/discover advertises when it opens.
func (b *Bridge) Source() listen.Source { return b.hub }

// ListenOptions returns the listen.Options to serve Source with:
// Options.Listen with the server's info, and, as CapabilitiesFor, the
// capabilities the mcp-go server advertises in server/discover when a
// listen opens (see Bridge: a reading shared by the listens, taken again
// after a list change).
func (b *Bridge) ListenOptions() listen.Options {
	return b.caps.ListenOptions(b.opts.Listen, b.info)
}

// Stats is a snapshot of a Bridge's counters.
type Stats struct {
	// ListChanges and ResourceUpdates count the mcp-go broadcasts
	// republished into the hub.
	ListChanges, ResourceUpdates uint64
	// Ignored counts the broadcasts no listen can receive (task status,
	// your own methods, a resources/updated without a string uri).
	Ignored uint64
	// Discovers counts the in-memory server/discover calls that read the
	// capabilities.
	Discovers uint64
}

// Stats returns the Bridge's counters.
func (b *Bridge) Stats() Stats {
	return Stats{
		ListChanges:     b.listChanges.Load(),
		ResourceUpdates: b.updates.Load(),
		Ignored:         b.ignored.Load(),
		Discovers:       b.caps.Reads(),
	}
}

// ResourceUpdated tells everyone watching uri that the resource changed,
// each exactly once: it is mcp-go's SendNotificationToAllClients of
// notifications/resources/updated {"uri": uri}, which mcp-go hands its own
// sessions (clients of earlier versions) and the Bridge republishes to
// every listen whose filter covers uri (naming it, or a folder above it
// with listen.Options.SubResources), and it returns once the listens have
// it (see Flush). Calling SendNotificationToAllClients yourself does the
// same, but for that wait. It fails for an empty uri.
func (b *Bridge) ResourceUpdated(_ context.Context, uri string) error {
	if uri == "" {
		return errors.New("mcpgo: ResourceUpdated: empty uri")
	}
	b.server.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": uri})
	b.Flush()
	return nil
}

// Flush returns once every broadcast the mcp-go server made before the
// call has been published into the hub.
func (b *Bridge) Flush() { b.obs.flush() }

// drain is the first step of a transport's Shutdown: every broadcast made
// before it reaches the hub, and the hub is shut down, so that each stream
// is handed what is queued for it before its completion (a transport's
// Shutdown alone writes the completion at once). It returns ctx's error if
// the streams did not all end in time.
func (b *Bridge) drain(ctx context.Context) error {
	b.Flush()
	return b.hub.Shutdown(ctx)
}

// Close unregisters the observer session and ends its goroutine. It is
// idempotent. Listens still served from the hub are not ended (see Bridge).
func (b *Bridge) Close() error {
	b.closeOnce.Do(func() {
		b.server.UnregisterSession(context.Background(), b.obs.id)
		b.obs.stop()
	})
	return nil
}

// onNotify republishes one mcp-go broadcast into the hub. It runs on the
// observer's goroutine.
func (b *Bridge) onNotify(n mcp.JSONRPCNotification) {
	var (
		r   hub.Report
		uri string
	)
	switch n.Method {
	case mcp.MethodNotificationToolsListChanged:
		b.caps.Changed()
		r = b.hub.ToolsListChanged()
		b.listChanges.Add(1)
	case mcp.MethodNotificationPromptsListChanged:
		b.caps.Changed()
		r = b.hub.PromptsListChanged()
		b.listChanges.Add(1)
	case mcp.MethodNotificationResourcesListChanged:
		b.caps.Changed()
		r = b.hub.ResourcesListChanged()
		b.listChanges.Add(1)
	case mcp.MethodNotificationResourceUpdated:
		uri, _ = n.Params.AdditionalFields["uri"].(string)
		if uri == "" {
			b.ignored.Add(1)
			b.log.Warn("mcpgo: notifications/resources/updated without a string uri not republished", "params", n.Params.AdditionalFields)
			return
		}
		var err error
		if r, err = b.hub.ResourceUpdated(uri); err != nil {
			b.ignored.Add(1)
			b.log.Warn("mcpgo: notifications/resources/updated not republished", "uri", uri, "err", err)
			return
		}
		b.updates.Add(1)
	default:
		b.ignored.Add(1)
		return // task status, logging and methods of your own: not for listens
	}
	b.log.Debug("mcpgo: republished", "method", n.Method, "uri", uri, "matched", r.Matched, "delivered", r.Delivered, "dropped", r.Dropped)
	if b.opts.OnRepublish != nil {
		b.opts.OnRepublish(n.Method, uri, r)
	}
}
