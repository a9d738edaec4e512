package mcpgo

import (
	"context"

	"github.com/mcplisten/listen"
)

// source is a Bridge seen as a listen.Source.
type source Bridge

// Open narrows supported against the capabilities server/discover
// advertises now and opens the listen on the hub. mcp-go needs no
// per-listen call: its resources/updated are broadcasts.
func (s *source) Open(ctx context.Context, req *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	b := (*Bridge)(s)
	caps, err := b.caps(ctx, supported)
	if err != nil {
		return nil, nil, err
	}
	// Normally the capabilities allow the whole supported filter: the hub
	// then keeps that very map, which the subscription shares.
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
		if !allowsKey(caps, k) {
			continue
		}
		out[k] = v
	}
	return out
}

// allows reports whether caps allow every core key of f.
func allows(caps listen.Capabilities, f listen.Filter) bool {
	for k := range f {
		if !allowsKey(caps, k) {
			return false
		}
	}
	return true
}

// allowsKey reports whether caps allow the filter key k (any key but the
// four core ones is allowed: the core narrows extension keys).
func allowsKey(caps listen.Capabilities, k string) bool {
	switch k {
	case listen.KeyToolsListChanged:
		return caps.ToolsListChanged
	case listen.KeyPromptsListChanged:
		return caps.PromptsListChanged
	case listen.KeyResourcesListChanged:
		return caps.ResourcesListChanged
	case listen.KeyResourceSubscriptions:
		return caps.ResourcesSubscribe
	}
	return true
}
