package streamhttp

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"strconv"

	"fmt"
	"net"
	"net/netip"
	"net/url"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/internal/echo"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// TransportKind is the listen.Transport.Kind of the requests this package
// serves.
const TransportKind = "streamable_http"

// decode runs every check of a listen POST, in this order, and returns the
// decoded request or the reply to send instead (a refusal, a 202 for a
// client notification, or noReply):
//
//  1. method not POST: 405 (Allow: POST);
//  2. CheckOrigin (AllowedHosts, AllowedOrigins): 403;
//  3. Authenticate: 401, or the AuthError's status; an Expiry already past:
//     401;
//  4. body over MaxBodyBytes: 413; not received within ReadTimeout: 408;
//     unreadable body: 400; the request ended once its body was read (an
//     HTTP/2 stream reset after its listen): nothing is written;
//  5. JSON: -32700 or -32600, 400; an id over Listen.MaxIDBytes: -32600
//     without an id ("Invalid request: id must be at most <N> bytes"), 400;
//  6. Mcp-Method header vs body method: -32020, 400;
//  7. a notification (no id) of another method: 202, ignored; any other
//     method: -32601, 404; a listen without id: -32600, 400;
//  8. params (_meta, notifications): -32602, 400, the core's messages;
//  9. MCP-Protocol-Version header vs _meta: -32020, 400;
//  10. protocol version: older than 2026-07-28: -32601 "Method not found:
//     subscriptions/listen", 404; otherwise unknown: -32022, 400.
//
// The body is referenced only by the returned request; once listen.Open has
// copied what it keeps, nothing holds it.
//
// Once authenticated, the request has its stream, which the Server's EndStreams sees
// from then on (see Handler.pending): the stream is returned with the
// request, for admit, or forgotten with the reply.
func (h *Handler) decode(w http.ResponseWriter, r *http.Request) (req *listen.Request, st *stream, f *reply) {
	if r.Method != http.MethodPost {
		f := refuse(http.StatusMethodNotAllowed, jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, msgMethodNotAllowed))
		f.header = http.Header{"Allow": {http.MethodPost}}
		return nil, nil, f
	}
	if err := h.checkOrigin(r); err != nil {
		return nil, nil, refuse(http.StatusForbidden, jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, MsgForbidden).WithCause(err))
	}
	var auth any
	if h.opts.Authenticate != nil {
		a, err := h.opts.Authenticate(r)
		if err != nil {
			f := refuse(http.StatusUnauthorized, jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, MsgUnauthorized).WithCause(err))
			var ae *AuthError
			if errors.As(err, &ae) {
				if ae.Status != 0 {
					f.status = ae.Status
				}
				f.header = ae.Header
			}
			return nil, nil, f
		}
		auth = a
	}
	var expires time.Time
	if h.opts.Expiry != nil {
		if expires = h.opts.Expiry(r, auth); !expires.IsZero() && !time.Now().Before(expires) {
			return nil, nil, refuse(http.StatusUnauthorized, jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, MsgUnauthorized).WithCause(listen.ErrExpired))
		}
	}
	st = &stream{slot: h.srv.Begin(auth)}
	req, f = h.decodeBody(w, r)
	if f != nil {
		st.slot.Done(nil)
		st.stop()
		return nil, nil, f
	}
	// The Server refuses an expired one, and ends the stream then
	// (ErrExpired).
	req.Auth, req.Expiry = auth, expires
	return req, st, nil
}

// decodeBody runs the checks of decode from the body on (4 to 10).
func (h *Handler) decodeBody(w http.ResponseWriter, r *http.Request) (*listen.Request, *reply) {
	body, f := readBody(w, r, h.opts.MaxBodyBytes)
	if f != nil {
		return nil, f
	}
	if gone(r) {
		return nil, noReply() // reset or closed once its body was sent: nobody to answer
	}
	m, err := jsonrpc.ParseMessageMaxID(body, h.srv.Options().MaxIDBytes)
	if err != nil {
		return nil, refuse(http.StatusBadRequest, m.ID, jsonrpc.AsError(err, "Internal error"))
	}
	if hm, ok := header(r, headerMethod); ok && hm != m.Method {
		return nil, refuse(http.StatusBadRequest, m.ID, headerMismatch(headerMethod, hm, m.Method))
	} else if !ok && h.opts.RequireHeaders {
		return nil, refuse(http.StatusBadRequest, m.ID, headerMissing(headerMethod))
	}
	switch {
	case !m.HasID && m.Method != spec.MethodListen:
		// A client notification (such as notifications/cancelled, which
		// Streamable HTTP does not use): accepted and ignored.
		return nil, acceptedNotification()
	case m.Method != spec.MethodListen:
		return nil, refuse(http.StatusNotFound, m.ID, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found: "+echo.Cut(m.Method)))
	case !m.HasID:
		return nil, refuse(http.StatusBadRequest, m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "Invalid request: subscriptions/listen requires an id"))
	}

	req := &listen.Request{ID: m.ID}
	if err := core.ParseParams(m.Params, req); err != nil {
		return nil, refuse(http.StatusBadRequest, req.ID, jsonrpc.AsError(err, "Internal error"))
	}
	if hv, ok := header(r, headerProtocolVersion); ok && hv != req.ProtocolVersion {
		f := refuse(http.StatusBadRequest, req.ID, headerMismatch(headerProtocolVersion, hv, req.ProtocolVersion))
		f.req = req
		return nil, f
	} else if !ok && h.opts.RequireHeaders {
		f := refuse(http.StatusBadRequest, req.ID, headerMissing(headerProtocolVersion))
		f.req = req
		return nil, f
	}
	req.Transport = listen.Transport{Kind: TransportKind, RemoteAddr: r.RemoteAddr, Header: r.Header}
	return req, nil
}

// readBody reads r's whole body within limit bytes, for a listen (Handler)
// and for every other request Front reads: 413 over the limit, 408 at the
// read deadline, 400 if unreadable. Reading it to its end also lets
// net/http watch the connection, so that a client disconnect cancels the
// request's context.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *reply) {
	if r.ContentLength > limit {
		return nil, refuse(http.StatusRequestEntityTooLarge, jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, msgBodyTooLarge))
	}
	body, err := readBlocks(http.MaxBytesReader(w, r.Body, limit), r.ContentLength)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, refuse(http.StatusRequestEntityTooLarge, jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, msgBodyTooLarge))
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// ReadTimeout: the rest of the body is not read; the connection
			// is not reused.
			f := refuse(http.StatusRequestTimeout, jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, msgBodyTimeout).WithCause(err))
			if r.ProtoMajor == 1 {
				f.header = http.Header{"Connection": {"close"}}
			}
			return nil, f
		}
		return nil, refuse(http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, msgBodyUnreadable).WithCause(err))
	}
	return body, nil
}

// Block sizes of readBlocks.
const (
	firstBlockMax = 4 << 10
	blockSize     = 16 << 10
)

// readBlocks reads rd to its end, like io.ReadAll, but in blocks: a first
// one sized by length (the announced length, if any, plus one byte to see
// the end; at most firstBlockMax), then blocks of blockSize, joined into one
// slice of the body's exact size once the body is complete. So what a body
// that has not fully arrived holds is the bytes its client sent plus at most
// one block, and no garbage: io.ReadAll's growing copies held about 2.5
// times the bytes received until the collector ran.
func readBlocks(rd io.Reader, length int64) ([]byte, error) {
	first := 512
	if length >= 0 {
		first = int(min(length+1, firstBlockMax))
	}
	var full [][]byte
	b := make([]byte, 0, first)
	for {
		if len(b) == cap(b) {
			full = append(full, b)
			b = make([]byte, 0, blockSize)
		}
		n, err := rd.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(full) == 0 {
		return b, nil
	}
	size := len(b)
	for _, f := range full {
		size += len(f)
	}
	out := make([]byte, 0, size)
	for _, f := range full {
		out = append(out, f...)
	}
	return append(out, b...), nil
}

// header returns the first value of the named header and whether it was
// sent. Surrounding spaces are ignored; values are case-sensitive.
func header(r *http.Request, name string) (string, bool) {
	vs := r.Header.Values(name)
	if len(vs) == 0 {
		return "", false
	}
	return strings.TrimSpace(vs[0]), true
}

// Exact messages of the JSON-RPC errors this package writes itself. The
// params, parse and open errors carry the core's exact messages.
const (
	msgMethodNotAllowed = "Method not allowed: subscriptions/listen is served over POST"
	MsgForbidden        = "Forbidden: invalid Origin or Host"
	MsgUnauthorized     = "Unauthorized"
	msgBodyTooLarge     = "Request body too large"
	msgBodyUnreadable   = "Invalid request: the request body could not be read"
	msgBodyTimeout      = "Request timeout: the request body was not received in time"
)

// Header names of MCP 2026-07-28 Streamable HTTP.
const (
	// headerProtocolVersion carries the request's protocol version; it must
	// equal the body's _meta io.modelcontextprotocol/protocolVersion.
	headerProtocolVersion = "MCP-Protocol-Version"
	// headerMethod carries the request's JSON-RPC method; it must equal the
	// body's method. Front routes on it.
	headerMethod = "Mcp-Method"
)

// headerMismatch returns -32020 in the form of the specification's example:
// "Header mismatch: Mcp-Method header value 'a' does not match body value 'b'".
func headerMismatch(name, header, body string) *jsonrpc.Error {
	return jsonrpc.NewError(jsonrpc.CodeHeaderMismatch,
		"Header mismatch: "+name+" header value '"+echo.Cut(header)+"' does not match body value '"+echo.Cut(body)+"'")
}

// headerMissing returns -32020 for a required header that is absent.
func headerMissing(name string) *jsonrpc.Error {
	return jsonrpc.NewError(jsonrpc.CodeHeaderMismatch, "Header mismatch: missing "+name+" header")
}

// statusOf maps a JSON-RPC error code to the HTTP status of its response:
// -32601 is 404 (MCP: an unimplemented method), -32603 is 500, everything
// else (parse, request, params, header, capability, version and a source's
// own codes) is 400.
func statusOf(code int) int {
	switch code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInternalError:
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

// refusalStatus is the HTTP status of a listen the listen.Server refused
// with err (Slot.Admit, Slot.Open), and the Retry-After delay (zero for
// none): capacity and drain refusals carry retryAfter (listen.Options.
// RetryAfter), 503 over MaxStreams and while draining, 429 over a
// per-client limit or a Quota; an expired credential is 401; any other
// error is mapped by its JSON-RPC code (statusOf), 500 when it has none.
func refusalStatus(err error, retryAfter time.Duration) (status int, after time.Duration) {
	switch {
	case errors.Is(err, listen.ErrOverQuota):
		return http.StatusTooManyRequests, retryAfter
	case errors.Is(err, listen.ErrShutdown), errors.Is(err, listen.ErrOverloaded):
		return http.StatusServiceUnavailable, retryAfter
	case errors.Is(err, listen.ErrExpired):
		return http.StatusUnauthorized, 0
	}
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		return http.StatusInternalServerError, 0
	}
	return statusOf(we.Code), 0
}

// reply is what a request gets instead of a stream: an error response
// (refuse), 202 Accepted without a body for a client notification
// (acceptedNotification), or nothing at all once the client is gone
// (noReply).
type reply struct {
	status int // 0: nothing is written
	id     jsonrpc.ID
	err    *jsonrpc.Error // nil: no body
	header http.Header
	// req is the refused listen, when it was read (for OnRefuse, which
	// gets one holding the id and the Transport otherwise).
	req *listen.Request
	// reported is set when the Server already told OnRefuse (its own
	// refusals: Admit, Open).
	reported bool
}

// refuse is the error response err with status, echoing id.
func refuse(status int, id jsonrpc.ID, err *jsonrpc.Error) *reply {
	return &reply{status: status, id: id, err: err}
}

// acceptedNotification is the answer to a client notification: 202, no
// body.
func acceptedNotification() *reply { return &reply{status: http.StatusAccepted} }

// noReply writes nothing: the request was reset or its client left.
func noReply() *reply { return &reply{} }

// write sends the reply: an error response as an application/json
// JSON-RPC error response, reported to h's Server's OnRefuse (h may be nil: Front
// with another listen handler).
func (f *reply) write(h *Handler, w http.ResponseWriter, r *http.Request) {
	if f.status == 0 { // noReply
		return
	}
	if f.err == nil { // acceptedNotification
		w.WriteHeader(f.status)
		return
	}
	if h != nil && !f.reported {
		req := f.req
		if req == nil { // not read: its transport is known all the same
			req = &listen.Request{ID: f.id}
		}
		if req.Transport.Kind == "" {
			req.Transport = listen.Transport{Kind: TransportKind, RemoteAddr: r.RemoteAddr, Header: r.Header}
		}
		h.srv.Refused(req, f.err)
	}
	body := jsonrpc.ErrorResponse(f.id, f.err)
	hdr := w.Header()
	for k, vs := range f.header {
		for _, v := range vs {
			hdr.Add(k, v)
		}
	}
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	hdr.Set("Cache-Control", "no-store")
	w.WriteHeader(f.status)
	_, _ = w.Write(body)
}

// DefaultCheckOrigin is the origin check of a Handler whose
// Options.CheckOrigin is nil and that has no AllowedHosts or
// AllowedOrigins. It refuses, in this order:
//
//   - a request that arrived on a loopback address but names a Host that is
//     not a loopback name ("localhost" or a loopback IP): the mark of a DNS
//     rebinding attack on a local server (the go-sdk's StreamableHTTPHandler
//     applies the same rule by default);
//   - a cross-origin browser request, by the rules of
//     http.CrossOriginProtection: a Sec-Fetch-Site header other than
//     same-origin or none, or, without Sec-Fetch-Site, an Origin whose
//     host differs from Host. Unlike http.CrossOriginProtection, every
//     method is checked, GET, HEAD and OPTIONS included: MCP requires the
//     Origin of every incoming request to be validated.
//
// Requests without Origin and Sec-Fetch-Site (non-browser clients) pass. A
// server on a non-loopback address is not protected from DNS rebinding by
// it: list the names it serves in Options.AllowedHosts. To trust
// cross-origin browser requests from some origins, list them in
// Options.AllowedOrigins.
func DefaultCheckOrigin(r *http.Request) error { return defaultGuard.check(r) }

var defaultGuard = &originGuard{}

// Errors of the origin checks: the cause of a 403 (see listen.Options.OnRefuse).
var (
	errRebinding      = errors.New("streamhttp: non-loopback Host on a loopback address")
	errHostNotAllowed = errors.New("streamhttp: Host not in AllowedHosts")
	errCrossOrigin    = errors.New("streamhttp: cross-origin request")
)

// originGuard is the Origin and Host check of a Handler with the default
// CheckOrigin: AllowedHosts (or, without them, the loopback rule), then the
// cross-origin rules with AllowedOrigins trusted. It is read-only after New.
type originGuard struct {
	hosts   []hostPattern
	origins map[string]bool // normalised: lower-case scheme://host[:port]
}

// hostPattern is one AllowedHosts entry: a lower-case host name or IP
// (without brackets), and a port, or "" for any port.
type hostPattern struct {
	host, port string
}

// newOriginGuard validates AllowedHosts and AllowedOrigins.
func newOriginGuard(hosts, origins []string) (*originGuard, error) {
	g := &originGuard{}
	for _, h := range hosts {
		p, err := parseHostPattern(h)
		if err != nil {
			return nil, fmt.Errorf("%w: AllowedHosts: %v", ErrInvalidOptions, err)
		}
		g.hosts = append(g.hosts, p)
	}
	for _, o := range origins {
		n, err := normaliseOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("%w: AllowedOrigins: %v", ErrInvalidOptions, err)
		}
		if g.origins == nil {
			g.origins = make(map[string]bool)
		}
		g.origins[n] = true
	}
	return g, nil
}

// parseHostPattern parses "host", "host:port", "[v6]" or "[v6]:port".
func parseHostPattern(s string) (hostPattern, error) {
	if s == "" || strings.ContainsAny(s, "/?#@ \t") {
		return hostPattern{}, fmt.Errorf("%q is not a host or host:port", s)
	}
	host, port := splitHost(s)
	if host == "" {
		return hostPattern{}, fmt.Errorf("%q has no host", s)
	}
	if port != "" {
		if _, err := netip.ParseAddrPort("0.0.0.0:" + port); err != nil {
			return hostPattern{}, fmt.Errorf("%q has an invalid port", s)
		}
	}
	return hostPattern{host: host, port: port}, nil
}

// splitHost splits a Host header value or host pattern into its lower-case
// host (without brackets) and its port ("" if none).
func splitHost(s string) (host, port string) {
	if h, p, err := net.SplitHostPort(s); err == nil {
		return strings.ToLower(h), p
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")), ""
}

// normaliseOrigin checks that s is an origin, scheme://host[:port], and
// returns it with its scheme and host in lower case.
func normaliseOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("%q is not an origin (scheme://host[:port])", s)
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	// Browsers leave the default port out of Origin.
	if (scheme == "http" && strings.HasSuffix(host, ":80")) || (scheme == "https" && strings.HasSuffix(host, ":443")) {
		host = host[:strings.LastIndexByte(host, ':')]
	}
	return scheme + "://" + host, nil
}

// check applies the guard to r.
func (g *originGuard) check(r *http.Request) error {
	if err := g.checkHost(r); err != nil {
		return err
	}
	return g.checkCrossOrigin(r)
}

// checkHost applies AllowedHosts, or without them the loopback rule.
func (g *originGuard) checkHost(r *http.Request) error {
	if len(g.hosts) > 0 {
		host, port := splitHost(r.Host)
		for _, p := range g.hosts {
			if p.host == host && (p.port == "" || p.port == port) {
				return nil
			}
		}
		return errHostNotAllowed
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil {
		if loopbackAddr(la) && !isLoopback(r.Host) {
			return errRebinding
		}
	}
	return nil
}

// loopbackAddr reports whether the local address a is on the loopback
// interface (a TCP address is read as it is: its text is not made).
func loopbackAddr(a net.Addr) bool {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.IsLoopback()
	}
	return isLoopback(a.String())
}

// checkCrossOrigin refuses a cross-origin browser request whose Origin is
// not trusted.
func (g *originGuard) checkCrossOrigin(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if origin != "" && g.origins != nil {
		if n, err := normaliseOrigin(origin); err == nil && g.origins[n] {
			return nil
		}
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "":
	case "same-origin", "none":
		return nil
	default:
		return errCrossOrigin
	}
	if origin == "" {
		return nil // not a browser, or an old one on a same-origin request
	}
	if u, err := url.Parse(origin); err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host) {
		return nil
	}
	return errCrossOrigin
}

// isLoopback reports whether a host or host:port names the loopback
// interface.
func isLoopback(hostport string) bool {
	host, _ := splitHost(hostport)
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
