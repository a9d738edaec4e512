package adapter

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/capcache"
	"github.com/mcplisten/listen/spec"
)

// SDK is what an adapter tells the seam about one MCP SDK: how to reach its
// server in process, and how to name it in errors and logs. NewBridge
// takes it; every function but Flush must be set.
type SDK struct {
	// Name is the adapter's package name, which begins the errors and log
	// messages of its Bridge ("gosdk").
	Name string
	// Server names the SDK's server in messages ("the go-sdk server").
	Server string
	// Advertise says how to make the server advertise a capability a
	// listen can receive, in the warning logged while it advertises none.
	Advertise string
	// Subscribe says how to make the server advertise
	// resources.subscribe, in the warning logged when it advertises
	// resources without it.
	Subscribe string

	// Discover runs server/discover on the server in process, as a
	// 2026-07-28 client would, and returns the result member of its answer.
	// The Bridge calls it from NewBridge and later when a listen opens after
	// a list change (see Bridge), one call at a time, with a context bounded
	// by Options.CallTimeout. Its errors are returned as they are: begin
	// them with Name.
	Discover func(ctx context.Context) (json.RawMessage, error)
	// Observe starts handing publish every notification the server
	// broadcasts: its JSON-RPC method and, for
	// notifications/resources/updated, the resource's uri. NewBridge calls
	// it once, after the first Discover, with its context. publish republishes the list
	// changes and resource updates into the hub (its error is the hub's
	// refusal of a uri) and counts the rest as ignored; it is safe for
	// concurrent use and never waits for a listen.
	Observe func(ctx context.Context, publish func(method, uri string) error) error
	// ResourceUpdated tells everyone watching uri that the resource
	// changed, each once: the listens (through publish, or a broadcast
	// Observe sees) and the server's own subscribers. Bridge.ResourceUpdated
	// calls it.
	ResourceUpdated func(ctx context.Context, uri string) error
	// Flush, if set, returns once every notification the server broadcast
	// before the call has been handed to publish. Nil means each is handed
	// over before its broadcast returns.
	Flush func()
	// Close ends what Discover and Observe hold (in-process sessions,
	// goroutines) and waits for them. The Bridge calls it once: from Close,
	// or from NewBridge when it fails.
	Close func() error
}

// Options configure a Bridge: what a user of an adapter sets.
type Options struct {
	// Hub is where the server's changes are published and the listens are
	// served from. Nil means a new hub.Hub with hub.Options{} (100 events
	// per listener, drop-oldest). Publishing to it yourself (an extension
	// event, a change the SDK does not broadcast) is allowed.
	Hub *hub.Hub
	// Listen configures the listen.Server of the handlers (its policy:
	// MaxStreams, hooks, Quota, DrainWindow, ...) and listen.Open. Every
	// field is used as given but Capabilities, CapabilitiesFor and
	// ServerInfo: they are read from the server (see Bridge), and
	// Capabilities set here that differ from what the server advertises
	// are logged as a warning; and SupportedVersions, which the handlers
	// set to the versions the SDK serves.
	Listen listen.Options
	// Logger receives the Bridge's warnings (a server that advertises
	// nothing a listen can receive, resources without resources.subscribe,
	// a capability turned off, a resource update the hub refused) and debug
	// diagnostics. Nil means slog.Default().
	Logger *slog.Logger
	// OnRepublish, if set, is called after each change was published into
	// the hub (method is its JSON-RPC method; uri is set for
	// notifications/resources/updated), with the hub's report, on the
	// goroutine that handed it over (see the adapter). It must be quick,
	// and must not broadcast on the server itself.
	OnRepublish func(method, uri string, r hub.Report)
	// CallTimeout bounds each call the Bridge makes to the server in
	// process (its server/discover). Zero means 5 seconds.
	CallTimeout time.Duration
}

// refreshInterval is the shortest time between two readings of the
// capabilities caused by listens asking for a kind the last reading did
// not allow: it bounds what such listens can cost (the go-sdk's debounce
// of list changes).
const refreshInterval = 10 * time.Millisecond

// Bridge connects an SDK's server to this library: it serves listens from
// a hub.Hub, with the capabilities and server info the server advertises
// in server/discover, and republishes into that hub every list change and
// resource update the server broadcasts (SDK.Observe).
//
// The capabilities are read with an in-memory server/discover
// (SDK.Discover) when the Bridge is made, again at the first listen after
// any list change (the changes that can turn an inferred capability on or
// off), and again, at most once per 10 ms, when a listen asks for a kind
// the last reading did not allow. Concurrent listens share one reading. A
// reading that turns a capability off is logged as a warning, one that
// turns one on at Info.
//
// NewHandler (HTTP) and NewStdio serve a Bridge; to serve listens over
// another transport, Source and ListenOptions are what listen.Open,
// streamhttp.New or stdio.New take. Close ends it; it does not end the
// listens served from the hub: end them with the transport's Shutdown
// first (or Hub.Shutdown). A Bridge is safe for concurrent use and starts
// no goroutine (the SDK's Observe may).
type Bridge struct {
	sdk       SDK
	hub       *hub.Hub
	opts      Options
	log       *slog.Logger
	caps      *capcache.Cache
	versions  []string
	info      listen.Implementation
	closeOnce sync.Once
	subWarned atomic.Bool

	listChanges, updates, ignored atomic.Uint64
}

// NewBridge reads the server's capabilities, versions and server info with
// sdk.Discover, then starts sdk.Observe. It fails if the server does not
// answer, or does not list protocol version 2026-07-28; it then calls
// sdk.Close. It logs a warning if the server advertises no capability a
// listen can receive (tools.listChanged, prompts.listChanged,
// resources.listChanged, resources.subscribe): every listen would be
// acknowledged with an empty filter until it does; and one if it
// advertises resources without resources.subscribe: listens would be
// acknowledged without their resourceSubscriptions.
func NewBridge(ctx context.Context, sdk SDK, opts Options) (*Bridge, error) {
	if sdk.Discover == nil || sdk.Observe == nil || sdk.ResourceUpdated == nil || sdk.Close == nil {
		return nil, fmt.Errorf("%s: adapter.SDK without Discover, Observe, ResourceUpdated or Close", sdk.Name)
	}
	if opts.CallTimeout < 0 {
		_ = sdk.Close()
		return nil, fmt.Errorf("%s: negative CallTimeout %v", sdk.Name, opts.CallTimeout)
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = 5 * time.Second
	}
	b := &Bridge{sdk: sdk, opts: opts, log: opts.Logger, hub: opts.Hub}
	if b.log == nil {
		b.log = slog.Default()
	}
	if b.hub == nil {
		h, err := hub.New(hub.Options{})
		if err != nil {
			_ = sdk.Close()
			return nil, err
		}
		b.hub = h
	}
	d, err := b.discover(ctx)
	if err == nil && !slices.Contains(d.Versions, spec.ProtocolVersion) {
		err = fmt.Errorf("%s: %s does not serve protocol version %s, which subscriptions/listen needs (it lists %v)", sdk.Name, sdk.Server, spec.ProtocolVersion, d.Versions)
	}
	if err != nil {
		_ = sdk.Close()
		return nil, err
	}
	b.versions, b.info = d.Versions, d.ServerInfo
	b.caps = capcache.New(d.Reading, capcache.Options{
		Read: func(ctx context.Context) (capcache.Reading, error) {
			d, err := b.discover(ctx)
			return d.Reading, err
		},
		Refresh: refreshInterval,
		OnStore: b.logReading,
		OnEmpty: b.warnEmpty,
	})
	b.warnIgnored(d.Caps)
	if err := sdk.Observe(ctx, b.publish); err != nil {
		_ = sdk.Close()
		return nil, err
	}
	return b, nil
}

// discover runs SDK.Discover within CallTimeout and reads its result.
func (b *Bridge) discover(ctx context.Context) (capcache.Discovered, error) {
	ctx, cancel := context.WithTimeout(ctx, b.opts.CallTimeout)
	defer cancel()
	res, err := b.sdk.Discover(ctx)
	if err != nil {
		return capcache.Discovered{}, err
	}
	d, err := capcache.Parse(res)
	if err != nil {
		return capcache.Discovered{}, fmt.Errorf("%s: server/discover: %w", b.sdk.Name, err)
	}
	return d, nil
}

// Discovery is what a server advertises in server/discover, as far as
// listens are concerned.
type Discovery struct {
	// Capabilities are the capabilities, read with listen.CapabilitiesFrom.
	Capabilities listen.Capabilities
	// CapabilitiesJSON is the capabilities object exactly as advertised.
	CapabilitiesJSON json.RawMessage
	// Versions are the supported protocol versions, as listed (newest
	// first).
	Versions []string
	// ServerInfo is the server's implementation (_meta
	// io.modelcontextprotocol/serverInfo).
	ServerInfo listen.Implementation
}

// Discover runs sdk.Discover once, within 5 seconds, and returns what the
// server advertises; then it calls sdk.Close, if set. It serves an
// adapter's own Discover function: only Name, Discover and Close are used.
func Discover(ctx context.Context, sdk SDK) (*Discovery, error) {
	if sdk.Close != nil {
		defer sdk.Close()
	}
	b := &Bridge{sdk: sdk, opts: Options{CallTimeout: 5 * time.Second}}
	d, err := b.discover(ctx)
	if err != nil {
		return nil, err
	}
	return &Discovery{Capabilities: d.Caps, CapabilitiesJSON: d.JSON, Versions: d.Versions, ServerInfo: d.ServerInfo}, nil
}

// Capabilities returns the capabilities the server advertises in
// server/discover right now, read with an in-memory server/discover.
func (b *Bridge) Capabilities(ctx context.Context) (listen.Capabilities, error) {
	r, err := b.caps.Read(ctx)
	return r.Caps, err
}

// Hub returns the hub the listens are served from.
func (b *Bridge) Hub() *hub.Hub { return b.hub }

// Source returns the listen.Source to serve listens from: the hub. Serve it
// with ListenOptions.
func (b *Bridge) Source() listen.Source { return b.hub }

// ListenOptions returns the listen.Options to serve Source with:
// Options.Listen with the server's info, and, as CapabilitiesFor, the
// capabilities the server advertises in server/discover when a listen
// opens (a reading shared by the listens, taken again after a list change:
// see Bridge).
func (b *Bridge) ListenOptions() listen.Options {
	return b.caps.ListenOptions(b.opts.Listen, b.info)
}

// Stats is a snapshot of a Bridge's counters.
type Stats struct {
	// ListChanges and ResourceUpdates count the list changes and resource
	// updates republished into the hub.
	ListChanges, ResourceUpdates uint64
	// Ignored counts the notifications no listen can receive (logging,
	// task status, methods of your own, a resource update the hub refused).
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
// each exactly once: every listen whose filter covers uri (naming it, or a
// folder above it with listen.Options.SubResources), and every older
// client subscribed to it on the server's own sessions (SDK.ResourceUpdated).
// Call it wherever a resource changes. It may be called from any goroutine.
func (b *Bridge) ResourceUpdated(ctx context.Context, uri string) error {
	return b.sdk.ResourceUpdated(ctx, uri)
}

// flush returns once every change the server broadcast before the call has
// been published into the hub.
func (b *Bridge) flush() {
	if b.sdk.Flush != nil {
		b.sdk.Flush()
	}
}

// Close ends what the SDK holds for the Bridge (SDK.Close) and waits for
// it. It is idempotent. Listens still served from the hub are not ended.
func (b *Bridge) Close() error {
	var err error
	b.closeOnce.Do(func() { err = b.sdk.Close() })
	return err
}

// publish republishes one notification of the server into the hub (see
// SDK.Observe).
func (b *Bridge) publish(method, uri string) error {
	var r hub.Report
	switch method {
	case spec.MethodToolsListChanged, spec.MethodPromptsListChanged, spec.MethodResourcesListChanged:
		b.caps.Changed() // the change may turn an inferred capability on or off
		switch method {
		case spec.MethodToolsListChanged:
			r = b.hub.ToolsListChanged()
		case spec.MethodPromptsListChanged:
			r = b.hub.PromptsListChanged()
		default:
			r = b.hub.ResourcesListChanged()
		}
		b.listChanges.Add(1)
	case spec.MethodResourceUpdated:
		var err error
		if r, err = b.hub.ResourceUpdated(uri); err != nil {
			b.ignored.Add(1)
			b.log.Warn(b.sdk.Name+": notifications/resources/updated not republished", "uri", uri, "err", err)
			return err
		}
		b.updates.Add(1)
	default:
		b.ignored.Add(1)
		return nil // logging, task status, methods of your own: not for listens
	}
	b.log.Debug(b.sdk.Name+": republished", "method", method, "uri", uri, "matched", r.Matched, "delivered", r.Delivered, "dropped", r.Dropped)
	if b.opts.OnRepublish != nil {
		b.opts.OnRepublish(method, uri, r)
	}
	return nil
}

// warnEmpty reports a server that advertises nothing a listen can receive
// (once until it advertises something again: see capcache.Options).
func (b *Bridge) warnEmpty(r capcache.Reading) {
	b.log.Warn(fmt.Sprintf("%s: %s advertises no capability a listen can receive "+
		"(tools.listChanged, prompts.listChanged, resources.listChanged or resources.subscribe): "+
		"every subscriptions/listen is acknowledged with an empty filter until it does (%s)", b.sdk.Name, b.sdk.Server, b.sdk.Advertise),
		"capabilities", string(r.JSON))
}

// logReading logs what a reading turned on or off, and warns, once, of a
// reading that advertises resources that listens cannot subscribe to.
func (b *Bridge) logReading(prev *capcache.Reading, next capcache.Reading) {
	if !next.Caps.ResourcesSubscribe && hasResources(next.JSON) && !b.subWarned.Swap(true) {
		b.log.Warn(fmt.Sprintf("%s: %s has resources but does not advertise resources.subscribe: "+
			"every subscriptions/listen is acknowledged without its resourceSubscriptions (%s)", b.sdk.Name, b.sdk.Server, b.sdk.Subscribe),
			"capabilities", string(next.JSON))
	}
	if prev == nil {
		return
	}
	on, off := diffKinds(prev.Caps, next.Caps)
	if len(off) > 0 {
		b.log.Warn(fmt.Sprintf("%s: %s stopped advertising a capability: listens acknowledged with it receive no more of it, new listens are acknowledged without it", b.sdk.Name, b.sdk.Server),
			"off", off, "capabilities", string(next.JSON))
	}
	if len(on) > 0 {
		b.log.Info(fmt.Sprintf("%s: %s advertises a new capability", b.sdk.Name, b.sdk.Server), "on", on, "capabilities", string(next.JSON))
	}
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
	b.log.Warn(fmt.Sprintf("%s: Options.Listen.Capabilities differ from what %s advertises in server/discover and are ignored: listens are acknowledged against the server's own", b.sdk.Name, b.sdk.Server),
		"advertised", string(b.caps.Last().JSON))
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

// hasResources reports whether a capabilities object advertises resources.
func hasResources(caps json.RawMessage) bool {
	var c struct {
		Resources json.RawMessage `json:"resources"`
	}
	return json.Unmarshal(caps, &c) == nil && len(c.Resources) > 0 && string(c.Resources) != "null"
}
