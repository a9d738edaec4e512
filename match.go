package listen

import (
	"context"
	"strings"

	"github.com/mcplisten/listen/internal/resuri"
	"github.com/mcplisten/listen/jsonrpc"
)

// This file holds the shaping side of Options.SubResources: which updates a
// subscription's URIs cover, and the CanRead check of each covered update.
// The rule itself lives in internal/resuri, shared with the hub.

// resourceMatch is what a subscription opened with Options.SubResources
// keeps to decide whether an update it does not watch exactly is covered
// and readable.
type resourceMatch struct {
	// keys are the normal forms (resuri.Canonical) of the accepted URIs,
	// without duplicates; keySet indexes them when there are many.
	keys   []string
	keySet map[string]struct{}
	// folders is Options.ResourceFolders.
	folders func(uri string) (folders []string, ok bool)
	// canRead is Options.CanRead, asked about every covered update.
	canRead func(ctx context.Context, req *Request, uri string) bool
	// view is the detached request canRead gets: no params, meta, client
	// capabilities or headers.
	view *Request
}

// newResourceMatch returns the matcher of a subscription opened with opts
// that accepted uris, or nil when opts.SubResources is off or there is no
// URI to cover anything.
func newResourceMatch(req *Request, opts *Options, uris []string) *resourceMatch {
	if !opts.SubResources || len(uris) == 0 {
		return nil
	}
	m := &resourceMatch{folders: opts.ResourceFolders, canRead: opts.CanRead}
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
// set, allows it. A panic in ResourceFolders or CanRead is an error (the
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
			fs, ok, err = nil, false, deliveryPanic("Options.ResourceFolders", v)
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
	return jsonrpc.NewError(jsonrpc.CodeInternalError, jsonrpc.MsgSourceFailed).WithCause(newPanicError(op, v))
}

// sourceContext is the context Source.Open gets: marked for the hub (and
// any source of this module) when opts.SubResources is on.
func sourceContext(ctx context.Context, opts *Options) context.Context {
	if opts.SubResources && ctx != nil {
		return resuri.WithSubResources(ctx)
	}
	return ctx
}
