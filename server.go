package listen

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// Defaults of the Server's limits (see Options).
const (
	// defaultMaxStreams is the default Options.MaxStreams.
	defaultMaxStreams = 1024
	// defaultRetryAfter is the default Options.RetryAfter.
	defaultRetryAfter = 5 * time.Second
)

const msgUnauthorized = "Unauthorized"

// Server is the listen policy every transport shares: it admits listens
// (Options.MaxStreams, MaxStreamsPerKey, Quota, the drain), opens them on
// the Source, counts them (Stats), calls the hooks (OnOpen, OnClose,
// OnRefuse), ends streams by principal (EndStreams) and drains them
// (Shutdown). A transport (streamhttp, stdio) only turns bytes into a
// Request, frames the stream's messages and tells when its client left: it
// serves a listen with Begin, Slot.Admit, Slot.Open and Slot.Done. One Server may serve
// several transports at once; its limits and Stats then cover them all.
//
// # Panics
//
// A panic in a hook (OnOpen, OnClose, OnRefuse, StreamKey) is recovered
// and logged to Options.Logger; a panic in Source.Open becomes the
// internal error "Subscription source failed to open". None ends the
// process or the stream.
//
// A Server is safe for concurrent use.
type Server struct {
	src        Source
	opts       Options
	log        *slog.Logger
	retryAfter time.Duration

	mu sync.Mutex
	// slots holds the admitted listens, being opened or streaming, and
	// begun those begun (Begin) but not admitted yet, each at its Slot.at
	// (slices: 8 bytes a listen, not a map entry's ~40, and no hashing).
	slots []*Slot
	begun []*Slot
	// perKey counts the slots of each MaxStreamsPerKey key; nil without.
	// defaultPerKey: the bound is the default one, which leaves out listens with
	// no remote address and no StreamKey (nothing tells their clients
	// apart).
	perKey        map[string]int
	defaultPerKey bool
	draining      bool
	// over is closed once draining and no slot is left.
	over chan struct{}

	opened, closed, refused uint64
	ended                   [len(endings)]uint64
}

// NewServer returns a Server that opens every listen on src with opts
// (copied; the zero value means every default). Like http.Handle given a
// nil handler, it panics for a nil src and for a negative limit: both are
// programming errors.
func NewServer(src Source, opts Options) *Server {
	if src == nil {
		panic("listen: NewServer with a nil Source")
	}
	for _, f := range []struct {
		name string
		bad  bool
	}{
		{"MaxStreams", opts.MaxStreams < 0},
		{"RetryAfter", opts.RetryAfter < 0},
		{"DrainWindow", opts.DrainWindow < 0},
	} {
		if f.bad {
			panic("listen: NewServer: Options." + f.name + " must not be negative (zero means the default)")
		}
	}
	if opts.MaxStreams == 0 {
		opts.MaxStreams = defaultMaxStreams
	}
	defaultPerKey := opts.MaxStreamsPerKey == 0
	if defaultPerKey {
		opts.MaxStreamsPerKey = max(1, opts.MaxStreams/4)
	}
	if opts.RetryAfter == 0 {
		opts.RetryAfter = defaultRetryAfter
	}
	if opts.SupportedVersions == nil {
		opts.SupportedVersions = spec.SupportedProtocolVersions
	}
	opts.SupportedVersions = slices.Clone(opts.SupportedVersions)
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Server{src: src, opts: opts, log: log, retryAfter: opts.RetryAfter,
		over: make(chan struct{})}
	if opts.MaxStreamsPerKey > 0 {
		s.perKey, s.defaultPerKey = make(map[string]int), defaultPerKey
	}
	return s
}

// Options returns the Server's options, defaults filled in. Do not modify
// them.
func (s *Server) Options() *Options { return &s.opts }

// Slot is one admitted listen's place on its Server, from Admit to Done.
// Its transport opens it (Open), serves the subscription, then calls Done
// exactly once, however the listen ended.
type Slot struct {
	srv *Server
	// at is the slot's index in Server.slots once admitted, in
	// Server.begun before; -1 when in neither.
	at       int32
	admitted bool
	keyed    bool
	done     bool
	auth     any
	key      string
	sub      *Subscription
	// rare is what few listens have, made when first needed (guarded by
	// Server.mu): a slot is 64 bytes without it.
	rare *slotRare
}

// slotRare is the part of a Slot that few listens need.
type slotRare struct {
	// release gives back the listen's Quota (nil: none).
	release func()
	// pending is how the server ended the listen before it was open (a
	// drain, EndStreams): Open ends the stream with it at once.
	pending error
}

// more returns sl.rare, made if needed. Server.mu is held.
func (sl *Slot) more() *slotRare {
	if sl.rare == nil {
		sl.rare = &slotRare{}
	}
	return sl.rare
}

// Begin registers a listen whose principal is known (auth, what the
// transport's authentication returned) while its request is still being
// read: EndStreams already ends it (as soon as it is open). Admit it with
// Slot.Admit, or let it go with Done.
func (s *Server) Begin(auth any) *Slot {
	sl := &Slot{srv: s, auth: auth}
	s.mu.Lock()
	sl.at = int32(len(s.begun))
	s.begun = append(s.begun, sl)
	s.mu.Unlock()
	return sl
}

// Admit admits the listen req (decoded; Auth and Expiry set by the
// transport's authentication) or refuses it, in this order; a refusal is a
// *jsonrpc.Error, already reported to OnRefuse (and counted in
// Stats.Refused when it is for capacity, a quota or the drain), and the
// slot is then done:
//
//	an older protocol version         -32601 "Method not found: subscriptions/listen"
//	another unsupported version       -32022 "Unsupported protocol version", data.supported (Options.SupportedVersions), requested
//	Request.Expiry already passed     -32600 "Unauthorized" (cause ErrExpired)
//	draining (Shutdown was called)    -32603 "Server is shutting down" (cause ErrShutdown)
//	over MaxStreamsPerKey             -32603 "Too many subscriptions open for this client" (cause ErrOverQuota)
//	over MaxStreams                   -32603 "Server subscription capacity exhausted" (cause ErrOverloaded)
//	Quota refuses                     its error (cause ErrOverQuota for a quota)
//
// The transport maps a refusal to its framing (streamhttp: an HTTP status,
// and Retry-After, Options.RetryAfter, for the capacity, quota and drain
// refusals).
func (sl *Slot) Admit(ctx context.Context, req *Request) error {
	s := sl.srv
	if err := s.precheck(req); err != nil {
		sl.Done(nil)
		s.Refused(req, err)
		return err
	}
	keyed := s.perKey != nil && (!s.defaultPerKey || s.opts.StreamKey != nil || req.Transport.RemoteAddr != "")
	if keyed {
		sl.key = s.streamKey(req)
	}
	s.mu.Lock()
	var err error
	switch {
	case sl.done:
		s.mu.Unlock()
		return errors.New("listen: Slot.Admit after Done")
	case s.draining:
		err = jsonrpc.NewError(jsonrpc.CodeInternalError, core.ShuttingDown).WithCause(ErrShutdown)
	case keyed && s.perKey[sl.key] >= s.opts.MaxStreamsPerKey:
		err = jsonrpc.NewError(jsonrpc.CodeInternalError, core.TooManyForKey).WithCause(ErrOverQuota)
	case len(s.slots) >= s.opts.MaxStreams:
		err = jsonrpc.NewError(jsonrpc.CodeInternalError, core.CapacityExhausted).WithCause(ErrOverloaded)
	default:
		s.begun = removeSlot(s.begun, sl)
		sl.at, sl.admitted = int32(len(s.slots)), true
		s.slots = append(s.slots, sl)
		if keyed {
			s.perKey[sl.key]++
			sl.keyed = true
		}
	}
	if err != nil {
		s.refused++
	}
	s.mu.Unlock()
	if err == nil && s.opts.Quota != nil {
		var release func()
		release, err = s.acquire(ctx, req)
		s.mu.Lock()
		if err != nil {
			s.refused++
		} else if release != nil {
			sl.more().release = release
		}
		s.mu.Unlock()
	}
	if err != nil {
		sl.Done(nil)
		s.Refused(req, err)
		return err
	}
	return nil
}

// precheck refuses what Admit refuses before counting: the protocol
// version, an expired credential.
func (s *Server) precheck(req *Request) error {
	if err := spec.ListenVersionError(s.opts.SupportedVersions, req.ProtocolVersion); err != nil {
		return err
	}
	if !req.Expiry.IsZero() && !time.Now().Before(req.Expiry) {
		return jsonrpc.NewError(jsonrpc.CodeInvalidRequest, msgUnauthorized).WithCause(ErrExpired)
	}
	return nil
}

// acquire calls the Quota, a panic and a plain error becoming -32603.
func (s *Server) acquire(ctx context.Context, req *Request) (release func(), err error) {
	if p := catch("Quota.Acquire", func() { release, err = s.opts.Quota.Acquire(ctx, req) }); p != nil {
		s.log.Error("listen: Quota.Acquire panicked", "panic", p.Value, "stack", string(p.Stack))
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "Internal error").WithCause(p)
	}
	if err != nil {
		return nil, jsonrpc.AsError(err, "Internal error")
	}
	return release, nil
}

// streamKey is the MaxStreamsPerKey key of req: StreamKey's, or the host
// of its Transport.RemoteAddr.
func (s *Server) streamKey(req *Request) (key string) {
	if s.opts.StreamKey == nil {
		if host, _, err := net.SplitHostPort(req.Transport.RemoteAddr); err == nil {
			return host
		}
		return req.Transport.RemoteAddr
	}
	s.hook("StreamKey", func() { key = s.opts.StreamKey(req) })
	return key
}

// Refused reports a listen the transport refused (an unreadable request, a
// failed authentication: req then holds what was read, at least its
// Transport, or is nil) or that Admit or Open refused, to
// Options.OnRefuse. Transports call it for each listen they answer with an
// error; Admit and Open call it themselves.
func (s *Server) Refused(req *Request, err error) {
	if s.opts.OnRefuse != nil {
		s.hook("OnRefuse", func() { s.opts.OnRefuse(req, err) })
	}
}

// Open opens the slot's subscription for req on the Server's Source
// (openOwned: ctx reaches Source.Open, owner owns the subscription), counts
// it and calls OnOpen. A listen the server ended while it was being opened
// (a drain, EndStreams) is opened and ended at once: the stream writes its
// acknowledgement and its terminal message. A failed open is reported to
// OnRefuse; the transport answers it and calls Done(nil).
func (sl *Slot) Open(ctx, owner context.Context, req *Request) (*Subscription, error) {
	s := sl.srv
	sub, err := s.open(ctx, owner, req)
	if err != nil {
		if ctx.Err() == nil {
			s.Refused(req, err)
		}
		return nil, err
	}
	s.mu.Lock()
	sl.sub = sub
	s.opened++
	var pending error
	if sl.rare != nil {
		pending = sl.rare.pending
	}
	s.mu.Unlock()
	if pending != nil {
		sub.End(pending)
	}
	if s.opts.OnOpen != nil {
		s.hook("OnOpen", func() { s.opts.OnOpen(sub) })
	}
	return sub, nil
}

// open is openOwned with a panic turned into the internal error of a
// failed open.
func (s *Server) open(ctx, owner context.Context, req *Request) (sub *Subscription, err error) {
	if p := catch("listen.Open", func() { sub, err = openOwned(ctx, owner, s.src, req, &s.opts) }); p != nil {
		s.log.Error("listen: panic opening a subscription", "panic", p.Value, "stack", string(p.Stack))
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, core.SourceFailedToOpen).WithCause(p)
	}
	return sub, err
}

// Done ends the slot: its subscription, if opened, has ended with reason
// (the transport has served it and it is closed). The slot is freed and
// counted (Stats), the Quota released, and OnClose called, in that order.
// Call it exactly once per admitted slot; later calls do nothing.
func (sl *Slot) Done(reason error) {
	s := sl.srv
	s.mu.Lock()
	if sl.done {
		s.mu.Unlock()
		return
	}
	sub := sl.sub
	if sub != nil {
		s.closed++
		for i := range endings {
			if errors.Is(reason, endings[i].err) {
				s.ended[i]++
				break
			}
		}
	}
	s.mu.Unlock()
	s.free(sl)
	if sub != nil && s.opts.OnClose != nil {
		s.hook("OnClose", func() { s.opts.OnClose(sub, reason) })
	}
}

// free gives back sl's place: the slot, its key's count, its quota.
func (s *Server) free(sl *Slot) {
	s.mu.Lock()
	sl.done = true
	if sl.at >= 0 {
		if sl.admitted {
			s.slots = removeSlot(s.slots, sl)
		} else {
			s.begun = removeSlot(s.begun, sl)
		}
	}
	if sl.keyed {
		if s.perKey[sl.key]--; s.perKey[sl.key] <= 0 {
			delete(s.perKey, sl.key)
		}
		sl.keyed = false
	}
	if s.draining && len(s.slots) == 0 {
		select {
		case <-s.over:
		default:
			close(s.over)
		}
	}
	var release func()
	if sl.rare != nil {
		release, sl.rare.release = sl.rare.release, nil
	}
	s.mu.Unlock()
	if release != nil {
		s.hook("Quota release", release)
	}
}

// end ends sl's stream with reason (the first end wins); false if it was
// already ended or done. The subscription is ended outside s.mu: End may
// wake its transport.
func (s *Server) end(sl *Slot, reason error) bool {
	s.mu.Lock()
	sub := sl.sub
	switch {
	case sl.done:
		s.mu.Unlock()
		return false
	case sub == nil:
		first := sl.rare == nil || sl.rare.pending == nil
		if first {
			sl.more().pending = reason
		}
		s.mu.Unlock()
		return first
	}
	s.mu.Unlock()
	return sub.end(reason)
}

// EndStreams ends every listen whose principal (Request.Auth) match
// accepts, with reason, an early ending (ErrRevoked, ErrExpired, ...; see
// Subscription.End): each open stream writes its terminal message and is
// closed; a listen still being opened is ended as soon as it is open. It
// returns how many listens this call ended. match runs under no lock.
func (s *Server) EndStreams(match func(auth any) bool, reason error) int {
	n := 0
	for _, sl := range s.snapshot(true) {
		ok := false
		s.hook("EndStreams match", func() { ok = match(sl.auth) })
		if !ok {
			continue
		}
		if s.end(sl, reason) {
			n++
		}
	}
	return n
}

// removeSlot takes sl out of list, which holds it at sl.at: the last slot
// takes its place. s.mu is held.
func removeSlot(list []*Slot, sl *Slot) []*Slot {
	i, last := sl.at, list[len(list)-1]
	list[i], last.at = last, i
	list[len(list)-1] = nil
	list = list[:len(list)-1]
	sl.at = -1
	if cap(list) > 64 && len(list) < cap(list)/4 {
		list = slices.Clone(list) // a mass close gives memory back
	}
	return list
}

// snapshot lists the admitted slots, and the begun ones too if begun.
func (s *Server) snapshot(begun bool) []*Slot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Slot, 0, len(s.slots)+len(s.begun))
	out = append(out, s.slots...)
	if begun {
		out = append(out, s.begun...)
	}
	return out
}

// Stats is a snapshot of a Server's counters, all read at one instant. A
// stream's end is counted (Active decreased, Closed increased) before its
// OnClose runs.
type Stats struct {
	// Active is the number of admitted listens: being opened or streaming.
	Active int
	// Opened counts the subscriptions opened, Closed those whose stream has
	// ended.
	Opened, Closed uint64
	// Refused counts the listens Admit refused for capacity, a quota or the
	// drain.
	Refused uint64
	// Revoked, Expired, Lifetime and FellBehind count, among Closed, the
	// streams the server ended early, by reason.
	Revoked, Expired, Lifetime, FellBehind uint64
	// Draining reports whether Shutdown was called: new listens are
	// refused. Serve it as the instance's readiness (not ready while
	// draining).
	Draining bool
}

// Stats returns the Server's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{
		Active: len(s.slots), Opened: s.opened, Closed: s.closed, Refused: s.refused,
		Revoked: s.ended[0], Expired: s.ended[1], Lifetime: s.ended[2], FellBehind: s.ended[3],
		Draining: s.draining,
	}
}

// Shutdown drains the Server: new listens are refused at once (-32603
// "Server is shutting down", HTTP 503 with Retry-After), and every open
// stream gets its completion result and is closed with reason ErrShutdown;
// a listen still being opened is acknowledged, then completed. Without
// Options.DrainWindow every stream is ended at once; with it, the streams
// are ended one by one, in random order, spread evenly over the window
// (each at a random point of its own share of it), so that their clients'
// re-listens reach the other instances at a steady rate, at most one
// share's worth at a time; a drain that fell behind (its goroutine not run
// for a while, on a starved machine) catches up at most 10% faster than
// its schedule, not in a burst. The window is cut to 90% of the time ctx
// leaves, if shorter, so every completion is sent before ctx's deadline.
//
// Shutdown returns nil once every admitted listen is Done, or ctx's error
// if ctx ends first (the streams not yet ended are then ended at once, and
// go on ending on their own). It is idempotent: a later call waits again.
// The transports' own Shutdown methods call it, then wait for their own
// goroutines.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	first := !s.draining
	s.draining = true
	if first && len(s.slots) == 0 {
		close(s.over)
	}
	s.mu.Unlock()
	if first {
		s.drain(ctx)
	}
	select {
	case <-s.over:
		return nil
	case <-ctx.Done():
		s.endAll()
		return ctx.Err()
	}
}

// drain ends the open streams, paced over Options.DrainWindow; it returns
// when every stream has been ended or ctx ended.
func (s *Server) drain(ctx context.Context) {
	window := s.opts.DrainWindow
	if d, ok := ctx.Deadline(); ok {
		if left := time.Until(d) * 9 / 10; left < window {
			window = left
		}
	}
	slots := s.snapshot(false)
	if window <= 0 || len(slots) < 2 {
		s.endAll()
		return
	}
	rand.Shuffle(len(slots), func(i, j int) { slots[i], slots[j] = slots[j], slots[i] })
	start := time.Now()
	share := window / time.Duration(len(slots))
	// A token bucket bounds the catch-up after this goroutine was held up
	// (a starved process): the streams it is late for end at most 10%
	// faster than the schedule, not in one burst. The credit is time: an
	// end costs fast; at most depth (20 ms, or two shares) is saved up.
	fast := share * 10 / 11
	depth := max(20*time.Millisecond, 2*share)
	credit, last := depth, start
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for i, sl := range slots {
		at := start.Add(time.Duration(i)*share + rand.N(share+1))
		if ready := last.Add(fast - credit); at.Before(ready) {
			at = ready // once the bucket holds an end's credit
		}
		if wait := time.Until(at); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				s.endAll()
				return
			}
		}
		now := time.Now()
		credit, last = min(depth, credit+now.Sub(last))-fast, now
		s.end(sl, s.shutdownReason())
	}
	s.endAll() // listens admitted while the drain ran
}

// endAll ends every slot not yet ended with the shutdown reason.
func (s *Server) endAll() {
	for _, sl := range s.snapshot(false) {
		s.end(sl, s.shutdownReason())
	}
}

// shutdownReason is ErrShutdown, with a retry hint when
// Options.RetryHint is set.
func (s *Server) shutdownReason() error {
	if !s.opts.RetryHint {
		return ErrShutdown
	}
	return &shutdownError{retry: rand.N(s.retryAfter + 1)}
}

// shutdownError is ErrShutdown with the retry hint of its completion.
type shutdownError struct{ retry time.Duration }

func (e *shutdownError) Error() string        { return ErrShutdown.Error() }
func (e *shutdownError) Is(target error) bool { return target == ErrShutdown }

// hook runs a user callback, recovering and logging its panic.
func (s *Server) hook(name string, f func()) {
	if p := core.SafeCall(f); p != nil {
		s.log.Error("listen: "+name+" panicked", "panic", p.Value, "stack", string(p.Stack))
	}
}
