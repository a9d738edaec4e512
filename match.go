package listen

import (
	"context"
	"strings"

	"github.com/mcplisten/listen/internal/resuri"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// This file holds the shaping side of Options.SubResources: which updates a
// subscription's URIs cover, and the CanRead check of each covered update.
// The rule itself lives in internal/resuri, shared with the hub.

// SubResources is the sub-resource rule of a server's listens
// (Options.SubResources): a URI of resourceSubscriptions covers its
// sub-resources by the rule of the package documentation (Sub-resources),
// or by Folders for the updated URIs it claims. Set one value once, in the
// Options the transports serve with; Open hands it to the Source
// (Request.SubResources), so the hub needs no setting of its own. Do not
// modify it once listens are open with it.
type SubResources struct {
	// Folders, if set, replaces the built-in rule for the updated URIs it
	// claims (ok true), for schemes whose hierarchy is not the path: it
	// returns the URIs that cover uri besides itself (given db://h/s.t.r,
	// say, db://h/s.t and db://h/s). With ok false the built-in rule
	// applies. It runs when an update is shaped and, in the hub, once per
	// published resource update; it must be fast and safe for concurrent
	// use. A Folders that panics while an update is shaped fails the
	// stream; in the hub's Publish it is an error.
	Folders func(uri string) (folders []string, ok bool)
}

// resourceMatch is what a subscription opened with Options.SubResources
// keeps to decide whether an update it does not watch exactly is covered
// and readable.
type resourceMatch struct {
	// keys are the normal forms (resuri.Canonical) of the accepted URIs,
	// without duplicates; keySet indexes them when there are many.
	keys   []string
	keySet map[string]struct{}
	// folders is Options.SubResources.Folders.
	folders func(uri string) (folders []string, ok bool)
	// canRead is Options.CanRead, asked about every covered update.
	canRead func(ctx context.Context, req *Request, uri string) bool
	// view is the detached request canRead gets: no params, meta, client
	// capabilities or headers.
	view *Request
}

// newResourceMatch returns the matcher of a subscription opened with opts
// that accepted uris, or nil when opts.SubResources is nil or there is no
// URI to cover anything.
func newResourceMatch(req *Request, opts *Options, uris []string) *resourceMatch {
	if opts.SubResources == nil || len(uris) == 0 {
		return nil
	}
	m := &resourceMatch{folders: opts.SubResources.Folders, canRead: opts.CanRead}
	for _, u := range uris {
		k := resuri.Canonical(u)
		if !m.has(k) {
			m.keys = append(m.keys, k)
			if m.keySet != nil {
				m.keySet[k] = struct{}{}
			} else if len(m.keys) > smallList {
				m.keySet = make(map[string]struct{}, len(uris))
				for _, k := range m.keys {
					m.keySet[k] = struct{}{}
				}
			}
		}
	}
	if m.canRead != nil {
		m.view = detachedRequest(req)
	}
	return m
}

// detachedRequest copies what CanRead may look at on delivery: the id, the
// protocol version, the client info, the transport's kind and address, and
// Auth. It shares no memory with req but Auth's value.
func detachedRequest(req *Request) *Request {
	v := &Request{
		ID:              cloneID(req.ID),
		ProtocolVersion: strings.Clone(req.ProtocolVersion),
		Transport: Transport{
			Kind:       strings.Clone(req.Transport.Kind),
			RemoteAddr: strings.Clone(req.Transport.RemoteAddr),
		},
		Auth: req.Auth,
	}
	if ci := req.ClientInfo; ci != nil {
		v.ClientInfo = &Implementation{
			Name:    strings.Clone(ci.Name),
			Version: strings.Clone(ci.Version),
			Title:   strings.Clone(ci.Title),
		}
	}
	return v
}

func (m *resourceMatch) has(key string) bool {
	if m.keySet != nil {
		_, ok := m.keySet[key]
		return ok
	}
	for _, k := range m.keys {
		if k == key {
			return true
		}
	}
	return false
}

// deliver reports whether an update of uri, which is not one of the
// accepted URIs, is delivered: a subscribed URI covers it and CanRead, if
// set, allows it. A panic in SubResources.Folders or CanRead is an error (the
// stream fails).
func (m *resourceMatch) deliver(ctx context.Context, uri string) (bool, error) {
	ok, err := m.covers(uri)
	if !ok || err != nil || m.canRead == nil {
		return ok, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	return m.readable(ctx, uri)
}

// covers reports whether a subscribed URI covers uri (see
// Options.SubResources).
func (m *resourceMatch) covers(uri string) (bool, error) {
	c := resuri.Canonical(uri)
	if m.has(c) {
		return true, nil
	}
	if m.folders != nil {
		fs, claimed, err := m.customFolders(uri)
		if err != nil {
			return false, err
		}
		if claimed {
			for _, f := range fs {
				if m.has(resuri.Canonical(f)) {
					return true, nil
				}
			}
			return false, nil
		}
	}
	found := false
	resuri.Folders(c, func(f string) bool {
		found = m.has(f)
		return !found
	})
	return found, nil
}

func (m *resourceMatch) customFolders(uri string) (fs []string, ok bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			fs, ok, err = nil, false, deliveryPanic("SubResources.Folders", v)
		}
	}()
	fs, ok = m.folders(uri)
	return fs, ok, nil
}

func (m *resourceMatch) readable(ctx context.Context, uri string) (ok bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			ok, err = false, deliveryPanic("Options.CanRead", v)
		}
	}()
	return m.canRead(ctx, m.view, uri), nil
}

// deliveryPanic is the error of a policy that panicked while an update was
// shaped: the stream fails with "Subscription source failed".
func deliveryPanic(op string, v any) error {
	return jsonrpc.NewError(jsonrpc.CodeInternalError, spec.MsgSourceFailed).WithCause(newPanicError(op, v))
}
