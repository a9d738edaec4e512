package hub

import "log/slog"

// Hooks is the interface the hub's hooks had before they became the On*
// fields of Options. Package cluster (SharedHooks, NopSharedHooks) still
// embeds it; it goes once cluster no longer does. Nothing in this package
// calls it.
//
// Deprecated: set Options.Logger and the On* fields of Options.
type Hooks interface {
	OnOpen(OpenInfo)
	OnPublish(PublishInfo)
	OnOverflow(OverflowInfo)
	OnShutdown(ShutdownInfo)
	OnClose(CloseInfo)
}

// NopHooks implements Hooks with methods that do nothing.
//
// Deprecated: set only the On* fields of Options you need.
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

// SlogHooks returns Hooks that write the lines of Options.Logger to logger
// (slog.Default() when nil).
//
// Deprecated: set Options.Logger.
func SlogHooks(logger *slog.Logger) Hooks {
	if logger == nil {
		logger = slog.Default()
	}
	return slogCompat{slogHooks{logger}}
}

type slogCompat struct{ s slogHooks }

func (c slogCompat) OnOpen(i OpenInfo)         { c.s.onOpen(i) }
func (c slogCompat) OnPublish(i PublishInfo)   { c.s.onPublish(i) }
func (c slogCompat) OnOverflow(i OverflowInfo) { c.s.onOverflow(i) }
func (c slogCompat) OnShutdown(i ShutdownInfo) { c.s.onShutdown(i) }
func (c slogCompat) OnClose(i CloseInfo)       { c.s.onClose(i) }
