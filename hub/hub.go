package hub

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"errors"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/internal/hubrelay"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// defaultMaxBuffer is the per-listener queue bound used when
// Options.MaxBuffer is zero.
const defaultMaxBuffer = 100

// Overflow is what a listener's full queue does with one more event.
type Overflow uint8

const (
	// DropOldest (the default) drops the oldest queued event and queues the
	// new one: a slow listener keeps the newest MaxBuffer events.
	DropOldest Overflow = iota
	// DropNewest drops the new event: a slow listener keeps the oldest
	// MaxBuffer events.
	DropNewest
	// EndListener ends the listener instead: its queue is freed and its
	// stream ends with listen.ErrFellBehind, which its subscription sends
	// as an early ending (listen.Options.EndWithError: by default the completion result
	// with the reason "fell_behind"), so that a client that fell behind
	// learns it and opens a new listen instead of missing events silently.
	// The new event and the queued ones count in Report.Dropped, the
	// listener in Report.Ended and Stats.FellBehind.
	EndListener
)

// String returns "drop_oldest", "drop_newest" or "end_listener" (or
// "Overflow(n)" for an invalid value).
func (o Overflow) String() string {
	switch o {
	case DropOldest:
		return "drop_oldest"
	case DropNewest:
		return "drop_newest"
	case EndListener:
		return "end_listener"
	}
	return fmt.Sprintf("Overflow(%d)", uint8(o))
}

// MarshalText encodes the policy by name (see String), so
// Stats reads well in JSON (expvar, logs).
func (o Overflow) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// Options configure New. The zero Options is valid: MaxBuffer 100,
// DropOldest, no hooks and no logger.
type Options struct {
	// MaxBuffer bounds the events each listener holds that its puller has
	// not taken: its queue, and the one event handed over to a puller
	// that asked for the next (it may still be writing the one before). A
	// stream on streamhttp's fast path may hold one plain list change
	// more, which it takes from the hub itself (see internal/fastpath).
	// Zero means the default
	// (100); a negative value, or one above math.MaxInt32, is an error. The queue's memory is allocated on
	// demand, so a large bound costs nothing until events pile up.
	MaxBuffer int
	// Overflow is the policy of a full queue. The zero value is DropOldest;
	// a value other than DropOldest, DropNewest and EndListener is an
	// error.
	Overflow Overflow
	// Logger, if set, logs the hub's life: opens, publications and closes
	// at Debug (a close for an early ending, such as fell_behind, at Info),
	// overflows at Warn, shutdowns at Info, with these attributes:
	// subscriptions, filter_keys, request_id, transport, matched,
	// delivered, buffered, dropped, queued, event_kind, extension_id,
	// policy, ended, reason (a close's listen.Classify class). Nothing is
	// formatted when the logger's level disables the record.
	Logger *slog.Logger
	// OnOpen, OnPublish, OnOverflow, OnShutdown and OnClose, if set, are
	// told (after Logger's line) of each listener opened, each event
	// published (also one that matched nobody), each publication that
	// dropped events (after its OnPublish), each Shutdown call, once it
	// completed the open listeners (each then hands out what it has
	// queued and ends), and each listener closed (once per listener). The
	// hub calls them synchronously, in the goroutine of the operation that
	// caused them (Open, Publish, Shutdown, a stream's Close), after that
	// operation has updated the hub and released every lock: they may call
	// back into the hub. They must be safe for concurrent use and should be
	// quick, since Publish waits for them. One that panics propagates the
	// panic to that caller, after the hub's state is consistent; a
	// panicking OnOpen also closes the listener it was told about. With
	// none of them and no Logger, the hub does not even read the clock.
	OnOpen     func(OpenInfo)
	OnPublish  func(PublishInfo)
	OnOverflow func(OverflowInfo)
	OnShutdown func(ShutdownInfo)
	OnClose    func(CloseInfo)
	// OnAttach, if set, is called when the first listener starts watching a
	// URI (exactly, or as a folder: see Watch), so that the application
	// starts watching what it names; OnDetach when the last one stops (its
	// Close, or Shutdown). Each transition is reported once, in the order
	// the hub saw it, so attach and detach alternate for each Watch,
	// starting with attach; the calls are made one at a time, with no lock
	// of the hub held, on the goroutine of an Open or Close that changed
	// the watches (not necessarily the one that caused this transition;
	// Open may return before its attach is reported). They may call back
	// into the hub. A panic in them is recovered and ignored.
	OnAttach func(Watch)
	OnDetach func(Watch)
	// DetachDelay, if positive, keeps a URI attached that long after its
	// last listener left: a listener that comes back in time (a client
	// that reconnects) finds it attached, and neither OnDetach nor OnAttach
	// is called. The detach is then reported from a timer of the hub's
	// (one for the hub). Zero, the default, detaches at once.
	DetachDelay time.Duration
}

// Report says what one publication did. Counts are per listener: an event
// dropped by three full queues counts 3 in Dropped.
type Report struct {
	// Matched is the number of open listeners whose filter selects the event.
	Matched int
	// Delivered counts matched listeners whose blocked Next received the
	// event directly.
	Delivered int
	// Buffered counts matched listeners that queued the event (including
	// those that dropped their oldest event to make room).
	Buffered int
	// Dropped counts events lost to a full queue: the new event under
	// DropNewest, the oldest queued one under DropOldest, the new event and
	// the queued ones under EndListener.
	Dropped int
	// Ended counts the listeners this publication ended (EndListener).
	Ended int
}

// Stats is a snapshot of the hub's counters.
type Stats struct {
	// Subscriptions counts the open listeners, completing ones included.
	Subscriptions int
	// Closing counts the listeners marked by Shutdown and not yet closed.
	Closing int
	// Queued is the number of events queued across all listeners (not
	// counting the one handed over to each listener's puller).
	Queued int
	// Dropped is the cumulative number of events lost to overflow.
	Dropped uint64
	// FellBehind is the cumulative number of listeners ended by the
	// EndListener policy.
	FellBehind uint64
	// MaxBuffer is the hub's resolved queue bound.
	MaxBuffer int
	// Overflow is the hub's overflow policy.
	Overflow Overflow
}

// Hub is an in-process broadcast listen.Source: every stream it opens is a
// listener with a bounded queue, and Publish offers an event to exactly the
// listeners whose accepted filter selects it. Create it with New (the zero
// Hub is not usable). See the package documentation for the concurrency
// contract.
type Hub struct {
	maxBuffer int
	overflow  Overflow
	hooks     *hooks

	// mu guards the index below, every listener's memb and counted, and
	// closing. Publish holds it for reading only while it copies its targets;
	// no code holds it while calling hooks or taking a listener's lock for
	// long.
	mu      sync.RWMutex
	all     set             // every listener not yet closed
	lists   [256]*set       // a list change's Kind -> listeners whose filter has its key true (made when first needed)
	uris    map[string]*set // resource URI -> listeners watching it
	keys    map[string]*set // extension filter key -> listeners whose filter has it
	scoped  map[string]*set // scoped key -> listeners of that scope (index.go)
	closing int
	shut    bool          // Shutdown was called: Open refuses
	idle    chan struct{} // closed when closing reaches 0 (Shutdown waits on it)
	// folders indexes the folder listeners of the built-in sub-resource
	// rule (listen.SubResources without Folders); custom holds one index
	// per rule with a Folders function (see folders.go). nfolder counts
	// every open folder listener (written under mu), so that Publish takes
	// the folder path only when one may be selected.
	folders folderIndex
	custom  []*folderIndex
	nfolder atomic.Int64

	// watch reports attach and detach (index.go); nil without OnAttach
	// and OnDetach.
	watch *watcher

	queued  atomic.Int64
	dropped atomic.Uint64
	behind  atomic.Uint64 // listeners ended by EndListener

	// relay is the joined Relay (Join), nil when none.
	relay atomic.Pointer[relayBox]
}

var (
	_ listen.Source        = (*Hub)(nil)
	_ listen.NotifyStream  = (*listener)(nil)
	_ core.ValidatedStream = (*listener)(nil)
)

// New returns a hub configured by opts. It fails, with an error matching
// ErrInvalidOptions, for a negative MaxBuffer or an unknown Overflow.
func New(opts Options) (*Hub, error) {
	if opts.MaxBuffer < 0 || opts.MaxBuffer > math.MaxInt32 {
		return nil, fmt.Errorf("%w: MaxBuffer must be a positive integer (or 0 for the default %d), got %d",
			ErrInvalidOptions, defaultMaxBuffer, opts.MaxBuffer)
	}
	if opts.Overflow > EndListener {
		return nil, fmt.Errorf("%w: Overflow must be DropOldest, DropNewest or EndListener, got %v",
			ErrInvalidOptions, opts.Overflow)
	}
	h := &Hub{
		maxBuffer: opts.MaxBuffer,
		overflow:  opts.Overflow,
		hooks:     newHooks(opts),
		uris:      make(map[string]*set),
		folders:   folderIndex{sets: make(map[string]*set)},
		keys:      make(map[string]*set),
		scoped:    make(map[string]*set),
	}
	if h.maxBuffer == 0 {
		h.maxBuffer = defaultMaxBuffer
	}
	h.watch = newWatcher(h, opts)
	return h, nil
}

// Open implements listen.Source. It accepts the supported filter verbatim,
// extension keys included, and returns a new listener as the stream. The
// hub keeps the filter's extension keys, and the values of the rest in its
// index (it must not be modified afterwards; listen.Open hands over a
// private copy). An invalid filter (one holding a value that is not JSON, see listen.Filter)
// fails, which listen.Open reports as "Subscription
// source failed to open". A request whose SubResources is set (listen.Open
// sets it from listen.Options.SubResources) opens a folder listener, whose
// URIs also cover their sub-resources by that rule. The subscription's
// guard owns the stream's lifetime.
//
// The listener is indexed under the kind of each list-change key that is
// true (its listen.Kind), under each distinct string of resourceSubscriptions
// (a folder listener: under the normal form of each, leaving out those
// another of its URIs covers), and under each extension key of the filter
// (a key of no core kind, for extension selectors).
func (h *Hub) Open(ctx context.Context, req *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	h.mu.RLock()
	shut := h.shut
	h.mu.RUnlock()
	if shut {
		return nil, nil, errShutdown
	}
	if !core.FilterValid(supported) {
		return nil, nil, errInvalidFilter
	}
	if supported == nil {
		supported = listen.Filter{}
	}
	uris := resourceURIs(supported)
	var rule *listen.SubResources
	var folderKeys []string
	if req != nil && req.SubResources != nil && uris.len() > 0 {
		rule = req.SubResources
		folderKeys = coverKeys(uris, rule.Folders == nil)
	}
	scopes := scopesOf(req)
	l := newListener(h, extensionPart(supported))
	if n := 1 + (len(supported)+uris.len())*(1+len(scopes)); n <= len(l.inline) {
		l.memb = l.inline[:0:len(l.inline)]
	} else {
		l.memb = make([]membership, 0, n)
	}

	h.mu.Lock()
	if h.shut { // Shutdown began since the check above: it would not complete l
		h.mu.Unlock()
		return nil, nil, errShutdown
	}
	l.join(&h.all)
	for k, v := range supported {
		switch kind := kindOf(k); {
		case kind == 0: // an extension's key, for its selectors
			l.join(setIn(h.keys, k))
		case v == true: // a list change (a URI list is indexed below)
			if h.lists[kind] == nil {
				h.lists[kind] = &set{}
			}
			l.join(h.lists[kind])
		}
	}
	var idx *folderIndex
	if folderKeys != nil {
		idx = h.folderIndexLocked(rule)
		for _, k := range folderKeys {
			l.join(setIn(idx.sets, k))
		}
		l.folder = idx
		idx.n++
		h.nfolder.Add(1)
	} else {
		for i := range uris.len() {
			if u, ok := uris.at(i); ok {
				l.joinOnce(setIn(h.uris, u))
			}
		}
	}
	if scopes != nil {
		h.joinScopes(l, scopes, supported, uris, idx, folderKeys)
	}
	if h.watch != nil {
		h.watch.opened(l, uris, folderKeys)
	}
	subs := len(h.all.items)
	h.mu.Unlock()
	if h.watch != nil {
		h.watch.deliver()
	}

	if h.hooks != nil {
		info := OpenInfo{Subscriptions: subs, FilterKeys: slices.Sorted(maps.Keys(supported))}
		if req != nil {
			info.RequestID = req.ID
			info.Transport = req.Transport.Kind
		}
		h.callOnOpen(l, info)
	}
	return supported, l, nil
}

// extensionPart returns the entries of f whose keys belong to no core kind:
// what a listener keeps to match extension selectors (nil when there is
// none; f itself when it has only those).
func extensionPart(f listen.Filter) listen.Filter {
	n := 0
	for k := range f {
		if kindOf(k) == 0 {
			n++
		}
	}
	switch n {
	case 0:
		return nil
	case len(f):
		return f
	}
	ext := make(listen.Filter, n)
	for k, v := range f {
		if kindOf(k) == 0 {
			ext[k] = v
		}
	}
	return ext
}

// callOnOpen runs OnOpen; if it panics, the new listener is closed before
// the panic goes on, so that nothing stays indexed for a stream nobody got.
func (h *Hub) callOnOpen(l *listener, info OpenInfo) {
	ok := false
	defer func() {
		if !ok {
			l.Close(listen.Failed(errHookPanicked))
		}
	}()
	h.hooks.open(info)
	ok = true
}

// uriList is the resourceSubscriptions list of a filter, read in place in
// either of its Go forms. Elements that are not strings are skipped.
type uriList struct {
	strs []string
	anys []any
}

func resourceURIs(f listen.Filter) uriList {
	switch v := f[spec.KeyResourceSubscriptions].(type) {
	case []string:
		return uriList{strs: v}
	case []any:
		return uriList{anys: v}
	}
	return uriList{}
}

func (u uriList) len() int { return len(u.strs) + len(u.anys) }

func (u uriList) at(i int) (string, bool) {
	if u.strs != nil {
		return u.strs[i], true
	}
	s, ok := u.anys[i].(string)
	return s, ok
}

// each calls f for each distinct string of the list, in order. Short lists
// are deduplicated pairwise, without allocating.
func (u uriList) each(f func(string)) {
	n := u.len()
	if n > 16 {
		seen := make(map[string]struct{}, n)
		for i := range n {
			if s, ok := u.at(i); ok {
				if _, dup := seen[s]; !dup {
					seen[s] = struct{}{}
					f(s)
				}
			}
		}
		return
	}
next:
	for i := range n {
		s, ok := u.at(i)
		if !ok {
			continue
		}
		for j := range i {
			if p, ok := u.at(j); ok && p == s {
				continue next
			}
		}
		f(s)
	}
}

// targetPool recycles the slices Publish copies its targets into when there
// are more than fit on the stack.
var targetPool = sync.Pool{New: func() any { return new([]*listener) }}

// stackTargets is how many targets Publish collects without the pool.
const stackTargets = 8

// Publish validates ev and offers it to every listener whose filter selects
// it, in the calling goroutine, and returns what happened.
//
// An invalid event returns the error of ev.Validate: it matches
// listen.ErrInvalidEvent and its message is the exact validation message.
// Selection is by kind:
//
//   - a list change goes to the listeners whose filter has its key true;
//   - a resource update to the listeners whose resourceSubscriptions name
//     its URI (exact string match), and to the folder listeners one of
//     whose URIs covers it (the rule of listen.SubResources), each once;
//   - an extension event to the listeners whose filter's extension keys
//     contain its selector (the selector is a subset of it, see listen.Filter: a selector that
//     names a core key selects nobody, no extension owns one); the
//     candidates are the listeners that have every key of the selector.
//
// Each target receives the event in its blocked Next, or queues it, or
// applies the overflow policy; Publish never waits for a listener. Maps in
// ev are shared by every receiver: do not modify them afterwards. If the
// Folders function of a folder listener's rule (listen.SubResources)
// panics, Publish returns the panic as a *listen.PanicError and publishes
// nothing.
//
// Report.Matched counts the listeners selected; a folder listener's
// subscription may still drop the update when its CanRead refuses it.
//
// Folder listeners sit in a prefix index: a map from the normal form of
// each of their URIs (scheme and host lower-cased, percent-encodings
// normalised) to listeners. A resource update looks up its own normal form
// and each URI that covers it: its path's prefixes at '/' boundaries
// (file:///a/b/c.txt looks up file:///a/b/, file:///a/b, file:///a/,
// file:///a, file:/// and file://), so at most 2 x (path depth) + 2
// entries, whatever the number of listeners; a URI with a "." or ".."
// segment looks up only itself. A listener is indexed only under those of
// its URIs that none of its others covers (found in time linear in the
// bytes of its URIs; listen.Open bounds their segments with
// listen.Options.MaxURISegments), so it receives an update once. A rule
// with a Folders function has an index of its own (one per rule value):
// for the URIs it claims, the hub looks up what it returns instead, and
// removes duplicate targets. While no folder listener is open, the exact
// path costs one atomic load more. (BenchmarkPublishResourceUpdatedFolders;
// the figures are in docs/performance.md.)
//
// With a relay joined (Join), Publish first hands ev to it, which carries it
// to the other instances of the server; an error of the relay is returned
// and ev is delivered nowhere.
func (h *Hub) Publish(ev listen.Event) (Report, error) {
	if err := ev.Validate(); err != nil {
		return Report{}, err
	}
	if b := h.relay.Load(); b != nil {
		if err := b.r.Relay(ev); err != nil {
			return Report{}, err
		}
	}
	return h.fanOut(ev)
}

// fanOut delivers a valid event to the local listeners.
func (h *Hub) fanOut(ev listen.Event) (Report, error) {
	var start time.Time // read only with hooks: PublishInfo.Duration
	if h.hooks != nil {
		start = time.Now()
	}
	if ev.Kind == listen.KindResourceUpdated && h.nfolder.Load() > 0 {
		return h.publishFolders(ev, start)
	}
	// Targets are copied under the read lock, into a stack array when few
	// (kept apart from the pooled slice, so that it stays on the stack).
	var stack [stackTargets]*listener
	var targets, big []*listener
	var pooled *[]*listener

	var kbuf [64]byte
	h.mu.RLock()
	var src *set
	if ev.Scope == "" {
		src = h.selectSet(&ev)
	} else {
		src = h.selectScoped(&ev, makeScopeKeys(ev.Scope, kbuf[:0]))
	}
	if src != nil {
		if n := len(src.items); n <= stackTargets {
			for i, m := range src.items {
				stack[i] = m.l
			}
			targets = stack[:n]
		} else {
			pooled = targetPool.Get().(*[]*listener)
			big = slices.Grow((*pooled)[:0], n)
			for _, m := range src.items {
				big = append(big, m.l)
			}
			targets = big
		}
	}
	h.mu.RUnlock()

	r := h.offer(ev, targets)
	if pooled != nil {
		clear(big)
		*pooled = big[:0]
		targetPool.Put(pooled)
	}
	h.published(ev, r, start)
	return r, nil
}

// offer hands ev to each target (skipping, for an extension event, those
// whose filter does not contain its selector) and counts what happened.
func (h *Hub) offer(ev listen.Event, targets []*listener) Report {
	var r Report
	if len(targets) == 0 {
		return r
	}
	e := new(listen.Event)
	*e = ev
	ext := ev.Kind == listen.KindExtension
	var queued int64
	for _, l := range targets {
		if ext && !core.FilterSubsetOf(ev.Selector, l.filter) {
			continue
		}
		switch l.deliver(e, h.maxBuffer, h.overflow) {
		case resDelivered:
			r.Matched++
			r.Delivered++
		case resBuffered:
			r.Matched++
			r.Buffered++
			queued++
		case resReplaced:
			r.Matched++
			r.Buffered++
			r.Dropped++
		case resDropped:
			r.Matched++
			r.Dropped++
		case resEnded:
			r.Matched++
			r.Dropped += 1 + h.maxBuffer // the new event and a full queue
			r.Ended++
		}
	}
	if queued > 0 {
		h.queued.Add(queued)
	}
	if r.Dropped > 0 {
		h.dropped.Add(uint64(r.Dropped))
	}
	if r.Ended > 0 {
		h.behind.Add(uint64(r.Ended))
	}
	return r
}

// published tells the hooks about a publication.
func (h *Hub) published(ev listen.Event, r Report, start time.Time) {
	if h.hooks != nil {
		info := PublishInfo{Report: r, Queued: h.queuedNow(), EventKind: ev.Kind, ExtensionID: ev.ExtensionID,
			Duration: time.Since(start)}
		h.hooks.publish(info)
		if r.Dropped > 0 {
			h.hooks.overflow(OverflowInfo{
				Dropped: r.Dropped, Queued: info.Queued,
				EventKind: ev.Kind, ExtensionID: ev.ExtensionID, Policy: h.overflow,
				Ended: r.Ended,
			})
		}
	}
}

// selectSet returns the set whose members are the candidates for ev. For an
// extension event it is the smallest set among the selector's keys (every
// match has all of them); nil when one of them is held by nobody. h.mu must
// be held.
func (h *Hub) selectSet(ev *listen.Event) *set {
	switch ev.Kind {
	case listen.KindResourceUpdated:
		return h.uris[ev.URI]
	case listen.KindExtension:
		var best *set
		for k := range ev.Selector {
			s := h.keys[k]
			if s == nil {
				return nil
			}
			if best == nil || len(s.items) < len(best.items) {
				best = s
			}
		}
		return best
	}
	// A list change: the listeners whose filter has its key true.
	return h.lists[ev.Kind]
}

// ToolsListChanged publishes listen.ToolsListChanged().
func (h *Hub) ToolsListChanged() Report { return h.mustPublish(listen.ToolsListChanged()) }

// PromptsListChanged publishes listen.PromptsListChanged().
func (h *Hub) PromptsListChanged() Report { return h.mustPublish(listen.PromptsListChanged()) }

// ResourcesListChanged publishes listen.ResourcesListChanged().
func (h *Hub) ResourcesListChanged() Report {
	return h.mustPublish(listen.ResourcesListChanged())
}

// ResourceUpdated publishes listen.ResourceUpdated(uri). It fails like
// Publish when uri is not an absolute URI.
func (h *Hub) ResourceUpdated(uri string) (Report, error) {
	return h.Publish(listen.ResourceUpdated(uri))
}

// mustPublish publishes an event that always validates.
func (h *Hub) mustPublish(ev listen.Event) Report {
	r, _ := h.Publish(ev)
	return r
}

// Shutdown ends every listener gracefully and waits until each has been
// closed, or ctx ends (it then returns ctx's error; the listeners still end).
// Each listener hands out what it has queued, then its Next answers
// listen.ErrClosed, so its subscription writes the completion result and
// closes. Completed listeners take no new events and leave every index, but
// they count in Stats.Subscriptions and Stats.Closing until they are closed.
// After Shutdown the hub refuses new listeners (Open returns an error matching listen.ErrShutdown).
// Shutdown is idempotent; every call waits.
//
// Call it before (or together with) the transports' Shutdown: the
// transports write each completion, the hub only ends the streams.
func (h *Hub) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.shut = true
	h.mu.Unlock()
	h.complete()
	h.mu.Lock()
	if h.closing == 0 {
		h.mu.Unlock()
		return nil
	}
	if h.idle == nil {
		h.idle = make(chan struct{})
	}
	idle := h.idle
	h.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// complete ends every listener gracefully (see Shutdown).
func (h *Hub) complete() {
	var notify []func() // called once h.mu is released
	h.mu.Lock()
	for _, m := range h.all.items {
		l := m.l
		if ok, n := l.complete(); ok {
			l.counted = true
			h.closing++
			if n != nil {
				notify = append(notify, n)
			}
		}
		// Keep only the membership of h.all; the other sets are reset below.
		clear(l.memb[1:])
		l.memb = l.memb[:1]
		l.folder = nil
	}
	h.nfolder.Store(0)
	h.custom = nil
	h.lists = [256]*set{}
	h.uris = make(map[string]*set)
	h.folders = folderIndex{sets: make(map[string]*set)}
	h.keys = make(map[string]*set)
	h.scoped = make(map[string]*set)
	if h.watch != nil {
		h.watch.shutdown()
	}
	subs := len(h.all.items)
	h.mu.Unlock()
	for _, n := range notify {
		n()
	}
	if h.watch != nil {
		h.watch.deliver()
	}

	if h.hooks != nil {
		h.hooks.shutdown(ShutdownInfo{Subscriptions: subs, Queued: h.queuedNow()})
	}
}

// Stats returns a snapshot of the hub's counters. Under concurrent
// publishing and pulling, Queued is approximate; it is exact when the hub is
// quiet.
func (h *Hub) Stats() Stats {
	h.mu.RLock()
	subs, closing := len(h.all.items), h.closing
	h.mu.RUnlock()
	return Stats{
		Subscriptions: subs,
		Closing:       closing,
		Queued:        h.queuedNow(),
		Dropped:       h.dropped.Load(),
		FellBehind:    h.behind.Load(),
		MaxBuffer:     h.maxBuffer,
		Overflow:      h.overflow,
	}
}

// queuedNow reads the queued total. Publish adds its queued events after
// delivering them, so a racing Next can briefly make the sum negative.
func (h *Hub) queuedNow() int {
	return int(max(h.queued.Load(), 0))
}

// OpenInfo describes an open.
type OpenInfo struct {
	// Subscriptions is the number of listeners after the open.
	Subscriptions int
	// FilterKeys are the accepted filter's keys, sorted.
	FilterKeys []string
	// RequestID is the listen request's id (the zero ID without a request).
	RequestID jsonrpc.ID
	// Transport is the request's transport kind.
	Transport string
}

// PublishInfo describes a publication: its report, the hub's queued total
// after it, and the event's kind (and extension id for extension events).
type PublishInfo struct {
	// Report is what Publish returned.
	Report
	// Queued is the hub's queued total after the publication.
	Queued int
	// EventKind is the published event's kind.
	EventKind listen.Kind
	// ExtensionID is the extension id of an extension event ("" otherwise).
	ExtensionID string
	// Duration is how long the fan-out took: from the event's validation
	// to the last listener's hand-over, queueing or drop (the time is read
	// only when the hub has hooks).
	Duration time.Duration
}

// OverflowInfo describes the drops of one publication.
type OverflowInfo struct {
	// Dropped is the publication's Report.Dropped.
	Dropped int
	// Queued is the hub's queued total after the publication.
	Queued int
	// EventKind is the published event's kind.
	EventKind listen.Kind
	// ExtensionID is the extension id of an extension event ("" otherwise).
	ExtensionID string
	// Policy is the hub's overflow policy.
	Policy Overflow
	// Ended is the publication's Report.Ended: the listeners it ended
	// (EndListener).
	Ended int
}

// ShutdownInfo describes the completion of the listeners by Shutdown.
type ShutdownInfo struct {
	// Subscriptions counts the listeners (all now completing).
	Subscriptions int
	// Queued is the hub's queued total, still to be handed out.
	Queued int
}

// CloseInfo describes a listener's close.
type CloseInfo struct {
	// Subscriptions is the number of listeners remaining.
	Subscriptions int
	// Reason is the close reason classified by listen.Classify: "complete",
	// "cancelled", "disconnected", "error", "shutdown", an early ending's
	// class or "other".
	Reason string
	// Err is the close reason itself.
	Err error
}

// hooks are the callbacks of Options: its On* fields, each after the
// Logger's line when Logger is set; nil when none is set, so that a hub
// without instrumentation does not even read the clock.
type hooks struct {
	open     func(OpenInfo)
	publish  func(PublishInfo)
	overflow func(OverflowInfo)
	shutdown func(ShutdownInfo)
	close    func(CloseInfo)
}

func newHooks(o Options) *hooks {
	if o.Logger == nil && o.OnOpen == nil && o.OnPublish == nil && o.OnOverflow == nil &&
		o.OnShutdown == nil && o.OnClose == nil {
		return nil
	}
	h := &hooks{
		open:     orNop(o.OnOpen),
		publish:  orNop(o.OnPublish),
		overflow: orNop(o.OnOverflow),
		shutdown: orNop(o.OnShutdown),
		close:    orNop(o.OnClose),
	}
	if o.Logger != nil {
		l := slogHooks{o.Logger}
		h.open = then(l.onOpen, h.open)
		h.publish = then(l.onPublish, h.publish)
		h.overflow = then(l.onOverflow, h.overflow)
		h.shutdown = then(l.onShutdown, h.shutdown)
		h.close = then(l.onClose, h.close)
	}
	return h
}

func orNop[T any](f func(T)) func(T) {
	if f == nil {
		return func(T) {}
	}
	return f
}

// then returns a function that calls first, then next.
func then[T any](first, next func(T)) func(T) {
	return func(i T) { first(i); next(i) }
}

// slogHooks write the lines of Options.Logger.
type slogHooks struct{ l *slog.Logger }

func (s slogHooks) enabled(level slog.Level) bool {
	return s.l.Enabled(context.Background(), level)
}

// onOpen logs at Debug.
func (s slogHooks) onOpen(i OpenInfo) {
	if !s.enabled(slog.LevelDebug) {
		return
	}
	s.l.LogAttrs(context.Background(), slog.LevelDebug, "subscription hub open",
		slog.Int("subscriptions", i.Subscriptions),
		slog.Any("filter_keys", i.FilterKeys),
		slog.String("request_id", i.RequestID.Raw()),
		slog.String("transport", i.Transport))
}

// onPublish logs at Debug.
func (s slogHooks) onPublish(i PublishInfo) {
	if !s.enabled(slog.LevelDebug) {
		return
	}
	attrs := []slog.Attr{
		slog.Int("matched", i.Matched),
		slog.Int("delivered", i.Delivered),
		slog.Int("buffered", i.Buffered),
		slog.Int("dropped", i.Dropped),
		slog.Int("queued", i.Queued),
		slog.String("event_kind", i.EventKind.String()),
	}
	if i.EventKind == listen.KindExtension {
		attrs = append(attrs, slog.String("extension_id", i.ExtensionID))
	}
	s.l.LogAttrs(context.Background(), slog.LevelDebug, "subscription hub publish", attrs...)
}

// onOverflow logs at Warn.
func (s slogHooks) onOverflow(i OverflowInfo) {
	if !s.enabled(slog.LevelWarn) {
		return
	}
	attrs := []slog.Attr{
		slog.Int("dropped", i.Dropped),
		slog.Int("queued", i.Queued),
		slog.String("event_kind", i.EventKind.String()),
	}
	if i.EventKind == listen.KindExtension {
		attrs = append(attrs, slog.String("extension_id", i.ExtensionID))
	}
	attrs = append(attrs, slog.String("policy", i.Policy.String()))
	if i.Ended > 0 {
		attrs = append(attrs, slog.Int("ended", i.Ended))
	}
	s.l.LogAttrs(context.Background(), slog.LevelWarn, "subscription hub overflow", attrs...)
}

// onShutdown logs at Info.
func (s slogHooks) onShutdown(i ShutdownInfo) {
	if !s.enabled(slog.LevelInfo) {
		return
	}
	s.l.LogAttrs(context.Background(), slog.LevelInfo, "subscription hub shutdown",
		slog.Int("subscriptions", i.Subscriptions),
		slog.Int("queued", i.Queued))
}

// onClose logs at Debug, or at Info for an early ending (the server ended
// the stream: revoked, expired, lifetime, fell behind).
func (s slogHooks) onClose(i CloseInfo) {
	level := slog.LevelDebug
	switch i.Reason {
	case "revoked", "expired", "lifetime", "fell_behind":
		level = slog.LevelInfo
	}
	if !s.enabled(level) {
		return
	}
	s.l.LogAttrs(context.Background(), level, "subscription hub close",
		slog.Int("subscriptions", i.Subscriptions),
		slog.String("reason", i.Reason))
}

// kindOf is the listen.Kind a filter key selects: 0 for an extension's key.
func kindOf(key string) listen.Kind { return listen.Kind(core.KindOf(key)) }

// ErrRelayJoined is returned when a bridge (natsbridge, redisbridge, a
// cluster.Node) is started on a hub another one has already joined: a hub
// has at most one relay, which carries its publications to the other
// instances of the server (see Publish).
var ErrRelayJoined = errors.New("hub: another relay has joined this hub")

// relayBox holds the joined relay (an interface value cannot be stored in
// an atomic.Pointer directly).
type relayBox struct{ r hubrelay.Relay }

func init() {
	hubrelay.Join = func(h any, r hubrelay.Relay) error { return h.(*Hub).join(r) }
	hubrelay.Leave = func(h any, r hubrelay.Relay) { h.(*Hub).leave(r) }
	hubrelay.PublishLocal = func(h any, ev listen.Event) (any, error) { return h.(*Hub).publishLocal(ev) }
}

// join makes r the hub's relay: every later Publish hands its event to r
// before the local fan-out (see hubrelay.Relay). A hub has at most one
// relay: join fails with ErrRelayJoined while another is joined. leave
// undoes it.
func (h *Hub) join(r hubrelay.Relay) error {
	if r == nil {
		return errors.New("hub: Join needs a relay")
	}
	if !h.relay.CompareAndSwap(nil, &relayBox{r: r}) {
		return ErrRelayJoined
	}
	return nil
}

// leave detaches r, if it is the hub's relay: later publications stay
// local. A Publish already inside r.Relay finishes normally.
func (h *Hub) leave(r hubrelay.Relay) {
	if b := h.relay.Load(); b != nil && b.r == r {
		h.relay.CompareAndSwap(b, nil)
	}
}

// publishLocal delivers ev to this hub's listeners only, exactly as
// Publish does without a relay: a relay delivers with it the events it
// receives from other instances (and its resynchronisation hints). It
// fails like Publish.
func (h *Hub) publishLocal(ev listen.Event) (Report, error) {
	if err := ev.Validate(); err != nil {
		return Report{}, err
	}
	return h.fanOut(ev)
}
