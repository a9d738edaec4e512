package redisbridge

import "github.com/mcplisten/listen/hub"

// What the tests look at of a bridge.

// Stream returns the key of the stream the bridge appends to and reads.
func (b *Bridge) Stream() string { return b.opts.Stream }

// Hub returns the bridge's local hub.
func (b *Bridge) Hub() *hub.Hub { return b.hub }
