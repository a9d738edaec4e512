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

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/capcache"
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
	// Listen configures listen.Open. Every field is used as given
	// (Extensions, CanRead, MaxURIBytes, MaxFilterBytes, MaxIDBytes,
	// MaxSettingsBytes, MaxURISegments, SubResources, Scopes, MaxLifetime,
	// LifetimeJitter, Access, Disabled, EndWithError, ReleaseTimeout) but
	// Capabilities, CapabilitiesFor and ServerInfo, which are ignored: they
	// are read from the go-sdk server (see Bridge).
	Listen listen.Options
	// Logger receives the bridge's warnings (a server that advertises
	// nothing a listen can receive, resources without resources.subscribe)
	// and debug diagnostics.
	// Nil means slog.Default().
	Logger *slog.Logger
	// OnRepublish, if set, is called after each change was published into
	// the hub: a go-sdk list change (method is its JSON-RPC method, on the
	// go-sdk goroutine that sent it) or a Bridge.ResourceUpdated call
	// (method notifications/resources/updated, uri set, on the caller's
	// goroutine), with the hub's report. It must be quick.
	OnRepublish func(method, uri string, r hub.Report)
	// CallTimeout bounds each call this package makes to the go-sdk server
	// in process: the observer's initialize and each server/discover that
	// reads the capabilities (see Bridge). Zero means DefaultCallTimeout.
	CallTimeout time.Duration
	// Token is the auth.TokenInfo of those in-process calls
	// (RequestExtra.TokenInfo), so that a receiving middleware that refuses
	// requests without a token lets them through. Nil means BridgeToken: a
	// TokenInfo with UserID ClientName and no scopes or expiration; give a
	// token your middleware accepts if it checks more (scopes, expiry).
	Token *auth.TokenInfo
}

// DefaultCallTimeout is the default of Options.CallTimeout.
const DefaultCallTimeout = 5 * time.Second

// ClientName is the client name the bridge's in-process sessions give the
// go-sdk server (in server/discover's _meta and in initialize) and the
// UserID of BridgeToken: a middleware or Server.Sessions loop may meet
// them.
const ClientName = "mcplisten-gosdk"

// BridgeToken returns the default Options.Token: a TokenInfo with UserID
// ClientName, and no scopes, expiration or extra.
func BridgeToken() *auth.TokenInfo { return &auth.TokenInfo{UserID: ClientName} }

// legacyVersion is the protocol version of the observer session: an
// initialize-era session is told every list change without opting in.
const legacyVersion = "2025-11-25"

// Bridge connects a go-sdk *mcp.Server to this library: it serves listens
// from a hub.Hub, with the capabilities and server info the go-sdk server
// advertises, republishes into that hub every list change the go-sdk server
// notifies (after AddTool, RemoveTools, AddPrompt, RemovePrompts,
// AddResource, RemoveResources, AddResourceTemplate and
// RemoveResourceTemplates, once the go-sdk's own 10 ms debounce has passed),
// and tells everyone of a resource update with one call, ResourceUpdated.
//
// NewHandler (HTTP) and NewStdio (stdio) build one; use a Bridge directly to
// serve listens over another transport: its Source and ListenOptions are
// what listen.Open, streamhttp.New or stdio.New take.
//
// # How it works
//
// A Bridge holds two in-process sessions of the go-sdk server, connected
// with Server.Connect over a transport of this package (messages pass as Go
// values; nothing is encoded to bytes, no goroutine is added in between).
// Every request it sends them carries Options.Token as its TokenInfo.
//
//   - the observer, an initialize-era (2025-11-25) session: the go-sdk sends
//     such sessions every list change, which the bridge publishes into the
//     hub on the go-sdk goroutine that sends it.
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
// A listen's resource URIs cost the go-sdk nothing: they live in the hub's
// index only (your SubscribeHandler is not called for them; authorise them
// with listen.Options.CanRead). Both sessions appear in Server.Sessions,
// under ClientName. Neither sends notifications/initialized, so an
// InitializedHandler does not see them.
//
// # Lifecycle
//
// NewBridge connects both sessions and reads the server's versions and
// server info; Close ends them (idempotent, waits). Close does not end the
// listens served from the hub: end them with your transport's Shutdown
// first (or Hub.Shutdown). A Bridge starts no goroutine of its own but one
// per keep-alive ping a session sends it, until answered: the sessions'
// goroutines belong to the go-sdk, and all end with Close.
type Bridge struct {
	server  *mcp.Server
	hub     *hub.Hub
	opts    Options
	log     *slog.Logger
	timeout time.Duration
	token   *auth.TokenInfo

	observer, probe    *link
	obsSess, probeSess *mcp.ServerSession
	probeMeta          map[string]any
	versions           []string
	info               listen.Implementation
	closeOnce          sync.Once

	// caps is the capabilities server/discover last advertised, told of
	// every list change the observer sees (the change that may have turned
	// an inferred capability on or off).
	caps      *capcache.Cache
	subWarned atomic.Bool

	listChanges, updates atomic.Uint64
}

// NewBridge connects to server (see Bridge). It fails if the server does
// not serve protocol version 2026-07-28 (ServerOptions.SupportedProtocolVersions
// left it out) or cannot be reached in process (a receiving middleware that
// refuses the bridge's calls: see Options.Token). It logs a warning if the
// server advertises no capability a listen can receive (tools.listChanged,
// prompts.listChanged, resources.listChanged, resources.subscribe): every
// listen would be acknowledged with an empty filter until it does; and one
// if it advertises resources without resources.subscribe (no
// ServerOptions.SubscribeHandler): listens would be acknowledged without
// their resourceSubscriptions.
func NewBridge(ctx context.Context, server *mcp.Server, opts Options) (*Bridge, error) {
	if server == nil {
		return nil, errors.New("gosdk: nil *mcp.Server")
	}
	if opts.CallTimeout < 0 {
		return nil, fmt.Errorf("gosdk: negative CallTimeout %v", opts.CallTimeout)
	}
	b := &Bridge{server: server, opts: opts, log: opts.Logger, timeout: opts.CallTimeout, token: opts.Token}
	if b.log == nil {
		b.log = slog.Default()
	}
	if b.timeout == 0 {
		b.timeout = DefaultCallTimeout
	}
	if b.token == nil {
		b.token = BridgeToken()
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

	b.probe = newLink(nil, b.token)
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
			return nil, fmt.Errorf("gosdk: the go-sdk server does not serve protocol version %s, which subscriptions/listen needs (ServerOptions.SupportedProtocolVersions): its server/discover answered %w", spec.ProtocolVersion, we)
		}
		return nil, fmt.Errorf("%w (the bridge's in-process calls carry Options.Token; a receiving middleware must let them through)", err)
	}
	b.versions = d.Versions
	b.info = d.ServerInfo
	b.caps = capcache.New(d.reading(), capcache.Options{
		Read: func(ctx context.Context) (capcache.Reading, error) {
			d, err := b.discover(ctx)
			return d.reading(), err
		},
		Refresh: RefreshInterval,
		OnStore: b.warnSubscribe,
		OnEmpty: b.warnEmpty,
	})

	b.observer = newLink(b.onNotify, b.token)
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
		return nil, fmt.Errorf("%w (the in-process observer's initialize; its calls carry Options.Token)", err)
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
	b := &Bridge{timeout: DefaultCallTimeout, token: BridgeToken()}
	b.probe = newLink(nil, b.token)
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
	d, err := capcache.Parse(res)
	if err != nil {
		return Discovery{}, fmt.Errorf("gosdk: server/discover: %w", err)
	}
	return Discovery{Capabilities: d.Caps, CapabilitiesJSON: d.JSON, Versions: d.Versions, ServerInfo: d.ServerInfo}, nil
}

// RefreshInterval is the shortest time between two readings of the
// capabilities caused by listens asking for a kind the last reading did not
// allow (see Bridge): it bounds what such listens can cost. It equals the
// go-sdk's debounce of list changes.
const RefreshInterval = 10 * time.Millisecond

// Capabilities returns the capabilities the go-sdk server advertises in
// server/discover right now, read with an in-memory server/discover.
func (b *Bridge) Capabilities(ctx context.Context) (listen.Capabilities, error) {
	r, err := b.caps.Read(ctx)
	return r.Caps, err
}

// reading is d as a reading of the capabilities.
func (d Discovery) reading() capcache.Reading {
	return capcache.Reading{Caps: d.Capabilities, JSON: d.CapabilitiesJSON}
}

// warnSubscribe warns, once, of a reading that advertises resources that
// listens cannot subscribe to.
func (b *Bridge) warnSubscribe(_ *capcache.Reading, r capcache.Reading) {
	if r.Caps.ResourcesSubscribe || !hasResources(r.JSON) || b.subWarned.Swap(true) {
		return
	}
	b.log.Warn("gosdk: the go-sdk server has resources but does not advertise resources.subscribe: "+
		"every subscriptions/listen is acknowledged without its resourceSubscriptions "+
		"(set ServerOptions.SubscribeHandler and UnsubscribeHandler, even ones that only return nil, "+
		"or Capabilities.Resources.Subscribe)",
		"capabilities", string(r.JSON))
}

// Versions returns the protocol versions the go-sdk server supports, as its
// server/discover lists them (newest first).
func (b *Bridge) Versions() []string { return slices.Clone(b.versions) }

// ServerInfo returns the go-sdk server's implementation, as server/discover
// reports it.
func (b *Bridge) ServerInfo() listen.Implementation { return b.info }

// Hub returns the hub the listens are served from.
func (b *Bridge) Hub() *hub.Hub { return b.hub }

// Source returns the listen.Source to serve listens from: the hub. Serve it
// with ListenOptions, which narrows each listen against the capabilities
// server/discover advertises when it opens.
func (b *Bridge) Source() listen.Source { return b.hub }

// ListenOptions returns the listen.Options to serve Source with: base (as
// Options.Listen) with the server's info, and, as CapabilitiesFor, the
// capabilities the go-sdk server advertises in server/discover when a
// listen opens (see Bridge: a reading shared by the listens, taken again
// after a list change).
func (b *Bridge) ListenOptions() listen.Options {
	return b.caps.ListenOptions(b.opts.Listen, b.info)
}

// Stats is a snapshot of a Bridge's counters.
type Stats struct {
	// ListChanges counts the go-sdk list changes republished into the hub;
	// ResourceUpdates the ResourceUpdated calls the hub accepted.
	ListChanges, ResourceUpdates uint64
	// Discovers counts the in-memory server/discover calls that read the
	// capabilities.
	Discovers uint64
}

// Stats returns the Bridge's counters.
func (b *Bridge) Stats() Stats {
	return Stats{
		ListChanges:     b.listChanges.Load(),
		ResourceUpdates: b.updates.Load(),
		Discovers:       b.caps.Reads(),
	}
}

// ResourceUpdated tells everyone watching uri that the resource changed,
// each exactly once: every listen whose filter covers uri (naming it, or a
// folder above it with listen.Options.SubResources), through the hub, and
// every older client that subscribed to uri with resources/subscribe (on
// the go-sdk's stateful sessions), through the go-sdk's
// Server.ResourceUpdated. Call it wherever a resource changes, in place of
// Server.ResourceUpdated, which reaches only the go-sdk's own subscribers
// (and Hub().ResourceUpdated only the listens). The go-sdk's subscribers
// are told even when the hub refuses uri (not an absolute URI: the error
// returned). It may be called from any goroutine; OnRepublish runs on it.
func (b *Bridge) ResourceUpdated(ctx context.Context, uri string) error {
	r, herr := b.hub.ResourceUpdated(uri)
	if herr == nil {
		b.updates.Add(1)
		b.log.Debug("gosdk: published", "method", spec.MethodResourceUpdated, "uri", uri, "matched", r.Matched, "delivered", r.Delivered, "dropped", r.Dropped)
		if b.opts.OnRepublish != nil {
			b.opts.OnRepublish(spec.MethodResourceUpdated, uri, r)
		}
	}
	serr := b.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
	switch {
	case herr != nil && serr != nil:
		return fmt.Errorf("gosdk: ResourceUpdated %q: %w; the go-sdk's: %w", uri, herr, serr)
	case herr != nil:
		return fmt.Errorf("gosdk: ResourceUpdated %q: %w", uri, herr)
	case serr != nil:
		return fmt.Errorf("gosdk: ResourceUpdated %q: the go-sdk's Server.ResourceUpdated: %w", uri, serr)
	}
	return nil
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

// onNotify republishes one go-sdk list change into the hub. It runs on the
// go-sdk goroutine that sent it (its debounce timer).
func (b *Bridge) onNotify(method string, _ json.RawMessage) {
	var r hub.Report
	switch method {
	case spec.MethodToolsListChanged:
		r = b.hub.ToolsListChanged()
	case spec.MethodPromptsListChanged:
		r = b.hub.PromptsListChanged()
	case spec.MethodResourcesListChanged:
		r = b.hub.ResourcesListChanged()
	default:
		return // logging and other notifications of an observer: not for listens
	}
	b.caps.Changed()
	b.listChanges.Add(1)
	b.log.Debug("gosdk: republished", "method", method, "matched", r.Matched, "delivered", r.Delivered, "dropped", r.Dropped)
	if b.opts.OnRepublish != nil {
		b.opts.OnRepublish(method, "", r)
	}
}

// hasResources reports whether a capabilities object advertises resources.
func hasResources(caps json.RawMessage) bool {
	var c struct {
		Resources json.RawMessage `json:"resources"`
	}
	return json.Unmarshal(caps, &c) == nil && len(c.Resources) > 0 && string(c.Resources) != "null"
}

// warnEmpty reports a server that advertises nothing a listen can receive
// (once until it advertises something again: see capcache.Options).
func (b *Bridge) warnEmpty(r capcache.Reading) {
	b.log.Warn("gosdk: the go-sdk server advertises no capability a listen can receive "+
		"(tools.listChanged, prompts.listChanged, resources.listChanged or resources.subscribe): "+
		"every subscriptions/listen is acknowledged with an empty filter until it does "+
		"(register a tool, prompt or resource, or set ServerOptions.Capabilities)",
		"capabilities", string(r.JSON))
}
