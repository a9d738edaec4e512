package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/sessions"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

// defaultMaxBodyBytes is the default HandlerOptions.MaxBodyBytes (512 KiB,
// as streamhttp.FrontOptions.MaxBodyBytes).
const defaultMaxBodyBytes = 512 << 10

// HandlerOptions configure NewHandler: the user's options of the endpoint,
// which the adapter passes on, and the SDK's own HTTP handlers.
type HandlerOptions struct {
	// HTTP configures the listen handler (limits, keep-alives, write
	// deadlines, hooks, Authenticate; see streamhttp.Options). Its Origin
	// and Host rules (AllowedHosts, AllowedOrigins, CheckOrigin) and
	// ReadTimeout apply to every request of the endpoint. NewHandler sets
	// RequireHeaders to true. The listens' policy (limits, hooks, the
	// drain) is the Bridge's Options.Listen: NewHandler serves them with a
	// listen.Server of those options (Bridge.ListenOptions, with
	// SupportedVersions set to Versions).
	HTTP streamhttp.Options
	// Sessions bound and expire the SDK's sessions (those with a session
	// id: the clients of earlier versions) in front of Legacy: at most MaxPerClient open at once per client
	// (default 1,000) and Max in all (default 10,000), so that a flood from
	// one client cannot take every slot. An initialize beyond them is
	// answered 429 (the client's share: -32603 "Too many sessions open
	// for this client") or 503 (every slot: -32603 "Server busy: too many
	// sessions"), with Retry-After, and never reaches
	// the SDK. A slot is free again as soon as its session is deleted,
	// ends, or expires. A session no request has used for IdleTimeout
	// (default 30 minutes; an open GET stream is use) is ended (End, which
	// the adapter sets). A request naming a session id that was never
	// issued here, or has ended or expired, is answered 404 "Session not
	// found" (plain text, as the SDKs answer it) before the SDK sees it:
	// route every request of a session to the instance that issued it.
	// GET streams are bounded by MaxGetStreams (default 10,000: 503
	// "Server busy: too many GET streams") and MaxPerClient (429 "Too many
	// GET streams open for this client"). ClientKey, if nil, is the connection's address:
	// behind a reverse proxy, give one that reads the address your proxy
	// forwards.
	Sessions SessionOptions
	// MaxBodyBytes bounds the body of every request of the endpoint but
	// listens, which HTTP.MaxBodyBytes bounds (413). Zero means
	// 512 KiB (as streamhttp.FrontOptions.MaxBodyBytes); negative is an
	// error.
	MaxBodyBytes int64
	// WrapSource, if set, wraps the Bridge's source before the listen
	// handler serves it (an instrumented source, such as the otel module's
	// Metrics.Source).
	WrapSource func(listen.Source) listen.Source

	// Versions are the protocol versions the SDK serves over HTTP, newest
	// first. Nil means those the server's server/discover lists.
	Versions []string
	// Modern, which must be set, serves the requests that are not listens
	// and name 2026-07-28 or later (in MCP-Protocol-Version, or, without
	// that header, in the body's _meta), and every request that is not a
	// listen when Legacy is nil.
	Modern http.Handler
	// Legacy, if set, serves the other requests (clients of earlier
	// versions: initialize, Mcp-Session-Id, the GET stream, DELETE), behind
	// Sessions.
	Legacy http.Handler
	// Close, if set, ends the SDK's own sessions at Shutdown, after the
	// listens.
	Close func(ctx context.Context)
}

// Handler serves one MCP Streamable HTTP endpoint for an SDK's server:
// subscriptions/listen with this library (streamhttp, from the Bridge's
// hub), everything else with the SDK's own handlers.
//
// Every request passes the same front first (streamhttp.FrontWith): the
// Origin and Host check of HTTP (403), a body bounded in bytes
// (MaxBodyBytes, 413) and in time (HTTP.ReadTimeout, 408). Every
// subscriptions/listen, whatever its headers or version, is this
// library's: recognised by its Mcp-Method header or by its body, it is
// served, or refused, by the listen handler alone (a version the server
// speaks before 2026-07-28: 404 -32601; any other version it does not
// speak: 400 -32022 with data.supported), under its limits, counters and
// Shutdown; the SDK's own listen code never runs. Any other request naming
// in MCP-Protocol-Version a version the server does not speak is answered
// 400 -32022 in the same form. The rest goes to the SDK (see
// HandlerOptions.Modern and Legacy).
//
// Shutdown ends it. A Handler is safe for concurrent use.
type Handler struct {
	bridge   *Bridge
	listen   *streamhttp.Handler
	front    http.Handler
	modern   http.Handler
	sessions *sessions.Sessions // fronts Legacy; nil without it
	versions []string
	close    func(context.Context)
}

// NewHandler returns the Handler serving b over HTTP. It fails for a
// negative MaxBodyBytes, a nil Modern, and as streamhttp.New does for
// invalid HTTP options; it then calls HandlerOptions.Close and closes b.
func NewHandler(b *Bridge, opts HandlerOptions) (*Handler, error) {
	h, err := newHandler(b, opts)
	if err != nil {
		if opts.Close != nil {
			opts.Close(context.Background())
		}
		_ = b.Close()
	}
	return h, err
}

func newHandler(b *Bridge, opts HandlerOptions) (*Handler, error) {
	name := b.sdk.Name
	if opts.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("%s: negative MaxBodyBytes: every request body must be bounded", name)
	}
	if opts.Modern == nil {
		return nil, errors.New(name + ": adapter.HandlerOptions without Modern")
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = defaultMaxBodyBytes
	}
	if opts.Versions == nil {
		opts.Versions = slices.Clone(b.versions)
	}
	ho := opts.HTTP
	ho.RequireHeaders = true
	lo := b.ListenOptions()
	lo.SupportedVersions = opts.Versions
	src := b.Source()
	if opts.WrapSource != nil {
		src = opts.WrapSource(src)
	}
	lh, err := streamhttp.New(listen.NewServer(src, lo), ho)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	h := &Handler{bridge: b, listen: lh, modern: opts.Modern, versions: opts.Versions, close: opts.Close}
	if opts.Legacy != nil {
		h.sessions = sessions.New(opts.Legacy, opts.Sessions.internal())
	}
	h.front = streamhttp.FrontWith(lh, http.HandlerFunc(h.route), streamhttp.FrontOptions{MaxBodyBytes: opts.MaxBodyBytes})
	return h, nil
}

// ServeHTTP serves r (see Handler).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.front.ServeHTTP(w, r) }

// route sends a request that is not a listen, once the front has checked
// and read it, to the SDK's handler of its era.
func (h *Handler) route(w http.ResponseWriter, r *http.Request) {
	v := strings.TrimSpace(r.Header.Get("MCP-Protocol-Version"))
	if v != "" && !slices.Contains(h.versions, v) {
		m, _ := streamhttp.FrontMessage(r)
		body := jsonrpc.ErrorResponse(m.ID, spec.UnsupportedVersionError(h.versions, v))
		hdr := w.Header()
		hdr.Set("Content-Type", "application/json")
		hdr.Set("Content-Length", strconv.Itoa(len(body)))
		hdr.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(body)
		return
	}
	if h.sessions == nil || v >= spec.ProtocolVersion || (v == "" && namesVersion(r)) {
		h.modern.ServeHTTP(w, r)
		return
	}
	h.sessions.ServeHTTP(w, r)
}

// namesVersion reports whether r's body, as the front parsed it, names a
// protocol version in its _meta, as only requests of 2026-07-28 or later
// do (one sent without its MCP-Protocol-Version header).
func namesVersion(r *http.Request) bool {
	m, ok := streamhttp.FrontMessage(r)
	if !ok || len(m.Params) == 0 {
		return false
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return false
	}
	_, named := p.Meta[spec.MetaProtocolVersion]
	return named
}

// Shutdown stops the expiry of older clients' sessions, and ends every
// listen stream gracefully: each first gets every change the server made
// before the call (the SDK's Flush, then the hub is shut down: a hub given in
// Options.Hub and shared with another transport ends that transport's
// streams too), then its completion result; new listens are refused with
// 503, and Shutdown waits for the streams as streamhttp.Handler.Shutdown
// does. Then it ends the SDK's own sessions (HandlerOptions.Close: the GET
// streams of older clients end, so that http.Server.Shutdown can return)
// and closes the Bridge. It returns ctx's error if the streams did not all
// end in time (the rest is done all the same). Stop the http.Server after
// it. Shutdown is idempotent.
func (h *Handler) Shutdown(ctx context.Context) error {
	if h.sessions != nil {
		h.sessions.Close()
	}
	h.bridge.flush()
	var err error
	if h.listen.Server().Options().DrainWindow > 0 {
		// A paced drain: the Server spreads the completions over its
		// window, then the hub ends nothing left.
		err = errors.Join(h.listen.Shutdown(ctx), h.bridge.hub.Shutdown(ctx))
	} else {
		// At once: the hub hands each stream what is queued before its
		// completion.
		err = errors.Join(h.bridge.hub.Shutdown(ctx), h.listen.Shutdown(ctx))
	}
	if h.close != nil {
		h.close(ctx)
	}
	_ = h.bridge.Close()
	return err
}

// ResourceUpdated tells every listen and every older client watching uri
// that the resource changed, each exactly once (see Bridge.ResourceUpdated).
func (h *Handler) ResourceUpdated(ctx context.Context, uri string) error {
	return h.bridge.ResourceUpdated(ctx, uri)
}

// Bridge returns the Handler's Bridge (capabilities, counters).
func (h *Handler) Bridge() *Bridge { return h.bridge }

// Listen returns the listen handler (CheckOrigin).
func (h *Handler) Listen() *streamhttp.Handler { return h.listen }

// Server returns the listen.Server serving the Handler's listens (its
// Stats, EndStreams).
func (h *Handler) Server() *listen.Server { return h.listen.Server() }

// SessionStats returns the counters of the sessions of older clients
// (HandlerOptions.Sessions); zero without HandlerOptions.Legacy.
func (h *Handler) SessionStats() SessionStats {
	if h.sessions == nil {
		return SessionStats{}
	}
	return SessionStats(h.sessions.Stats())
}

// SessionOptions bound and expire the sessions an SDK issues to clients of
// the revisions before 2026-07-28 (HandlerOptions.Sessions). The zero
// value is the defaults.
type SessionOptions struct {
	// Max bounds the sessions open at once, counting the requests that may
	// open one and have not been answered yet. Zero means 10,000;
	// negative, no bound.
	Max int
	// MaxPerClient bounds the sessions one client (one ClientKey) has open
	// at once, and the GET streams it has open at once, so that a flood from
	// one client cannot take every slot. Zero means 1,000 (enough for the
	// clients behind one NAT or, with the default ClientKey, one reverse
	// proxy); negative, no bound.
	MaxPerClient int
	// IdleTimeout ends a session no request has used for that long: a
	// request in progress, a GET stream open included, is use, and the time
	// counts from the end of the last one. Zero means 30 minutes; negative,
	// never.
	IdleTimeout time.Duration
	// MaxGetStreams bounds the GET streams open at once. Zero means 10,000;
	// negative, no bound.
	MaxGetStreams int
	// ClientKey names the client of a request, for MaxPerClient. Nil, or
	// an empty key, means the address the connection comes from (an IPv4
	// address, or an IPv6 /64). Behind a reverse proxy every client then
	// has the proxy's address and they all share one client's share: give
	// a ClientKey that reads what your proxy sets (the address it appends
	// to X-Forwarded-For, not one the client can write) or the
	// authenticated user.
	ClientKey func(r *http.Request) string
	// End, if set, ends sessions in the SDK's handler: it is called with
	// the ids of the sessions that expired, once each, never twice at
	// once, on the goroutine of the expiry timer (which runs while
	// sessions are left to expire, and which Shutdown waits for). It runs
	// after the slots are freed and requests naming the ids are refused. A
	// panic in it is recovered. The gosdk and mcpgo adapters set it.
	End func(ids []string)
}

// internal returns o as the sessions package takes it, an empty ClientKey
// meaning the connection's address.
func (o SessionOptions) internal() sessions.Options {
	if key := o.ClientKey; key != nil {
		o.ClientKey = func(r *http.Request) string {
			if k := key(r); k != "" {
				return k
			}
			return sessions.ClientAddr(r)
		}
	}
	return sessions.Options(o)
}

// SessionStats are the counters of the sessions of older clients
// (Handler.SessionStats).
type SessionStats struct {
	// Open is the number of sessions open, with the requests that may open
	// one in progress; GetStreams the GET streams open.
	Open, GetStreams int
	// Refused counts the requests refused for Max or MaxPerClient,
	// RefusedGet the GET streams refused for MaxGetStreams or MaxPerClient,
	// NotFound the requests naming an unknown session, Expired the sessions
	// ended by IdleTimeout.
	Refused, RefusedGet, NotFound, Expired uint64
}
