package hub

import (
	"context"
	"log/slog"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
)

// Hooks instruments a hub. The hub calls them synchronously, in the
// goroutine of the operation that caused them (Open, Publish, Shutdown, a
// stream's Close), after that operation has updated the hub and released
// every lock: a hook may call back into the hub. Hooks must be safe for
// concurrent use and should be quick, since Publish waits for them.
//
// A hook that panics propagates the panic to that caller, after the hub's
// state is consistent; a panicking OnOpen also closes the listener it was
// told about.
//
// Embed NopHooks to implement only some of the methods.
type Hooks interface {
	// OnOpen: a listener was opened.
	OnOpen(OpenInfo)
	// OnPublish: an event was published (also when it matched nobody).
	OnPublish(PublishInfo)
	// OnOverflow: a publication dropped events (after its OnPublish).
	OnOverflow(OverflowInfo)
	// OnShutdown: a Shutdown call completed the open listeners (each then
	// hands out what it has queued and ends).
	OnShutdown(ShutdownInfo)
	// OnClose: a listener was closed (once per listener).
	OnClose(CloseInfo)
}

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

// NopHooks implements Hooks with methods that do nothing. Embed it in a
// struct to implement only the hooks you need.
type NopHooks struct{}

// OnOpen does nothing.
func (NopHooks) OnOpen(OpenInfo) {}

// OnPublish does nothing.
func (NopHooks) OnPublish(PublishInfo) {}

// OnOverflow does nothing.
func (NopHooks) OnOverflow(OverflowInfo) {}

// OnShutdown does nothing.
func (NopHooks) OnShutdown(ShutdownInfo) {}

// OnClose does nothing.
func (NopHooks) OnClose(CloseInfo) {}

var _ Hooks = NopHooks{}

// SlogHooks returns Hooks that log to logger (slog.Default() when nil):
// opens, publications and closes at Debug (a close for an early ending,
// such as fell_behind, at Info), overflows at Warn, shutdowns at Info, with
// these attributes:
// subscriptions, filter_keys, request_id, transport, matched, delivered,
// buffered, dropped, queued, event_kind, extension_id, policy, ended,
// reason (a close's listen.Classify class: "fell_behind" for a listener
// ended by EndListener).
// Nothing is formatted when the logger's level disables the record.
func SlogHooks(logger *slog.Logger) Hooks {
	if logger == nil {
		logger = slog.Default()
	}
	return slogHooks{logger}
}

type slogHooks struct{ l *slog.Logger }

func (s slogHooks) enabled(level slog.Level) bool {
	return s.l.Enabled(context.Background(), level)
}

// OnOpen logs at Debug.
func (s slogHooks) OnOpen(i OpenInfo) {
	if !s.enabled(slog.LevelDebug) {
		return
	}
	s.l.LogAttrs(context.Background(), slog.LevelDebug, "subscription hub open",
		slog.Int("subscriptions", i.Subscriptions),
		slog.Any("filter_keys", i.FilterKeys),
		slog.String("request_id", i.RequestID.Raw()),
		slog.String("transport", i.Transport))
}

// OnPublish logs at Debug.
func (s slogHooks) OnPublish(i PublishInfo) {
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

// OnOverflow logs at Warn.
func (s slogHooks) OnOverflow(i OverflowInfo) {
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

// OnShutdown logs at Info.
func (s slogHooks) OnShutdown(i ShutdownInfo) {
	if !s.enabled(slog.LevelInfo) {
		return
	}
	s.l.LogAttrs(context.Background(), slog.LevelInfo, "subscription hub shutdown",
		slog.Int("subscriptions", i.Subscriptions),
		slog.Int("queued", i.Queued))
}

// OnClose logs at Debug, or at Info for an early ending (the server ended
// the stream: revoked, expired, lifetime, fell behind).
func (s slogHooks) OnClose(i CloseInfo) {
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
