package hub

import (
	"context"
	"log/slog"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
)

// OpenInfo describes an open.
type OpenInfo struct {
	// Subscriptions is the number of listeners after the open.
	Subscriptions int
	// FilterKeys are the accepted filter's keys, sorted.
	FilterKeys []string
	// RequestID is the listen request's id (the zero ID without a request).
	RequestID jsonrpc.ID
	// Transport is the request's transport kind.
	Transport string
}

// PublishInfo describes a publication: its report, the hub's queued total
// after it, and the event's kind (and extension id for extension events).
type PublishInfo struct {
	// Report is what Publish returned.
	Report
	// Queued is the hub's queued total after the publication.
	Queued int
	// EventKind is the published event's kind.
	EventKind listen.Kind
	// ExtensionID is the extension id of an extension event ("" otherwise).
	ExtensionID string
	// Duration is how long the fan-out took: from the event's validation
	// to the last listener's hand-over, queueing or drop (the time is read
	// only when the hub has hooks).
	Duration time.Duration
}

// OverflowInfo describes the drops of one publication.
type OverflowInfo struct {
	// Dropped is the publication's Report.Dropped.
	Dropped int
	// Queued is the hub's queued total after the publication.
	Queued int
	// EventKind is the published event's kind.
	EventKind listen.Kind
	// ExtensionID is the extension id of an extension event ("" otherwise).
	ExtensionID string
	// Policy is the hub's overflow policy.
	Policy Overflow
	// Ended is the publication's Report.Ended: the listeners it ended
	// (EndListener).
	Ended int
}

// ShutdownInfo describes the completion of the listeners by Shutdown.
type ShutdownInfo struct {
	// Subscriptions counts the listeners (all now completing).
	Subscriptions int
	// Queued is the hub's queued total, still to be handed out.
	Queued int
}

// CloseInfo describes a listener's close.
type CloseInfo struct {
	// Subscriptions is the number of listeners remaining.
	Subscriptions int
	// Reason is the close reason classified by listen.Classify: "complete",
	// "cancelled", "disconnected", "error", "shutdown", an early ending's
	// class or "other".
	Reason string
	// Err is the close reason itself.
	Err error
}

// hooks are the callbacks of Options: its On* fields, each after the
// Logger's line when Logger is set; nil when none is set, so that a hub
// without instrumentation does not even read the clock.
type hooks struct {
	open     func(OpenInfo)
	publish  func(PublishInfo)
	overflow func(OverflowInfo)
	shutdown func(ShutdownInfo)
	close    func(CloseInfo)
}

func newHooks(o Options) *hooks {
	if o.Logger == nil && o.OnOpen == nil && o.OnPublish == nil && o.OnOverflow == nil &&
		o.OnShutdown == nil && o.OnClose == nil {
		return nil
	}
	h := &hooks{
		open:     orNop(o.OnOpen),
		publish:  orNop(o.OnPublish),
		overflow: orNop(o.OnOverflow),
		shutdown: orNop(o.OnShutdown),
		close:    orNop(o.OnClose),
	}
	if o.Logger != nil {
		l := slogHooks{o.Logger}
		h.open = then(l.onOpen, h.open)
		h.publish = then(l.onPublish, h.publish)
		h.overflow = then(l.onOverflow, h.overflow)
		h.shutdown = then(l.onShutdown, h.shutdown)
		h.close = then(l.onClose, h.close)
	}
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
type slogHooks struct{ l *slog.Logger }

func (s slogHooks) enabled(level slog.Level) bool {
	return s.l.Enabled(context.Background(), level)
}

// onOpen logs at Debug.
func (s slogHooks) onOpen(i OpenInfo) {
	if !s.enabled(slog.LevelDebug) {
		return
	}
	s.l.LogAttrs(context.Background(), slog.LevelDebug, "subscription hub open",
		slog.Int("subscriptions", i.Subscriptions),
		slog.Any("filter_keys", i.FilterKeys),
		slog.String("request_id", i.RequestID.Raw()),
		slog.String("transport", i.Transport))
}

// onPublish logs at Debug.
func (s slogHooks) onPublish(i PublishInfo) {
	if !s.enabled(slog.LevelDebug) {
		return
	}
	attrs := []slog.Attr{
		slog.Int("matched", i.Matched),
		slog.Int("delivered", i.Delivered),
		slog.Int("buffered", i.Buffered),
		slog.Int("dropped", i.Dropped),
		slog.Int("queued", i.Queued),
		slog.String("event_kind", i.EventKind.String()),
	}
	if i.EventKind == listen.KindExtension {
		attrs = append(attrs, slog.String("extension_id", i.ExtensionID))
	}
	s.l.LogAttrs(context.Background(), slog.LevelDebug, "subscription hub publish", attrs...)
}

// onOverflow logs at Warn.
func (s slogHooks) onOverflow(i OverflowInfo) {
	if !s.enabled(slog.LevelWarn) {
		return
	}
	attrs := []slog.Attr{
		slog.Int("dropped", i.Dropped),
		slog.Int("queued", i.Queued),
		slog.String("event_kind", i.EventKind.String()),
	}
	if i.EventKind == listen.KindExtension {
		attrs = append(attrs, slog.String("extension_id", i.ExtensionID))
	}
	attrs = append(attrs, slog.String("policy", i.Policy.String()))
	if i.Ended > 0 {
		attrs = append(attrs, slog.Int("ended", i.Ended))
	}
	s.l.LogAttrs(context.Background(), slog.LevelWarn, "subscription hub overflow", attrs...)
}

// onShutdown logs at Info.
func (s slogHooks) onShutdown(i ShutdownInfo) {
	if !s.enabled(slog.LevelInfo) {
		return
	}
	s.l.LogAttrs(context.Background(), slog.LevelInfo, "subscription hub shutdown",
		slog.Int("subscriptions", i.Subscriptions),
		slog.Int("queued", i.Queued))
}

// onClose logs at Debug, or at Info for an early ending (the server ended
// the stream: revoked, expired, lifetime, fell behind).
func (s slogHooks) onClose(i CloseInfo) {
	level := slog.LevelDebug
	switch i.Reason {
	case "revoked", "expired", "lifetime", "fell_behind":
		level = slog.LevelInfo
	}
	if !s.enabled(level) {
		return
	}
	s.l.LogAttrs(context.Background(), level, "subscription hub close",
		slog.Int("subscriptions", i.Subscriptions),
		slog.String("reason", i.Reason))
}
