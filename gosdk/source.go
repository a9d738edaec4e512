package gosdk

import (
	"context"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/spec"
)

// source is a Bridge seen as a listen.Source.
type source Bridge

// Open narrows supported against the capabilities server/discover
// advertises now and opens the listen on the hub. Its resource URIs live in
// the hub's index only: nothing is asked of the go-sdk server per URI.
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
	return b.hub.Open(ctx, req, f)
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
