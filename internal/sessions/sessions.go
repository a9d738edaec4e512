// Package sessions bounds and expires the sessions that a Streamable HTTP
// handler of the revisions before 2026-07-28 issues (the go-sdk's stateful
// handler, mcp-go's StreamableHTTPServer), in front of it: what the adapter
// package's HandlerOptions.Sessions configures.
package sessions

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/streamhttp"
)

// Defaults of Options.
const (
	// defaultMaxSessions is the default Options.Max.
	defaultMaxSessions = 10000
	// defaultMaxSessionsPerClient is the default Options.MaxPerClient:
	// a tenth of defaultMaxSessions, far more than one client opens (one
	// session per connection, a few more across reconnections that did not
	// send DELETE), and enough for the clients behind one NAT or, with the
	// default ClientKey, one reverse proxy.
	defaultMaxSessionsPerClient = 1000
	// defaultSessionIdleTimeout is the default Options.IdleTimeout.
	// An older client that keeps its GET stream open never goes idle; one
	// without it that sends nothing for this long meets 404 at its next
	// request and, as the specification asks, initializes again.
	defaultSessionIdleTimeout = 30 * time.Minute
	// defaultMaxGetStreams is the default Options.MaxGetStreams: one
	// per session of defaultMaxSessions.
	defaultMaxGetStreams = defaultMaxSessions
)

// Messages of the refusals of Sessions.
const (
	// msgTooManySessions is the JSON-RPC error message (-32603, HTTP 503)
	// of a request that would open a session beyond Options.Max.
	msgTooManySessions = "Server busy: too many sessions"
	// msgTooManyClientSessions is the JSON-RPC error message (-32603, HTTP
	// 429) of a request that would open a session beyond its client's
	// Options.MaxPerClient.
	msgTooManyClientSessions = "Too many sessions open for this client"
	// msgTooManyGetStreams is the JSON-RPC error message (-32603, HTTP 503)
	// of a GET stream beyond Options.MaxGetStreams.
	msgTooManyGetStreams = "Server busy: too many GET streams"
	// msgTooManyClientGetStreams is the JSON-RPC error message (-32603, HTTP
	// 429) of a GET stream beyond its client's Options.MaxPerClient.
	msgTooManyClientGetStreams = "Too many GET streams open for this client"
	// msgSessionNotFound is the plain-text body of the 404 that answers a
	// request naming a session that was never issued, has ended or has
	// expired. It is plain text, as the go-sdk and mcp-go answer it: a
	// JSON-RPC error body would make the go-sdk's client take it for the
	// refusal of one call instead of the end of its session.
	msgSessionNotFound = "Session not found"
)

// headerSessionID is the header of the session id of the Streamable HTTP
// revisions before 2026-07-28.
const headerSessionID = "Mcp-Session-Id"

// Options configure Sessions; the zero value is the defaults. They are
// adapter.SessionOptions, which documents each field (adapter converts
// one into the other, so both keep the same fields in the same order);
// zero means defaultMaxSessions, defaultMaxSessionsPerClient,
// defaultSessionIdleTimeout and defaultMaxGetStreams, a nil ClientKey
// ClientAddr, and an empty key is a key like any other here.
type Options struct {
	Max, MaxPerClient int
	IdleTimeout       time.Duration
	MaxGetStreams     int
	ClientKey         func(r *http.Request) string
	End               func(ids []string)
}

// Stats are the counters of Sessions, as adapter.SessionStats documents
// them (the same fields, in the same order).
type Stats struct {
	Open, GetStreams                       int
	Refused, RefusedGet, NotFound, Expired uint64
}

// Sessions bounds and expires the sessions that a Streamable HTTP handler of
// the revisions before 2026-07-28 issues (the go-sdk's stateful
// StreamableHTTPHandler, mcp-go's StreamableHTTPServer), in front of it. Give
// it only the requests of those revisions: a 2026-07-28 request has no
// session. It knows the sessions from the responses that issue them (their
// Mcp-Session-Id header), and for each request:
//
//   - a POST without Mcp-Session-Id that may open a session (an initialize,
//     or a body streamhttp.FrontMessage could not parse, such as a batch)
//     counts as one until answered; beyond its client's MaxPerClient it is answered
//     429 with Retry-After: 1 and the JSON-RPC error -32603
//     msgTooManyClientSessions (with its id), beyond Max 503 with
//     msgTooManySessions, and never reaches next. If the answer issues a
//     session id, the session is open; else the slot is freed when next
//     returns. Other POSTs without a session id pass.
//   - a request (any method) naming a session Sessions does not know, never
//     issued, ended or expired, is answered 404 msgSessionNotFound (plain
//     text, as the SDKs answer it) and never reaches next.
//   - a GET stream (of a known session, or without a session id, for which
//     mcp-go opens a session of its own) beyond its client's MaxPerClient
//     GET streams is answered 429 with Retry-After: 1 and the JSON-RPC error
//     -32603 msgTooManyClientGetStreams (no id), beyond MaxGetStreams 503
//     with msgTooManyGetStreams. (The session's client is the one that
//     opened it.)
//   - a session is closed for Sessions, and its slot freed, when a DELETE
//     naming it is answered 2xx, when next answers a request naming it with
//     404 (next ended it on its own), or when it has been idle for
//     IdleTimeout; then End ends it in next.
//
// A slot is free as soon as its session is: the count is exact, never a
// recount. Each session costs Sessions about 260 bytes of heap (measured
// with 48-byte ids, each session of its own client); idle sessions expire
// in order, from one timer. Close stops the timer.
// A Sessions is safe for concurrent use.
type Sessions struct {
	next     http.Handler
	max      int
	perKey   int
	idle     time.Duration
	maxGets  int
	key      func(*http.Request) string
	end      func([]string)
	mu       sync.Mutex
	cond     sync.Cond // signalled when firing turns false
	byID     map[string]*session
	clients  map[string]*client
	open     int
	gets     int
	head     *session // idle sessions, longest idle first
	tail     *session
	timer    *time.Timer
	armed    bool // timer set and not fired
	firing   bool // the timer's goroutine is running
	closed   bool
	toEnd    []string
	refused  uint64
	refGet   uint64
	notFound uint64
	expired  uint64
}

// session is one session Sessions knows.
type session struct {
	id         string
	client     *client
	active     int       // requests in progress naming it
	idleSince  time.Time // when active last fell to zero
	prev, next *session  // in the idle list, when active is zero
	gone       bool      // removed from byID
}

// client is the count of one ClientKey.
type client struct {
	key            string
	sessions, gets int
}

// New returns Sessions in front of next with opts.
func New(next http.Handler, opts Options) *Sessions {
	s := &Sessions{
		next:    next,
		max:     orDefault(opts.Max, defaultMaxSessions),
		perKey:  orDefault(opts.MaxPerClient, defaultMaxSessionsPerClient),
		idle:    opts.IdleTimeout,
		maxGets: orDefault(opts.MaxGetStreams, defaultMaxGetStreams),
		key:     opts.ClientKey,
		end:     opts.End,
		byID:    map[string]*session{},
		clients: map[string]*client{},
	}
	if s.idle == 0 {
		s.idle = defaultSessionIdleTimeout
	}
	if s.key == nil {
		s.key = ClientAddr
	}
	s.cond.L = &s.mu
	return s
}

func orDefault(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

// ClientAddr is the default Options.ClientKey: the IP address of
// r.RemoteAddr without its port (an IPv4-mapped IPv6 address as IPv4), and
// of an IPv6 address its /64 prefix (one host's share of addresses). A RemoteAddr that is not host:port is the key
// as it is.
func ClientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if ip4 := ip.To4(); ip4 != nil {
		return ip4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// Stats returns the counters.
func (s *Sessions) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Open: s.open, GetStreams: s.gets, Refused: s.refused, RefusedGet: s.refGet, NotFound: s.notFound, Expired: s.expired}
}

// Close stops the expiry timer and waits for an End in progress. It ends
// no session: the server behind ends its own on shutdown. Requests are
// still served as before, but no session expires. Close is idempotent.
func (s *Sessions) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
		s.armed = false
	}
	for s.firing {
		s.cond.Wait()
	}
}

// ServeHTTP serves r (see Sessions).
func (s *Sessions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(headerSessionID)
	if id == "" {
		switch {
		case r.Method == http.MethodPost && mayOpen(r):
			s.serveOpener(w, r)
		case r.Method == http.MethodGet:
			s.serveGet(w, r)
		default:
			s.next.ServeHTTP(w, r)
		}
		return
	}
	get := r.Method == http.MethodGet
	ss, no := s.use(id, get)
	if no != nil {
		no.write(w, jsonrpc.ID{})
		return
	}
	sw := &sessionWriter{ResponseWriter: w}
	defer func() { s.done(ss, get, r.Method == http.MethodDelete, sw.status) }()
	s.next.ServeHTTP(sw, r)
}

// mayOpen reports whether a POST without a session id may open a session:
// an initialize, or a body the front did not parse as one message.
func mayOpen(r *http.Request) bool {
	m, ok := streamhttp.FrontMessage(r)
	return !ok || m.Method == "initialize"
}

// refusal is why Sessions refuses a request.
type refusal struct {
	status int
	msg    string
}

var (
	notFound        = &refusal{http.StatusNotFound, msgSessionNotFound}
	tooMany         = &refusal{http.StatusServiceUnavailable, msgTooManySessions}
	tooManyOfClient = &refusal{http.StatusTooManyRequests, msgTooManyClientSessions}
	tooManyGets     = &refusal{http.StatusServiceUnavailable, msgTooManyGetStreams}
	tooManyGetsOf   = &refusal{http.StatusTooManyRequests, msgTooManyClientGetStreams}
)

// write answers the refusal: 404 in plain text, the others with
// Retry-After and the JSON-RPC error -32603 (with id if valid).
func (no *refusal) write(w http.ResponseWriter, id jsonrpc.ID) {
	if no.status == http.StatusNotFound {
		http.Error(w, no.msg, no.status)
		return
	}
	body := jsonrpc.ErrorResponse(id, jsonrpc.NewError(jsonrpc.CodeInternalError, no.msg))
	h := w.Header()
	h.Set("Retry-After", "1")
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(no.status)
	_, _ = w.Write(body)
}

// serveGet serves a GET without a session id (mcp-go opens a stream and a
// session for it) within the GET bounds.
func (s *Sessions) serveGet(w http.ResponseWriter, r *http.Request) {
	key := s.key(r)
	s.mu.Lock()
	c := s.clientLocked(key)
	if no := s.getLocked(c); no != nil {
		s.dropClientLocked(c)
		s.mu.Unlock()
		no.write(w, jsonrpc.ID{})
		return
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.gets--
		c.gets--
		s.dropClientLocked(c)
		s.mu.Unlock()
	}()
	s.next.ServeHTTP(w, r)
}

// serveOpener serves a POST that may open a session, within the bounds.
func (s *Sessions) serveOpener(w http.ResponseWriter, r *http.Request) {
	key := s.key(r)
	s.mu.Lock()
	s.expireLocked(time.Now())
	c := s.clientLocked(key)
	var no *refusal
	switch {
	case s.perKey >= 0 && c.sessions >= s.perKey:
		no = tooManyOfClient
	case s.max >= 0 && s.open >= s.max:
		no = tooMany
	}
	if no != nil {
		s.refused++
		s.dropClientLocked(c)
		s.mu.Unlock()
		m, _ := streamhttp.FrontMessage(r)
		no.write(w, m.ID)
		return
	}
	s.open++
	c.sessions++
	s.mu.Unlock()
	sw := &sessionWriter{ResponseWriter: w}
	sw.onHeader = func(status int) {
		if id := sw.Header().Get(headerSessionID); id != "" && status < 300 {
			sw.opened = s.register(id, c)
		}
	}
	defer func() {
		if sw.opened != nil {
			s.done(sw.opened, false, false, sw.status)
			return
		}
		s.mu.Lock()
		s.open--
		c.sessions--
		s.dropClientLocked(c)
		s.mu.Unlock()
	}()
	s.next.ServeHTTP(sw, r)
}

// register turns the slot an opener holds into the session id, in use by
// that request. An id already known (a server that issued it twice) keeps
// its first session, and the opener's slot is given back by its caller.
func (s *Sessions) register(id string, c *client) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.byID[id]; dup {
		return nil
	}
	ss := &session{id: id, client: c, active: 1}
	s.byID[id] = ss
	return ss
}

// use marks the session id in use by a request (a GET stream if get), or
// reports why not: unknown, or beyond the GET bounds.
func (s *Sessions) use(id string, get bool) (*session, *refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(time.Now())
	ss := s.byID[id]
	if ss == nil {
		s.notFound++
		return nil, notFound
	}
	if get {
		if no := s.getLocked(ss.client); no != nil {
			return nil, no
		}
	}
	if ss.active == 0 {
		s.unlinkLocked(ss)
	}
	ss.active++
	return ss, nil
}

// getLocked counts one more GET stream of c, or reports which bound
// refuses it.
func (s *Sessions) getLocked(c *client) *refusal {
	var no *refusal
	switch {
	case s.perKey >= 0 && c.gets >= s.perKey:
		no = tooManyGetsOf
	case s.maxGets >= 0 && s.gets >= s.maxGets:
		no = tooManyGets
	}
	if no != nil {
		s.refGet++
		return no
	}
	s.gets++
	c.gets++
	return nil
}

// done ends a request's use of ss: a DELETE answered 2xx, or any request
// answered 404 (the server behind no longer has it), closes the session.
func (s *Sessions) done(ss *session, get, del bool, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if get {
		s.gets--
		ss.client.gets--
	}
	ss.active--
	closed := status == http.StatusNotFound || (del && status >= 200 && status < 300)
	if closed {
		s.removeLocked(ss)
	}
	if ss.active == 0 && !ss.gone {
		ss.idleSince = time.Now()
		s.pushLocked(ss)
	}
	s.dropClientLocked(ss.client)
}

// removeLocked forgets ss and frees its slot (it stays linked to its client
// for the gets still open).
func (s *Sessions) removeLocked(ss *session) {
	if ss.gone {
		return
	}
	ss.gone = true
	delete(s.byID, ss.id)
	if ss.active == 0 {
		s.unlinkLocked(ss)
	}
	s.open--
	ss.client.sessions--
}

// clientLocked returns the count of key, made if new.
func (s *Sessions) clientLocked(key string) *client {
	c := s.clients[key]
	if c == nil {
		c = &client{key: key}
		s.clients[key] = c
	}
	return c
}

// dropClientLocked forgets c once it counts nothing.
func (s *Sessions) dropClientLocked(c *client) {
	if c.sessions == 0 && c.gets == 0 && s.clients[c.key] == c {
		delete(s.clients, c.key)
	}
}

// pushLocked appends ss, just gone idle, to the idle list, and sets the
// timer if the list was empty.
func (s *Sessions) pushLocked(ss *session) {
	if s.idle < 0 {
		return
	}
	ss.prev, ss.next = s.tail, nil
	if s.tail != nil {
		s.tail.next = ss
	} else {
		s.head = ss
	}
	s.tail = ss
	if s.head == ss {
		s.armLocked(s.idle)
	}
}

// unlinkLocked takes ss out of the idle list.
func (s *Sessions) unlinkLocked(ss *session) {
	if s.idle < 0 {
		return
	}
	if ss.prev != nil {
		ss.prev.next = ss.next
	} else if s.head == ss {
		s.head = ss.next
	}
	if ss.next != nil {
		ss.next.prev = ss.prev
	} else if s.tail == ss {
		s.tail = ss.prev
	}
	ss.prev, ss.next = nil, nil
}

// expireLocked closes every session idle for IdleTimeout at now, and has
// the timer hand them to End.
func (s *Sessions) expireLocked(now time.Time) {
	for s.head != nil && now.Sub(s.head.idleSince) >= s.idle {
		ss := s.head
		s.removeLocked(ss)
		s.dropClientLocked(ss.client)
		s.expired++
		if s.end != nil {
			s.toEnd = append(s.toEnd, ss.id)
		}
	}
	if len(s.toEnd) > 0 {
		s.armLocked(0)
	}
}

// armLocked sets the timer to fire in d, unless it is set to fire sooner,
// its goroutine is running (it sets it again before it ends), or Close was
// called.
func (s *Sessions) armLocked(d time.Duration) {
	if s.firing || s.closed || (s.armed && d > 0) {
		return
	}
	if s.timer == nil {
		s.timer = time.AfterFunc(d, s.fire)
	} else {
		s.timer.Reset(d)
	}
	s.armed = true
}

// fire is the timer's goroutine: it expires the idle sessions and hands
// them to End, until none is left to end, then sets the timer for the next
// one to expire. It is the only caller of End.
func (s *Sessions) fire() {
	s.mu.Lock()
	s.armed = false
	if s.closed || s.firing {
		s.mu.Unlock()
		return
	}
	s.firing = true
	for {
		s.expireLocked(time.Now())
		ids := s.toEnd
		s.toEnd = nil
		if len(ids) == 0 || s.closed {
			break
		}
		s.mu.Unlock()
		s.callEnd(ids)
		s.mu.Lock()
	}
	s.firing = false
	s.cond.Broadcast()
	if s.head != nil {
		s.armLocked(s.idle - time.Since(s.head.idleSince))
	}
	s.mu.Unlock()
}

// callEnd calls End; a panic in it is recovered (the sessions stay ended
// for Sessions), so that it cannot take the process down.
func (s *Sessions) callEnd(ids []string) {
	_ = core.SafeCall(func() { s.end(ids) })
}

// sessionWriter records the status of a response, and calls onHeader with
// it once, before the header is written.
type sessionWriter struct {
	http.ResponseWriter
	status   int
	onHeader func(status int)
	opened   *session
}

func (w *sessionWriter) WriteHeader(status int) {
	if w.status == 0 && status >= 200 {
		w.status = status
		if w.onHeader != nil {
			w.onHeader(status)
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *sessionWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Flush flushes, as the SDKs' streams need.
func (w *sessionWriter) Flush() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the connection's writer.
func (w *sessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
