package otel

import (
	"errors"
	"os"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/stdio"
	"github.com/mcplisten/listen/streamhttp"
)

// Close reason classes (the values of attrCloseReason): those of
// listen.Classify, listed in the package documentation.
const (
	classComplete     = "complete"
	classCancelled    = "cancelled"
	classDisconnected = "disconnected"
	classError        = "error"
	classShutdown     = "shutdown"
	classOther        = "other"
	classRevoked      = "revoked"
	classExpired      = "expired"
	classLifetime     = "lifetime"
	classFellBehind   = "fell_behind"
)

var classes = [...]string{classComplete, classCancelled, classDisconnected, classError, classShutdown, classOther,
	classRevoked, classExpired, classLifetime, classFellBehind}

func classIndex(reason error) int {
	if i := slices.Index(classes[:], listen.Classify(reason)); i >= 0 {
		return i
	}
	return 5 // classOther
}

// Refusal causes (the values of attrRefusalCause), listed in the package
// documentation.
const (
	// causeCapacity: the server was at its stream limit
	// ("Server subscription capacity exhausted", listen.ErrOverloaded).
	causeCapacity = "capacity"
	// causeShutdown: the server was draining (listen.ErrShutdown).
	causeShutdown = "shutdown"
	// causeQuota: a per-client limit (listen.Options.MaxStreamsPerKey) or a
	// listen.Quota refused it (listen.ErrOverQuota).
	causeQuota = "quota"
	// causeAuth: Authenticate or CheckOrigin refused the request
	// (streamhttp.MsgUnauthorized, streamhttp.MsgForbidden,
	// *streamhttp.AuthError).
	causeAuth = "auth"
	// causeValidation: the request itself was wrong (parse, method, params,
	// headers, protocol version, body size, a duplicate id: every error
	// but -32603).
	causeValidation = "validation"
	// causeError: the server failed to open the listen (any other -32603,
	// such as "Subscription source failed to open").
	causeError = "error"
)

var causes = [...]string{causeCapacity, causeShutdown, causeAuth, causeValidation, causeError, causeQuota}

// refusalCause sorts the error a listen was refused with (the error given
// to listen.Options.OnRefuse) into one of the refusal causes.
func refusalCause(err error) string { return causes[causeIndex(err)] }

func causeIndex(err error) int {
	var we *jsonrpc.Error
	var ae *streamhttp.AuthError
	switch {
	case errors.Is(err, listen.ErrOverQuota):
		return 5
	case errors.Is(err, listen.ErrOverloaded):
		return 0
	case errors.Is(err, listen.ErrShutdown):
		return 1
	case errors.Is(err, listen.ErrExpired):
		return 2
	case errors.As(err, &ae):
		return 2
	case errors.As(err, &we):
		switch {
		case we.Message == streamhttp.MsgUnauthorized, we.Message == streamhttp.MsgForbidden:
			return 2
		case we.Code != jsonrpc.CodeInternalError:
			return 3
		}
	}
	return 4
}

// cutByDeadline reports whether a close reason is a stream cut because a
// write missed its deadline: Disconnected with os.ErrDeadlineExceeded
// (streamhttp) or stdio.ErrWriteTimeout as its cause.
func cutByDeadline(reason error) bool {
	return errors.Is(reason, listen.ErrDisconnected) &&
		(errors.Is(reason, os.ErrDeadlineExceeded) || errors.Is(reason, stdio.ErrWriteTimeout))
}

// transport records the stream instruments of one transport kind. Its
// methods fit the hooks of a transport (OnOpen, OnClose, a refusal, a
// keep-alive); Instrument and InstrumentHTTP wire them. A nil
// *transport (from disabled Metrics) records nothing.
type transport struct {
	m         *Metrics
	kind      string
	one       []metric.AddOption
	closed    [len(classes)][]metric.AddOption
	refused   [len(causes)][]metric.AddOption
	delivered [numKinds][]metric.AddOption
}

// recorder returns the recorder of the transport kind (the
// listen.Transport.Kind of its requests, such as streamhttp.TransportKind),
// or nil when m is disabled; the same kind always gives the same
// *transport.
func (m *Metrics) recorder(kind string) *transport {
	if m == nil {
		return nil
	}
	m.mu.RLock()
	t := m.transports[kind]
	m.mu.RUnlock()
	if t != nil {
		return t
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.transports[kind]; t != nil {
		return t
	}
	t = &transport{m: m, kind: kind}
	tr := attrTransport.String(kind)
	t.one = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(tr))}
	for i, c := range classes {
		t.closed[i] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(tr, attrCloseReason.String(c)))}
	}
	for i, c := range causes {
		t.refused[i] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(tr, attrRefusalCause.String(c)))}
	}
	for i := range numKinds {
		t.delivered[i] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(tr,
			attrNotificationKind.String(listen.Kind(i).String())))}
	}
	// Every series at zero (see Metrics); the invalid kind is left out.
	m.streamsOpen.Add(ctx, 0, t.one...)
	for _, c := range []metric.Int64Counter{m.streamsOpened, m.writeTimeouts, m.keepAlives} {
		c.Add(ctx, 0, t.one...)
	}
	for _, o := range t.closed {
		m.streamsClosed.Add(ctx, 0, o...)
	}
	for _, o := range t.refused {
		m.refused.Add(ctx, 0, o...)
	}
	for _, o := range t.delivered[1:] {
		m.delivered.Add(ctx, 0, o...)
	}
	m.transports[kind] = t
	return t
}

// OnOpen records an opened stream: mcp.listen.streams.open +1,
// mcp.listen.streams.opened +1.
func (t *transport) OnOpen(*listen.Subscription) {
	if t == nil {
		return
	}
	t.m.streamsOpen.Add(ctx, 1, t.one...)
	t.m.streamsOpened.Add(ctx, 1, t.one...)
}

// OnClose records a closed stream with its reason: mcp.listen.streams.open
// -1, mcp.listen.streams.closed +1 with the reason's class, and
// mcp.listen.streams.write_timeouts +1 when a write deadline cut it.
func (t *transport) OnClose(_ *listen.Subscription, reason error) {
	if t == nil {
		return
	}
	t.m.streamsOpen.Add(ctx, -1, t.one...)
	t.m.streamsClosed.Add(ctx, 1, t.closed[classIndex(reason)]...)
	if cutByDeadline(reason) {
		t.m.writeTimeouts.Add(ctx, 1, t.one...)
	}
}

// OnRefuse records a listen answered with err instead of a stream:
// mcp.listen.requests.refused +1 with refusalCause(err).
func (t *transport) OnRefuse(err error) {
	if t == nil {
		return
	}
	t.m.refused.Add(ctx, 1, t.refused[causeIndex(err)]...)
}

// OnKeepAlive records a keep-alive written: mcp.listen.keepalives.sent +1.
func (t *transport) OnKeepAlive(*listen.Subscription) {
	if t == nil {
		return
	}
	t.m.keepAlives.Add(ctx, 1, t.one...)
}

// Instrument sets the listen.Server hooks of opts (OnOpen, OnClose and
// OnRefuse) to record on m, each stream under its transport kind
// (Subscription.TransportKind; a refusal under its request's
// Transport.Kind, "" without one), each calling the hook that was set
// before, after recording; and it adds opts.MaxStreams
// (1024, its documented default, when zero) to mcp.listen.streams.capacity,
// which has no transport attribute: the limit covers every transport of
// the Server. It creates the series of Streamable HTTP and stdio at zero
// (see Metrics). Call it once per Server, before listen.NewServer, which
// copies the options. A nil or disabled m leaves opts unchanged.
func (m *Metrics) Instrument(opts *listen.Options) {
	if m == nil || opts == nil {
		return
	}
	m.recorder(streamhttp.TransportKind)
	m.recorder(stdio.TransportKind)
	switch {
	case opts.MaxStreams == 0:
		m.capacity.Add(ctx, defaultMaxStreams)
	case opts.MaxStreams > 0: // negative: listen.NewServer refuses the options
		m.capacity.Add(ctx, int64(opts.MaxStreams))
	}
	onOpen, onClose, onRefuse := opts.OnOpen, opts.OnClose, opts.OnRefuse
	opts.OnOpen = func(sub *listen.Subscription) {
		m.recorder(sub.TransportKind()).OnOpen(sub)
		if onOpen != nil {
			onOpen(sub)
		}
	}
	opts.OnClose = func(sub *listen.Subscription, reason error) {
		m.recorder(sub.TransportKind()).OnClose(sub, reason)
		if onClose != nil {
			onClose(sub, reason)
		}
	}
	opts.OnRefuse = func(req *listen.Request, err error) {
		kind := ""
		if req != nil {
			kind = req.Transport.Kind
		}
		m.recorder(kind).OnRefuse(err)
		if onRefuse != nil {
			onRefuse(req, err)
		}
	}
}

// InstrumentHTTP sets opts' OnKeepAlive to record on m (transport
// "streamable_http"), calling the hook that was set before, after
// recording. Call it before streamhttp.New, which copies the options; the
// streams themselves are recorded by Instrument. A nil or disabled m
// leaves opts unchanged. (The stdio transport sends no keep-alives.)
func (m *Metrics) InstrumentHTTP(opts *streamhttp.Options) {
	if m == nil || opts == nil {
		return
	}
	t := m.recorder(streamhttp.TransportKind)
	onKeepAlive := opts.OnKeepAlive
	opts.OnKeepAlive = func(sub *listen.Subscription) {
		t.OnKeepAlive(sub)
		if onKeepAlive != nil {
			onKeepAlive(sub)
		}
	}
}

// defaultMaxStreams is listen.Options.MaxStreams's documented default, the
// capacity Instrument records for a zero MaxStreams.
const defaultMaxStreams = 1024
