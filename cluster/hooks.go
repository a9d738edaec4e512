package cluster

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/core"
)

// PublishOutInfo describes one event handed to the broker. (The hub's
// Hooks.OnPublish tells what the local fan-out did.)
type PublishOutInfo struct {
	// EventKind and ExtensionID describe the event.
	EventKind   listen.Kind
	ExtensionID string
	// Bytes is the size of the envelope.
	Bytes int
	// Seq is the envelope's sequence number.
	Seq uint64
	// Err is the broker client's error: nil when it took the message
	// (which, while it reconnects, may mean it buffered it), else the
	// event reached local listeners only (Stats.PublishErrors).
	Err error
}

// ReceiveInfo describes an event received from another instance.
type ReceiveInfo struct {
	// Report is what the local hub did with the event.
	Report      hub.Report
	EventKind   listen.Kind
	ExtensionID string
	// Origin is the sending bridge's ID, Seq the envelope's sequence number.
	Origin string
	Seq    uint64
	// Bytes is the size of the message.
	Bytes int
	// Stripped is the number of reserved _meta keys (see the package
	// documentation, Trust) removed from the event's metadata and params
	// _meta before it was delivered (Stats.Sanitised).
	Stripped int
}

// Drop reasons (DropInfo.Reason).
const (
	reasonTooLarge        = "too_large"
	reasonMalformed       = "malformed"
	reasonUnknownVersion  = "unknown_version"
	reasonInvalidEvent    = "invalid_event"
	reasonSlowConsumer    = "slow_consumer"
	reasonPanic           = "panic"
	reasonUnauthenticated = "unauthenticated"
	reasonReplayed        = "replayed"
	reasonStale           = "stale"
)

// DropInfo describes a drop.
type DropInfo struct {
	// Reason says why the message was dropped, one of:
	//
	//   - "too_large": larger than Options.MaxMessageBytes; not decoded.
	//   - "malformed": not a version 1 envelope (not JSON, missing or
	//     mistyped members, unknown kind).
	//   - "unknown_version": an envelope of another version.
	//   - "invalid_event": a well-formed envelope whose event fails
	//     listen.Event.Validate (or Options.DecodePayload).
	//   - "slow_consumer": the broker's client dropped messages the bridge
	//     could not take in time (NATS: over the subscription's pending
	//     limits).
	//   - "panic": delivering the message panicked (in a hook, or in a hub
	//     hook); the panic was recovered.
	//   - "unauthenticated": Options.AuthKeys is set and the message has no
	//     AuthHeader, or one that is not its HMAC under any accepted key;
	//     not decoded.
	//   - "replayed": Options.AuthKeys is set and the message is a copy of
	//     an earlier one: its sequence number is not above the last one
	//     accepted from its origin, or its origin is new to the receiver
	//     and it was stamped before the receiver started (see Replay
	//     protection).
	//   - "stale": Options.AuthKeys is set and the message's timestamp is
	//     missing or further than Options.Freshness from the receiver's
	//     clock.
	Reason string
	// Count is the number of messages dropped (more than 1 only for a slow
	// consumer, whose drops are reported in batches).
	Count int
	// Bytes is the size of the dropped message (0 for a slow consumer).
	Bytes int
	// Err explains the drop (nil for too_large and slow_consumer). It
	// wraps no exported error; its text is for logs.
	Err error
}

// Resync reasons (ResyncInfo.Reason).
const (
	resyncReconnect = "reconnect"
	resyncLoss      = "loss"
	resyncManual    = "manual"
)

// ResyncInfo describes a resynchronisation.
type ResyncInfo struct {
	// Reason says why the bridge resynchronised, one of:
	//
	//   - "reconnect": the connection to the broker was re-established;
	//     messages published meanwhile by other instances may be lost.
	//   - "loss": messages from another instance were found missing (a gap
	//     in its sequence numbers, a message held back as a possible
	//     replay) or dropped by the broker's client.
	//   - "manual": the bridge's Resync was called.
	Reason string
	// Kinds are the list change kinds published locally (Options.Resync).
	Kinds []listen.Kind
	// URIs counts the resources/updated events published for
	// Options.ResyncURIs.
	URIs int
}

// ConnectionInfo describes a status change of the connection to the
// broker.
type ConnectionInfo struct {
	// Status is the connection's new state: "connected",
	// "disconnected", "reconnecting" or "closed".
	Status string
	// Reconnects counts the reconnections since the bridge started.
	Reconnects uint64
	// Err is why the connection was lost, when known.
	Err error
}

// hooks are the callbacks a node calls: Options' On* fields, after the
// lines of Options.Logger when it is set; never nil.
type hooks struct {
	publishOut func(PublishOutInfo)
	receive    func(ReceiveInfo)
	drop       func(DropInfo)
	resync     func(ResyncInfo)
	connection func(ConnectionInfo)
}

// dropLogInterval is the least time between two drop lines of
// Options.Logger.
const dropLogInterval = 10 * time.Second

// newHooks returns o's hooks, each after the logger's line when o.Logger
// is set (drop lines at least dropEvery apart; negative: every drop).
func newHooks(o Options, dropEvery time.Duration) hooks {
	h := hooks{
		publishOut: orNop(o.OnPublishOut),
		receive:    orNop(o.OnReceive),
		drop:       orNop(o.OnDrop),
		resync:     orNop(o.OnResync),
		connection: orNop(o.OnConnection),
	}
	if o.Logger == nil {
		return h
	}
	l := slogHooks{l: o.Logger, drops: &dropLog{l: o.Logger, every: dropEvery}}
	h.publishOut = then(l.onPublishOut, h.publishOut)
	h.receive = then(l.onReceive, h.receive)
	h.drop = then(l.onDrop, h.drop)
	h.resync = then(l.onResync, h.resync)
	h.connection = then(l.onConnection, h.connection)
	return h
}

func orNop[T any](f func(T)) func(T) {
	if f == nil {
		return func(T) {}
	}
	return f
}

// then returns a function that calls first, then next.
func then[T any](first, next func(T)) func(T) {
	return func(i T) { first(i); next(i) }
}

// slogHooks write the lines of Options.Logger.
type slogHooks struct {
	l     *slog.Logger
	drops *dropLog
}

// dropLog writes the drop lines of Options.Logger, at a bounded rate,
// since whoever can publish on the broker can make drops (a forger's flood
// would otherwise write a line per message): the first drop after a quiet
// interval is logged at once ("cluster drop"); the drops that follow
// within the interval of that line are summed into one line written at
// its end ("cluster drops"), on a timer's goroutine, which ends once it
// has written it.
type dropLog struct {
	l     *slog.Logger
	every time.Duration

	mu      sync.Mutex
	last    time.Time   // when the last line was written
	timer   *time.Timer // writes the pending summary; nil when none is pending
	count   int         // messages dropped since the last line
	bytes   int
	reasons map[string]int
	err     error // the last error since the last line
}

// drop logs i at once, or adds it to the pending summary.
func (d *dropLog) drop(i DropInfo) {
	d.mu.Lock()
	now := time.Now()
	if d.every < 0 || (d.timer == nil && now.Sub(d.last) >= d.every) {
		d.last = now
		d.mu.Unlock()
		attrs := []slog.Attr{
			slog.String("reason", i.Reason),
			slog.Int("count", i.Count),
			slog.Int("bytes", i.Bytes),
		}
		if i.Err != nil {
			attrs = append(attrs, slog.String("error", i.Err.Error()))
		}
		d.l.LogAttrs(context.Background(), slog.LevelWarn, "cluster drop", attrs...)
		return
	}
	if d.reasons == nil {
		d.reasons = make(map[string]int)
	}
	d.count += i.Count
	d.bytes += i.Bytes
	d.reasons[i.Reason] += i.Count
	if i.Err != nil {
		d.err = i.Err
	}
	if d.timer == nil {
		d.timer = time.AfterFunc(d.last.Add(d.every).Sub(now), d.flush)
	}
	d.mu.Unlock()
}

// flush writes the pending summary, on the timer's goroutine, where
// nothing would recover a panic of the logger's handler: it is recovered
// here, and the summary lost.
func (d *dropLog) flush() { _ = core.SafeCall(d.writeSummary) }

func (d *dropLog) writeSummary() {
	d.mu.Lock()
	count, bytes, reasons, err := d.count, d.bytes, d.reasons, d.err
	d.count, d.bytes, d.reasons, d.err = 0, 0, nil, nil
	d.timer = nil
	d.last = time.Now()
	d.mu.Unlock()
	names := make([]string, 0, len(reasons))
	for r := range reasons {
		names = append(names, string(r))
	}
	slices.Sort(names)
	per := make([]any, 0, len(names))
	for _, r := range names {
		per = append(per, slog.Int(r, reasons[r]))
	}
	attrs := []slog.Attr{slog.Int("count", count), slog.Int("bytes", bytes), slog.Group("reasons", per...)}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	d.l.LogAttrs(context.Background(), slog.LevelWarn, "cluster drops", attrs...)
}

func (s slogHooks) log(level slog.Level, msg string, attrs ...slog.Attr) {
	s.l.LogAttrs(context.Background(), level, msg, attrs...)
}

func (s slogHooks) enabled(level slog.Level) bool {
	return s.l.Enabled(context.Background(), level)
}

func eventAttrs(r hub.Report, kind listen.Kind, ext string) []slog.Attr {
	attrs := []slog.Attr{slog.String("event_kind", kind.String())}
	if kind == listen.KindExtension {
		attrs = append(attrs, slog.String("extension_id", ext))
	}
	return append(attrs,
		slog.Int("matched", r.Matched),
		slog.Int("delivered", r.Delivered),
		slog.Int("buffered", r.Buffered),
		slog.Int("dropped", r.Dropped))
}

func (s slogHooks) onPublishOut(i PublishOutInfo) {
	level := slog.LevelDebug
	if i.Err != nil {
		level = slog.LevelWarn
	}
	if !s.enabled(level) {
		return
	}
	attrs := []slog.Attr{slog.String("event_kind", i.EventKind.String())}
	if i.EventKind == listen.KindExtension {
		attrs = append(attrs, slog.String("extension_id", i.ExtensionID))
	}
	attrs = append(attrs, slog.Int("bytes", i.Bytes), slog.Uint64("seq", i.Seq))
	if i.Err != nil {
		attrs = append(attrs, slog.String("error", i.Err.Error()))
	}
	s.log(level, "cluster publish", attrs...)
}

func (s slogHooks) onReceive(i ReceiveInfo) {
	level := slog.LevelDebug
	if i.Stripped > 0 {
		level = slog.LevelWarn
	}
	if !s.enabled(level) {
		return
	}
	attrs := append(eventAttrs(i.Report, i.EventKind, i.ExtensionID),
		slog.Int("bytes", i.Bytes), slog.Uint64("seq", i.Seq), slog.String("origin", i.Origin))
	if i.Stripped > 0 {
		attrs = append(attrs, slog.Int("stripped", i.Stripped))
	}
	s.log(level, "cluster receive", attrs...)
}

func (s slogHooks) onDrop(i DropInfo) {
	if s.enabled(slog.LevelWarn) {
		s.drops.drop(i)
	}
}

func (s slogHooks) onResync(i ResyncInfo) {
	if !s.enabled(slog.LevelInfo) {
		return
	}
	kinds := make([]string, len(i.Kinds))
	for j, k := range i.Kinds {
		kinds[j] = k.String()
	}
	s.log(slog.LevelInfo, "cluster resync",
		slog.String("reason", i.Reason),
		slog.Any("kinds", kinds),
		slog.Int("uris", i.URIs))
}

func (s slogHooks) onConnection(i ConnectionInfo) {
	level := slog.LevelInfo
	if i.Status != "connected" {
		level = slog.LevelWarn
	}
	if !s.enabled(level) {
		return
	}
	attrs := []slog.Attr{slog.String("status", i.Status), slog.Uint64("reconnects", i.Reconnects)}
	if i.Err != nil {
		attrs = append(attrs, slog.String("error", i.Err.Error()))
	}
	s.log(level, "cluster connection", attrs...)
}
