package natsbridge

import "github.com/mcplisten/listen/hub"

// What the tests look at of a bridge.

// Subject returns the NATS subject the bridge publishes and listens on.
func (b *Bridge) Subject() string { return b.opts.subject }

// Hub returns the bridge's local hub.
func (b *Bridge) Hub() *hub.Hub { return b.hub }
