package streamhttp

import "github.com/mcplisten/listen"

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
		func() {
			defer func() { _ = recover() }()
			hook(sub)
		}()
		return nil
	}
}
