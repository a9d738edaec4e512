package listen

import (
	"context"
	"strings"

	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/internal/resuri"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// This file holds the shaping side of Options.SubResources: which updates a
// subscription's URIs cover, and the CanRead check of each covered update.
// The rule itself lives in internal/resuri, shared with the hub.

// SubResources is the sub-resource rule of a server's listens
// (Options.SubResources). Set one value once, in the Options the transports
// serve with; Open hands it to the Source (Request.SubResources), so the
// hub needs no setting of its own. Do not modify it once listens are open
// with it.
//
// By default a URI of resourceSubscriptions covers only itself: an update is
// delivered when its URI equals an accepted URI byte for byte.
// With Options.SubResources a subscribed URI also covers its sub-resources,
// as MCP allows ("the uri might be a sub-resource of the one that the client
// actually subscribed to"): a client that listens on file:///project/ hears
// about file:///project/src/main.go. The acknowledgement is the same either
// way (it echoes the accepted URIs). Such a URI may have at most
// Options.MaxURISegments path segments (128 by default; -32602 beyond).
//
// Both URIs are first normalised as RFC 3986 section 6.2.2 says: the scheme
// and the host lower-cased (ASCII letters only); the hex digits of a
// percent-encoding upper-cased (%2f is %2F); a percent-encoded unreserved
// character (ALPHA, DIGIT, '-', '.', '_', '~') decoded (%7E is ~). Nothing
// else is decoded, so %2F is never a '/'. Dot segments are not resolved, and
// there is no scheme-based normalisation (http://h:80/a is not http://h/a;
// non-ASCII bytes are compared as they are). Then a subscribed URI S covers
// an updated URI U when:
//
//   - S equals U; or
//   - S has no query and no fragment; S and U have the same scheme and the
//     same authority (both absent, or both present and equal: userinfo and
//     port exactly, host case-insensitively); no segment of U's path is "."
//     or ".." (%2E counts as '.'); and S's path is U's path, or a prefix of
//     it that ends at a '/' boundary: S's path ends with '/', or the next
//     character of U's path is '/'. U's query and fragment play no part.
//
// So file:///a/ and file:///a both cover file:///a/b, file:///a/b/c and
// file:///a/b?v=2, and FILE:///a covers file:///a/b. file:///a does not
// cover file:///ab (a prefix, but not at a segment boundary), file:///a%2Fb,
// file://host/a/b (another authority), http:///a/b (another scheme) or
// file:///a/../b (a URI with a dot segment is covered only by a subscription
// equal to it, so ".." never climbs out of a folder nor into one).
// file:///a?v=2 and file:///a#f cover only themselves. http://h covers
// http://h/ and http://h/x; http://h/ does not cover http://h.
//
// SubResources.Folders replaces this rule for the updated URIs it claims,
// for schemes whose hierarchy is not the path: given db://h/s.t.r it may
// return db://h/s.t and db://h/s (and ok true), and those, normalised as
// above, are the URIs that cover it besides itself.
//
// CanRead applies to every delivered URI. It narrows the subscribed URIs at
// Open, as without SubResources; and when an update is shaped whose URI is
// covered without being one of the accepted URIs byte for byte, it is asked
// again, with that URI, and a refused update is dropped: a listener never
// receives an update for a sub-resource its principal may not read. On
// delivery CanRead gets Serve's context (context.Background() under
// Notification) and a detached Request holding only ID,
// ProtocolVersion, ClientInfo, Transport.Kind, Transport.RemoteAddr and
// Auth, which the subscription keeps while it lives (never the params, the
// _meta, the client capabilities or the headers): decide from Auth. It runs
// on the goroutine serving the stream, once per covered update, so keep it
// fast. A CanRead or SubResources.Folders that panics while an update is shaped
// fails the stream, as an invalid event does.
//
// Open hands the rule to the Source (Request.SubResources): the hub applies
// it to the listeners opened with it, through a prefix index. Another Source must send
// the covered updates itself; the subscription drops what its URIs do not
// cover either way.
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
func newResourceMatch(req *Request, id jsonrpc.ID, opts *Options, uris []string) *resourceMatch {
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
		m.view = detachedRequest(req, id)
	}
	return m
}

// detachedRequest copies what CanRead may look at on delivery: the id (the
// subscription's copy, id), the protocol version, the client info, the
// transport's kind and address, and Auth. It shares no memory with req but
// Auth's value. The version is the one Open accepted, and the usual kinds
// are constants, so neither is copied.
func detachedRequest(req *Request, id jsonrpc.ID) *Request {
	var kind string
	switch k := req.Transport.Kind; k {
	case "streamable_http": // the library's transports: constants
		kind = "streamable_http"
	case "stdio":
		kind = "stdio"
	default:
		kind = strings.Clone(k)
	}
	v := &Request{
		ID:              id,
		ProtocolVersion: spec.ProtocolVersion,
		Transport: Transport{
			Kind:       kind,
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
	if p := catch("SubResources.Folders", func() { fs, ok = m.folders(uri) }); p != nil {
		return nil, false, deliveryPanic(p)
	}
	return fs, ok, nil
}

func (m *resourceMatch) readable(ctx context.Context, uri string) (ok bool, err error) {
	if p := catch("Options.CanRead", func() { ok = m.canRead(ctx, m.view, uri) }); p != nil {
		return false, deliveryPanic(p)
	}
	return ok, nil
}

// deliveryPanic is the error of a policy that panicked while an update was
// shaped: the stream fails with "Subscription source failed".
func deliveryPanic(p *PanicError) error {
	return jsonrpc.NewError(jsonrpc.CodeInternalError, core.SourceFailed).WithCause(p)
}
