package streamhttp

import (
	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/safe"
)

// pinger returns ping, reporting each keep-alive it wrote to
// Options.OnKeepAlive when that is set.
func (h *Handler) pinger(sub *listen.Subscription, ping func() error) func() error {
	hook := h.opts.OnKeepAlive
	if hook == nil {
		return ping
	}
	return func() error {
		if err := ping(); err != nil {
			return err
		}
		_ = safe.Call(func() { hook(sub) })
		return nil
	}
}
