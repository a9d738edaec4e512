package gosdk

import (
	"context"
	"errors"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/spec"
)

// source is a Bridge seen as a listen.Source.
type source Bridge

// Open narrows supported against the capabilities server/discover
// advertises now, subscribes the observer to the URIs the listen watches,
// and opens the listen on the hub.
func (s *source) Open(ctx context.Context, req *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	b := (*Bridge)(s)
	caps, err := b.caps(ctx, supported)
	if err != nil {
		return nil, nil, err
	}
	// Normally the capabilities allow the whole supported filter: the hub
	// then keeps that very map, which the subscription shares (one copy of
	// the filter per open listen, not three).
	f := supported
	if !allows(caps, supported) {
		f = narrowTo(supported, caps)
	}
	uris := f.Strings(spec.KeyResourceSubscriptions)
	if err := b.acquire(ctx, uris); err != nil {
		return nil, nil, err
	}
	accepted, st, err := b.hub.Open(ctx, req, f)
	if err != nil {
		b.release(uris)
		return nil, nil, err
	}
	if len(uris) == 0 {
		return accepted, st, nil
	}
	return accepted, listen.WrapStream(st, listen.StreamHooks{Close: func(error) { b.release(uris) }}), nil
}

// narrowTo keeps the core keys of f that caps allow, and every other key
// (extension keys, which the core has narrowed already).
func narrowTo(f listen.Filter, caps listen.Capabilities) listen.Filter {
	out := make(listen.Filter, len(f))
	for k, v := range f {
		switch k {
		case spec.KeyToolsListChanged:
			if !caps.ToolsListChanged {
				continue
			}
		case spec.KeyPromptsListChanged:
			if !caps.PromptsListChanged {
				continue
			}
		case spec.KeyResourcesListChanged:
			if !caps.ResourcesListChanged {
				continue
			}
		case spec.KeyResourceSubscriptions:
			if !caps.ResourcesSubscribe {
				continue
			}
		}
		out[k] = v
	}
	return out
}

// allows reports whether caps allow every core key of f (narrowTo would
// keep f whole).
func allows(caps listen.Capabilities, f listen.Filter) bool {
	for k := range f {
		switch {
		case k == spec.KeyToolsListChanged && !caps.ToolsListChanged,
			k == spec.KeyPromptsListChanged && !caps.PromptsListChanged,
			k == spec.KeyResourcesListChanged && !caps.ResourcesListChanged,
			k == spec.KeyResourceSubscriptions && !caps.ResourcesSubscribe:
			return false
		}
	}
	return true
}

// acquire makes the observer watch every URI in uris, taking one reference
// to each. On failure, it releases what it took.
func (b *Bridge) acquire(ctx context.Context, uris []string) error {
	for i, u := range uris {
		if err := b.acquireOne(ctx, u); err != nil {
			b.release(uris[:i])
			return err
		}
	}
	return nil
}

func (b *Bridge) acquireOne(ctx context.Context, uri string) error {
	b.watchMu.Lock()
	w := b.watches[uri]
	if w == nil {
		w = &watch{}
		b.watches[uri] = w
	}
	w.refs++
	b.watchMu.Unlock()

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.subscribed {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	_, err := b.observer.call(cctx, "resources/subscribe", map[string]any{"uri": uri})
	if err == nil {
		w.subscribed = true
		b.subscribes.Add(1)
		return nil
	}
	b.watchMu.Lock()
	w.refs--
	if w.refs == 0 && !w.subscribed {
		delete(b.watches, uri)
	}
	b.watchMu.Unlock()
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	b.log.Warn("gosdk: resources/subscribe failed; the listen is refused", "uri", uri, "err", err)
	return err
}

// release drops one reference to each URI; the observer unsubscribes from a
// URI nobody watches any more.
func (b *Bridge) release(uris []string) {
	for _, u := range uris {
		b.releaseOne(u)
	}
}

func (b *Bridge) releaseOne(uri string) {
	b.watchMu.Lock()
	w := b.watches[uri]
	if w == nil {
		b.watchMu.Unlock()
		return
	}
	w.refs--
	b.watchMu.Unlock()

	w.mu.Lock()
	defer w.mu.Unlock()
	b.watchMu.Lock()
	last := w.refs == 0
	b.watchMu.Unlock()
	if last && w.subscribed {
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		_, err := b.observer.call(ctx, "resources/unsubscribe", map[string]any{"uri": uri})
		cancel()
		if err != nil && !errors.Is(err, errLinkClosed) {
			b.log.Warn("gosdk: resources/unsubscribe failed", "uri", uri, "err", err)
		}
		w.subscribed = false
		b.unsubs.Add(1)
	}
	b.watchMu.Lock()
	if w.refs == 0 && !w.subscribed && b.watches[uri] == w {
		delete(b.watches, uri)
	}
	b.watchMu.Unlock()
}
