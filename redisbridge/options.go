package redisbridge

import (
	"fmt"
	"strings"

	"github.com/mcplisten/listen/cluster"
)

// Defaults of Options. A zero field of Options means its default.
const (
	// defaultStream is the default stream key.
	defaultStream = "mcp.listen.events"
	// defaultStreamLength is the default Options.StreamLength: about 2 MB
	// of list changes and resource updates.
	defaultStreamLength = 10000
	// minStreamLength is the smallest StreamLength New accepts.
	minStreamLength = 100
	// defaultOutboxBytes is the default Options.OutboxBytes (8 MiB, as
	// nats.go's reconnect buffer).
	defaultOutboxBytes = 8 << 20
	// defaultReadBytes is the default Options.ReadBytes (4 MiB: four
	// envelopes of the default MaxMessageBytes, or thousands of ordinary
	// ones).
	defaultReadBytes = 4 << 20
)

// Options configure a Bridge. The zero Options is valid: stream
// "mcp.listen.events" of about 10,000 entries, an 8 MiB outbox, reads of
// at most 4 MiB, and the defaults of cluster.Options (1 MiB messages,
// resync of the three list changes, no authentication, no logging, no
// hooks).
type Options struct {
	// Stream is the key of the Redis stream the instances share. Give each
	// independent MCP server (each set of instances that share one state)
	// its own when several use one Redis. Empty means "mcp.listen.events";
	// it must hold no whitespace.
	Stream string

	// StreamLength is how many entries the stream keeps (XADD MAXLEN ~,
	// so Redis trims in whole nodes and keeps at least this many): how far
	// a bridge that lost its connection can catch up with what it missed,
	// without a resynchronisation. Zero means 10,000 (about 2 MB of list
	// changes and resource updates); otherwise at least 100.
	StreamLength int64

	// OutboxBytes bounds the messages waiting to be written to Redis (the
	// hub's Publish never waits for Redis: it queues). While Redis is
	// unreachable they wait, up to this many bytes; past it, a publication
	// reaches the local listeners only (Stats.PublishErrors) and the other
	// instances find the gap. Zero means 8 MiB (as nats.go's reconnect
	// buffer); otherwise at least MaxMessageBytes.
	OutboxBytes int

	// ReadBytes bounds what one read of the stream fetches: the envelopes
	// (and signatures) of the entries it returns, whoever appended them.
	// The reader fetches the entries after the last one it read in batches
	// of at most this many bytes (and 256 entries), and skips unread an
	// entry whose envelope is larger than MaxMessageBytes
	// (cluster.Drops.TooLarge, with its size): a client that appends a
	// flood of large entries makes an instance hold about ReadBytes at a
	// time, not the flood. (The one entry a reader that has caught up
	// waits for is read whole: see the package documentation.) Zero means
	// 4 MiB; otherwise at least MaxMessageBytes.
	ReadBytes int

	// Options are the broker-neutral options: message size, resync,
	// AuthKeys (signed envelopes, the signature in the entry's field "s"),
	// replay window, logger and hooks.
	cluster.Options
}

// resolve returns o with its defaults applied, or why it is invalid.
func resolve(o Options) (Options, error) {
	r := o
	if err := o.Options.Validate(); err != nil {
		return r, err
	}
	if r.Stream == "" {
		r.Stream = defaultStream
	}
	if strings.ContainsAny(r.Stream, " \t\r\n") {
		return r, fmt.Errorf("%w: Stream %q holds whitespace", cluster.ErrInvalidOptions, o.Stream)
	}
	switch {
	case r.StreamLength == 0:
		r.StreamLength = defaultStreamLength
	case r.StreamLength < minStreamLength:
		return r, fmt.Errorf("%w: StreamLength must be at least %d (or 0 for the default), got %d",
			cluster.ErrInvalidOptions, minStreamLength, o.StreamLength)
	}
	maxMsg := r.MaxMessageBytes
	if maxMsg == 0 {
		maxMsg = cluster.DefaultMaxMessageBytes
	}
	var err error
	if r.OutboxBytes, err = atLeastMessage("OutboxBytes", r.OutboxBytes, defaultOutboxBytes, maxMsg); err != nil {
		return r, err
	}
	if r.ReadBytes, err = atLeastMessage("ReadBytes", r.ReadBytes, defaultReadBytes, maxMsg); err != nil {
		return r, err
	}
	r.MaxMessageBytes = maxMsg
	return r, nil
}

// atLeastMessage resolves a byte bound that must hold one message: v, or
// def (at least maxMsg) for zero; an error for less than maxMsg.
func atLeastMessage(name string, v, def, maxMsg int) (int, error) {
	switch {
	case v == 0:
		return max(def, maxMsg), nil
	case v < maxMsg:
		return v, fmt.Errorf("%w: %s (%d) must be at least MaxMessageBytes (%d)",
			cluster.ErrInvalidOptions, name, v, maxMsg)
	}
	return v, nil
}
