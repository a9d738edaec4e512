package upstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/internal/hubrelay"
	"github.com/mcplisten/listen/spec"
)

// Mapper maps resource URIs between an upstream's namespace and the
// gateway's, so that two upstreams may both have file:///README.md.
type Mapper interface {
	// Down returns the gateway's URI for an upstream's, false to drop
	// the notification.
	Down(upstreamURI string) (string, bool)
	// Up returns the upstream's URI for a gateway's, false when the URI
	// is not this upstream's.
	Up(gatewayURI string) (string, bool)
}

// SchemePrefix maps an upstream's URIs under a scheme prefix: its
// file:///README.md is the gateway's name+file:///README.md (a URI of
// scheme "name+file"), and only URIs with the prefix are its. name must
// start with a letter and hold only letters, digits, '+', '-' and '.'
// (NewFeed checks).
func SchemePrefix(name string) Mapper { return schemePrefix(name + "+") }

type schemePrefix string

func (p schemePrefix) Down(u string) (string, bool) { return string(p) + u, true }
func (p schemePrefix) Up(u string) (string, bool)   { return strings.CutPrefix(u, string(p)) }

func validScheme(s string) bool {
	if s == "" || !('a' <= s[0] && s[0] <= 'z' || 'A' <= s[0] && s[0] <= 'Z') {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Upstream is one server a Feed listens to.
type Upstream struct {
	// Name names the upstream in Stats and callbacks; unique in a Feed.
	Name string
	// Transport reaches it. The Feed does not close it (a Stdio is
	// closed by its owner, after the Feed).
	Transport Transport
	// Map maps its URIs into the gateway's namespace and back. Nil means
	// the identity: every URI the gateway's listens watch is watched on
	// every upstream of a Feed, and its updates are published as they come.
	Map Mapper
	// Capabilities, if set, are what the upstream advertises (from its
	// server/discover): the Feed asks it only for those kinds. Nil means
	// learned from its acknowledgements: the list kinds from the list
	// listen's, and resource subscriptions assumed once the upstream has
	// acknowledged a listen, until a resource listen's acknowledgement
	// leaves resourceSubscriptions out (and again once one names it). An
	// upstream that completes a listen at once when it accepts nothing
	// (the go-sdk does) is listened to again with growing waits, at
	// most once per MaxBackoff.
	Capabilities *listen.Capabilities
}

// FeedOptions configure NewFeed.
type FeedOptions struct {
	// Upstreams are the servers to listen to (at least one).
	Upstreams []Upstream
	// Listener configures every upstream listen: Open (client info,
	// ack timeout), the backoff, RelistInterval (the coalescing of URI
	// changes: at most one re-listen per interval and upstream).
	Listener ListenerOptions
	// OnAck and OnLoss, if set, are told of each upstream listen's
	// acknowledgements and losses, after the Feed has handled them (hints
	// published). resources says which of the upstream's two listens: the
	// one for the watched URIs (true) or the list changes'.
	OnAck  func(upstream string, resources bool, ack Ack)
	OnLoss func(upstream string, resources bool, err error)
}

// UpstreamStats are a Feed's counters for one upstream.
type UpstreamStats struct {
	Name string
	// Lists and Resources are the counters of its two listens (the list
	// changes', the watched URIs'). Lists.Open +
	// Resources.Open is the number of streams open to the upstream.
	Lists, Resources ListenerStats
	// Watched counts the upstream URIs watched now (those the gateway's
	// listens watch that map to this upstream); Unwatched those left out
	// over spec.MaxResourceSubscriptions.
	Watched, Unwatched int
	// Published counts the events published into the hub from its
	// notifications, Hints the hints published after its gaps, Dropped
	// its notifications that were not published (a kind the listen did
	// not ask for, an extension's, a URI its Map refused, an event the
	// hub refused).
	Published, Hints, Dropped uint64
}

// Feed listens to upstream servers and publishes what they send into a
// hub.Hub: per upstream, one listen for the list changes and one for the
// URIs the hub's listeners watch (followed through the hub's OnAttach and
// OnDetach, which the hub reference-counts), each kept open: listened to
// again after every loss, with backoff. After a gap it publishes hints;
// the hub delivers them, as everything, only to the listens that asked
// for them.
//
// Create it with NewFeed, give its Attach and Detach to hub.New, Start it
// with the hub, and Close it before the hub's Shutdown. It owns one
// goroutine per listen it keeps, plus one per open stream (two during a
// re-listen), all ended by Close. It publishes to the hub's local
// listeners only (not through a joined bridge): each instance of a
// gateway whose hubs are joined by a bridge has a Feed of its own, and
// relaying what it publishes would deliver it twice.
type Feed struct {
	opts FeedOptions
	ups  []*feedUpstream
	hub  atomic.Pointer[hub.Hub]

	mu      sync.Mutex
	started bool
	closed  bool
}

type feedUpstream struct {
	f *Feed
	u Upstream

	lists, uris *listener // set by Start

	mu      sync.Mutex
	watched map[string]int // upstream URI -> gateway watches mapping to it
	caps    listen.Capabilities
	known   bool // caps were configured or learned
	noSub   bool // a resource ack left resourceSubscriptions out

	published, hints, dropped atomic.Uint64
}

// NewFeed checks opts and returns a Feed that listens to nothing until
// Start.
func NewFeed(opts FeedOptions) (*Feed, error) {
	if len(opts.Upstreams) == 0 {
		return nil, errors.New("upstream: a Feed needs at least one upstream")
	}
	f := &Feed{opts: opts}
	names := map[string]bool{}
	for _, u := range opts.Upstreams {
		if u.Name == "" || names[u.Name] {
			return nil, fmt.Errorf("upstream: upstream names must be unique and not empty, got %q", u.Name)
		}
		names[u.Name] = true
		if u.Transport == nil {
			return nil, fmt.Errorf("upstream: upstream %q has no Transport", u.Name)
		}
		if p, ok := u.Map.(schemePrefix); ok && !validScheme(string(p)) {
			return nil, fmt.Errorf("upstream: SchemePrefix(%q) of upstream %q is not a URI scheme", strings.TrimSuffix(string(p), "+"), u.Name)
		}
		fu := &feedUpstream{f: f, u: u, watched: map[string]int{}}
		if u.Capabilities != nil {
			fu.caps, fu.known = *u.Capabilities, true
		}
		f.ups = append(f.ups, fu)
	}
	return f, nil
}

// Start starts listening to the upstreams, publishing into h (the hub
// whose OnAttach and OnDetach are this Feed's). It may be called once.
func (f *Feed) Start(h *hub.Hub) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started || f.closed {
		return errors.New("upstream: Feed started twice, or after Close")
	}
	f.started = true
	f.hub.Store(h)
	for _, u := range f.ups {
		u.start()
	}
	return nil
}

// Close stops listening to the upstreams and waits for the Feed's
// goroutines. It is idempotent.
func (f *Feed) Close() {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	started := f.started
	f.mu.Unlock()
	if !started {
		return
	}
	var wg sync.WaitGroup
	for _, u := range f.ups {
		wg.Go(u.lists.Close)
		wg.Go(u.uris.Close)
	}
	wg.Wait()
}

// Attach is the hub's OnAttach: the first listener watching w. Its URI is
// watched on each upstream whose Map takes it.
func (f *Feed) Attach(w hub.Watch) { f.watch(w.URI, 1) }

// Detach is the hub's OnDetach: the last listener watching w left.
func (f *Feed) Detach(w hub.Watch) { f.watch(w.URI, -1) }

func (f *Feed) watch(uri string, delta int) {
	for _, u := range f.ups {
		up, ok := uri, true
		if u.u.Map != nil {
			up, ok = u.u.Map.Up(uri)
		}
		if ok {
			u.watch(up, delta)
		}
	}
}

// Capabilities is for listen.Options.CapabilitiesFor: what the upstreams
// can send, together (a kind is advertised when one upstream can send
// it), so that the gateway's acknowledgements never promise a kind no
// upstream sends. An upstream not yet known (not configured, never
// acknowledged) adds nothing.
func (f *Feed) Capabilities(context.Context, *listen.Request) (listen.Capabilities, error) {
	var c listen.Capabilities
	for _, u := range f.ups {
		u.mu.Lock()
		if u.known {
			c.ToolsListChanged = c.ToolsListChanged || u.caps.ToolsListChanged
			c.PromptsListChanged = c.PromptsListChanged || u.caps.PromptsListChanged
			c.ResourcesListChanged = c.ResourcesListChanged || u.caps.ResourcesListChanged
			c.ResourcesSubscribe = c.ResourcesSubscribe || u.caps.ResourcesSubscribe && !u.noSub
		}
		u.mu.Unlock()
	}
	return c, nil
}

// Stats returns the counters of each upstream, in the order of
// FeedOptions.Upstreams.
func (f *Feed) Stats() []UpstreamStats {
	f.mu.Lock()
	started := f.started
	f.mu.Unlock()
	out := make([]UpstreamStats, len(f.ups))
	for i, u := range f.ups {
		u.mu.Lock()
		unwatched := max(0, len(u.watched)-spec.MaxResourceSubscriptions)
		if u.known && !u.caps.ResourcesSubscribe {
			unwatched = len(u.watched)
		}
		out[i] = UpstreamStats{Name: u.u.Name, Watched: len(u.watched) - unwatched, Unwatched: unwatched,
			Published: u.published.Load(), Hints: u.hints.Load(), Dropped: u.dropped.Load()}
		u.mu.Unlock()
		if started {
			out[i].Lists, out[i].Resources = u.lists.Stats(), u.uris.Stats()
		}
	}
	return out
}

// listKinds are the filter keys of the list changes, with their kinds.
var listKinds = []struct {
	key  string
	kind listen.Kind
}{
	{spec.KeyToolsListChanged, listen.KindToolsListChanged},
	{spec.KeyPromptsListChanged, listen.KindPromptsListChanged},
	{spec.KeyResourcesListChanged, listen.KindResourcesListChanged},
}

func (u *feedUpstream) start() {
	lists := listen.Filter{}
	for _, k := range listKinds {
		if u.u.Capabilities == nil || core.CapabilitiesAllow(*u.u.Capabilities, listen.Filter{k.key: true}) {
			lists[k.key] = true
		}
	}
	u.lists = newListener(u.u.Transport, listenerConfig{
		ListenerOptions: u.f.opts.Listener,
		filter:          lists,
		onNotification:  u.listNotification,
		onAck:           u.listAck,
		onLoss:          func(err error) { u.loss(false, err) },
	})
	ro := listenerConfig{
		ListenerOptions: u.f.opts.Listener,
		onNotification:  u.uriNotification,
		onAck:           u.uriAck,
		onLoss:          func(err error) { u.loss(true, err) },
		// The URI set is read when a re-listen is due, not at each
		// attach (a burst of a thousand opens builds it a few times, not
		// a thousand).
		filterf: func() listen.Filter {
			u.mu.Lock()
			defer u.mu.Unlock()
			return u.filterLocked()
		},
	}
	u.mu.Lock() // watch reads u.uris under u.mu
	u.uris = newListener(u.u.Transport, ro)
	u.mu.Unlock()
}

// watch counts an upstream URI in or out, and re-listens when the set
// changed.
func (u *feedUpstream) watch(up string, delta int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := u.watched[up] + delta
	switch {
	case n > 0:
		u.watched[up] = n
		if n > 1 || delta < 0 {
			return
		}
	default:
		delete(u.watched, up)
	}
	if u.uris != nil {
		u.uris.poke()
	}
}

// filterLocked is the resource listen's filter: the watched URIs, sorted,
// at most spec.MaxResourceSubscriptions (nil when none). u.mu is held.
func (u *feedUpstream) filterLocked() listen.Filter {
	if len(u.watched) == 0 || (u.known && !u.caps.ResourcesSubscribe) {
		return nil
	}
	uris := make([]string, 0, len(u.watched))
	for k := range u.watched {
		uris = append(uris, k)
	}
	slices.Sort(uris)
	uris = uris[:min(len(uris), spec.MaxResourceSubscriptions)]
	list := make([]any, len(uris))
	for i, s := range uris {
		list[i] = s
	}
	return listen.Filter{spec.KeyResourceSubscriptions: list}
}

func (u *feedUpstream) publish(ev listen.Event, hint bool) {
	h := u.f.hub.Load()
	if h == nil {
		return
	}
	if _, err := hubrelay.PublishLocal(h, ev); err != nil {
		u.dropped.Add(1)
		return
	}
	if hint {
		u.hints.Add(1)
	} else {
		u.published.Add(1)
	}
}

func (u *feedUpstream) listNotification(n Notification) {
	switch k := n.Kind(); k {
	case listen.KindToolsListChanged, listen.KindPromptsListChanged, listen.KindResourcesListChanged:
		u.publish(listen.Event{Kind: k}, false)
	default:
		u.dropped.Add(1)
	}
}

func (u *feedUpstream) listAck(a Ack) {
	u.mu.Lock()
	if u.u.Capabilities == nil {
		sub := u.caps.ResourcesSubscribe || !u.known // assumed until refused
		u.caps = listen.Capabilities{
			ToolsListChanged:     a.Accepted[spec.KeyToolsListChanged] == true,
			PromptsListChanged:   a.Accepted[spec.KeyPromptsListChanged] == true,
			ResourcesListChanged: a.Accepted[spec.KeyResourcesListChanged] == true,
			ResourcesSubscribe:   sub,
		}
		u.known = true
	}
	u.mu.Unlock()
	if a.Gap != nil {
		for _, k := range listKinds {
			if a.Accepted[k.key] == true {
				u.publish(listen.Event{Kind: k.kind}, true)
			}
		}
	}
	if f := u.f.opts.OnAck; f != nil {
		f(u.u.Name, false, a)
	}
}

func (u *feedUpstream) down(uri string) (string, bool) {
	if u.u.Map == nil {
		return uri, true
	}
	return u.u.Map.Down(uri)
}

func (u *feedUpstream) uriNotification(n Notification) {
	if n.Kind() != listen.KindResourceUpdated {
		u.dropped.Add(1)
		return
	}
	d, ok := u.down(n.URI)
	if !ok {
		u.dropped.Add(1)
		return
	}
	u.publish(listen.ResourceUpdated(d), false)
}

func (u *feedUpstream) uriAck(a Ack) {
	_, has := a.Accepted[spec.KeyResourceSubscriptions]
	u.mu.Lock()
	u.noSub = !has
	u.mu.Unlock()
	if a.Gap != nil {
		for _, up := range core.FilterStrings(a.Accepted, spec.KeyResourceSubscriptions) {
			if d, ok := u.down(up); ok {
				u.publish(listen.ResourceUpdated(d), true)
			}
		}
	}
	if f := u.f.opts.OnAck; f != nil {
		f(u.u.Name, true, a)
	}
}

func (u *feedUpstream) loss(resources bool, err error) {
	if f := u.f.opts.OnLoss; f != nil {
		f(u.u.Name, resources, err)
	}
}
