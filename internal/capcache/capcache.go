// Package capcache keeps the capabilities an SDK server advertises in
// server/discover for the SDK adapters (gosdk, mcpgo): one reading shared
// by every listen that opens, read again at the first listen after a list
// change (the changes that can turn an inferred capability on or off), and
// at most once per refresh interval when a listen asks for a kind the last
// reading did not allow. A reading is what the adapter's Read returns (an
// in-memory server/discover, whose result Parse reads); the Cache never
// calls it on a goroutine of its own.
//
// A Cache is safe for concurrent use; it starts no goroutine.
package capcache

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
)

// Reading is one reading of the capabilities.
type Reading struct {
	// Caps are the capabilities, as listen.CapabilitiesFrom reads them.
	Caps listen.Capabilities
	// JSON is the capabilities object exactly as advertised.
	JSON json.RawMessage
}

// Empty reports whether r allows no listen anything: none of
// tools.listChanged, prompts.listChanged, resources.listChanged and
// resources.subscribe.
func (r Reading) Empty() bool {
	c := r.Caps
	return !c.ToolsListChanged && !c.PromptsListChanged && !c.ResourcesListChanged && !c.ResourcesSubscribe
}

// Options configure a Cache.
type Options struct {
	// Read reads the capabilities the server advertises now. It is called
	// by CapabilitiesFor and Read, on their goroutine, one call at a time.
	Read func(context.Context) (Reading, error)
	// Refresh is the shortest time between two readings caused by listens
	// asking for a kind the last reading did not allow.
	Refresh time.Duration
	// OnStore, if set, is called with each reading kept (New's first one
	// included, with prev nil) and the one it replaces, before OnEmpty.
	OnStore func(prev *Reading, next Reading)
	// OnEmpty, if set, is called with a reading kept that is Empty: once,
	// until a reading that is not.
	OnEmpty func(Reading)
}

// Cache is the last reading of a server's capabilities (see the package
// documentation).
type Cache struct {
	opts       Options
	extensions map[string]any

	snap        atomic.Pointer[snapshot]
	stale       atomic.Bool   // a list change since the last reading
	reading     chan struct{} // holds a token while a listen reads; the listens waiting share its reading
	emptyWarned atomic.Bool
	reads       atomic.Uint64 // readings kept; incremented after snap is replaced
}

// snapshot is a reading and when it was kept.
type snapshot struct {
	Reading
	at time.Time
}

// New returns a Cache holding first (OnStore and OnEmpty are called for
// it). The extensions of first are those CapabilitiesFor returns for good:
// later readings change only the core flags.
func New(first Reading, opts Options) *Cache {
	c := &Cache{opts: opts, extensions: first.Caps.Extensions, reading: make(chan struct{}, 1)}
	c.store(first)
	return c
}

// Changed tells the Cache that the server's lists changed: the next listen
// reads the capabilities again.
func (c *Cache) Changed() { c.stale.Store(true) }

// Last returns the reading kept last.
func (c *Cache) Last() Reading { return c.snap.Load().Reading }

// Reads counts the readings kept, New's first one included.
func (c *Cache) Reads() uint64 { return c.reads.Load() }

// store keeps r as the last reading.
func (c *Cache) store(r Reading) {
	prev := c.snap.Swap(&snapshot{Reading: r, at: time.Now()})
	c.reads.Add(1)
	if c.opts.OnStore != nil {
		var p *Reading
		if prev != nil {
			p = &prev.Reading
		}
		c.opts.OnStore(p, r)
	}
	if !r.Empty() {
		c.emptyWarned.Store(false)
		return
	}
	if !c.emptyWarned.Swap(true) && c.opts.OnEmpty != nil {
		c.opts.OnEmpty(r)
	}
}

// Read reads the capabilities now and keeps the reading. It waits for a
// reading under way first (or for ctx).
func (c *Cache) Read(ctx context.Context) (Reading, error) {
	if err := c.lock(ctx); err != nil {
		return Reading{}, err
	}
	defer c.unlock()
	r, err := c.opts.Read(ctx)
	if err == nil {
		c.store(r)
	}
	return r, err
}

// lock takes the reading token, or returns ctx's cause.
func (c *Cache) lock(ctx context.Context) error {
	select {
	case c.reading <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (c *Cache) unlock() { <-c.reading }

// CapabilitiesFor is a listen.Options.CapabilitiesFor: the core flags of
// the last reading, read again first if the server's lists changed since,
// or if req asks for a kind the reading does not allow and it is older
// than Options.Refresh; and the extensions of New's first reading.
// Concurrent listens share one reading: a listen that finds another
// reading waits for it (or for ctx) and takes its result. A failed reading
// is returned as the error, and the next listen reads again.
func (c *Cache) CapabilitiesFor(ctx context.Context, req *listen.Request) (listen.Capabilities, error) {
	caps, err := c.caps(ctx, req.Notifications)
	if err != nil {
		return listen.Capabilities{}, err
	}
	caps.Extensions = c.extensions
	return caps, nil
}

// ListenOptions returns the listen.Options an adapter serves its hub
// with: base (the adapter's Options.Listen) with info as ServerInfo, no
// static Capabilities, and c's CapabilitiesFor.
func (c *Cache) ListenOptions(base listen.Options, info listen.Implementation) listen.Options {
	base.ServerInfo = info
	base.Capabilities = listen.Capabilities{}
	base.CapabilitiesFor = c.CapabilitiesFor
	return base
}

// caps returns the capabilities to narrow a listen requesting f against.
func (c *Cache) caps(ctx context.Context, f listen.Filter) (listen.Capabilities, error) {
	asked := c.reads.Load()
	s := c.snap.Load()
	if !c.stale.Load() && (core.CapabilitiesAllow(s.Caps, f) || time.Since(s.at) < c.opts.Refresh) {
		return s.Caps, nil
	}
	if err := c.lock(ctx); err != nil {
		return listen.Capabilities{}, err
	}
	defer c.unlock()
	if c.reads.Load() != asked {
		return c.snap.Load().Caps, nil // read since this listen asked
	}
	c.stale.Store(false)
	r, err := c.opts.Read(ctx)
	if err != nil {
		c.stale.Store(true)
		return listen.Capabilities{}, err
	}
	c.store(r)
	return r.Caps, nil
}

// Discovered is what a server/discover result advertises, as far as
// listens are concerned.
type Discovered struct {
	Reading
	// Versions are the supported protocol versions, as listed.
	Versions []string
	// ServerInfo is the server's implementation (_meta
	// io.modelcontextprotocol/serverInfo), if given.
	ServerInfo listen.Implementation
}

// Parse reads a server/discover result (the JSON-RPC response's result
// member).
func Parse(result []byte) (Discovered, error) {
	var r struct {
		Meta struct {
			ServerInfo *listen.Implementation `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return Discovered{}, fmt.Errorf("decoding the result: %w", err)
	}
	caps, err := listen.CapabilitiesFrom(r.Capabilities)
	if err != nil {
		return Discovered{}, err
	}
	d := Discovered{Reading: Reading{Caps: caps, JSON: r.Capabilities}, Versions: r.SupportedVersions}
	if r.Meta.ServerInfo != nil {
		d.ServerInfo = *r.Meta.ServerInfo
	}
	return d, nil
}
