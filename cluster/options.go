package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcplisten/listen"
)

// DefaultMaxMessageBytes is the default Options.MaxMessageBytes (1 MiB).
const DefaultMaxMessageBytes = 1 << 20

// Defaults and limits of Options. A zero field of Options means its
// default.
const (
	// minMaxMessageBytes is the smallest MaxMessageBytes NewNode accepts:
	// every list change event fits in it.
	minMaxMessageBytes = 512
	// defaultResyncInterval is the default Options.ResyncInterval.
	defaultResyncInterval = 100 * time.Millisecond
	// defaultFreshness is the default Options.Freshness.
	defaultFreshness = 30 * time.Second
)

// defaultResync lists the kinds a node publishes locally when it
// resynchronises (Options.Resync nil): the three list changes.
var defaultResync = []listen.Kind{
	listen.KindToolsListChanged,
	listen.KindPromptsListChanged,
	listen.KindResourcesListChanged,
}

// Options configure a Node: the part of a bridge's options that does not
// depend on its broker (natsbridge.Options and redisbridge.Options embed
// it). The zero Options is valid: 1 MiB messages, resync of the three list
// changes, no authentication, no logging, no hooks.
type Options struct {
	// MaxMessageBytes bounds an envelope. Publish refuses a larger event
	// (ErrTooLarge); a larger message received is dropped and counted
	// (Drops.TooLarge) without being decoded. The broker's own limit also
	// applies. Zero means DefaultMaxMessageBytes; otherwise it must be at
	// least 512.
	MaxMessageBytes int

	// Resync lists the kinds published to the local hub when the node
	// resynchronises its listeners (after a reconnect, or after it found
	// messages missing). Only the list change kinds are allowed. Nil means
	// the three of them (tools, prompts and resources); an empty non-nil
	// slice turns the list-change resync off.
	Resync []listen.Kind

	// ResyncURIs, if set, is called on every resynchronisation, after the
	// Resync kinds are published, and a resources/updated event is
	// published locally for each URI it returns (URIs that are not
	// absolute are skipped). Return the resources your listeners may watch
	// (or all your resources), so that a client subscribed to a resource
	// also learns that it may have missed an update. It runs on the
	// goroutine that resynchronises (see OnResync) and should be quick.
	ResyncURIs func() []string

	// ResyncInterval is the least time between two resynchronisations
	// caused by lost messages (gaps, broker-side drops): more losses within
	// it are folded into one resync at its end. A reconnect always
	// resynchronises at once. Zero means 100 ms; a negative value means
	// no throttling.
	ResyncInterval time.Duration

	// DecodePayload, if set, turns the JSON payload of a received extension
	// event back into the value its extension's shaper expects (for example
	// by json.Unmarshal into the extension's own type). An error drops the
	// event (Drops.InvalidEvent). Nil decodes the payload as a generic JSON
	// value: nil, bool, string, json.Number, []any or map[string]any.
	DecodePayload func(extensionID string, raw json.RawMessage) (any, error)

	// AuthKeys, if set, turns on envelope authentication with shared keys
	// (see the package documentation, Trust). The node signs every message
	// it publishes with AuthKeys[0]: the HMAC-SHA256 of the scope (the
	// subject or stream), a newline and the exact envelope bytes. It
	// accepts a message only if it carries its HMAC under one of AuthKeys
	// (compared in constant time), and drops any other before decoding it
	// (Drops.Unauthenticated). It also drops a replayed message
	// (Drops.Replayed) and one whose timestamp is not within Freshness of
	// its clock (Drops.Stale): see Replay protection in the package
	// documentation.
	//
	// Every node of a cluster must sign with a key the others accept. To
	// rotate keys without losing a message: give every instance
	// [old, new] (it still signs with old and accepts both), then
	// [new, old] (signs with new), then [new]. Turning authentication on
	// or off is not seamless: while some instances have keys and others
	// not, the former drop the latter's messages.
	//
	// Each key must be at least MinAuthKeyBytes long; at most 8 keys (a
	// message that matches no key costs the receiver one HMAC per key).
	// NewNode copies them. Nil or empty: no authentication, every
	// publisher on the broker's channel is trusted.
	AuthKeys [][]byte

	// Freshness is how far, with AuthKeys, a received message's timestamp
	// may be from the receiver's clock, either way: a message outside it is
	// dropped (Drops.Stale). It bounds the clock difference tolerated
	// between instances and how late a message may arrive (a broker
	// client's reconnect buffer delays what it held). Zero means 30 s; it
	// must not be negative. Unused without AuthKeys.
	Freshness time.Duration

	// Logger, if set, logs the node's life: publications and receptions
	// at Debug (a reception whose reserved _meta keys were stripped at
	// Warn), resynchronisations and connection changes at Info (a lost
	// connection at Warn), drops at Warn. Nothing is formatted when the
	// logger's level disables the record. Drops are logged at a bounded
	// rate, since whoever can publish on the broker can make them: the
	// first drop after a quiet 10 s at once ("cluster drop": reason,
	// count, bytes, error), the drops that follow within 10 s of that line
	// summed into one line at its end ("cluster drops": count, bytes, one
	// count per reason under "reasons", the last error), written by a
	// timer's goroutine that ends once it has written it (a panic of the
	// logger's handler there is recovered, and the line lost). The exact
	// counts are in Stats. Other attribute names: event_kind,
	// extension_id, matched, delivered, buffered, dropped, bytes, seq,
	// origin, stripped, kinds, uris, status, reconnects. (Give the hub its
	// own hub.Options.Logger for its side.)
	Logger *slog.Logger

	// OnPublishOut, OnReceive, OnDrop, OnResync and OnConnection, if set,
	// are told, after Logger's line, of each event handed to the broker
	// (before the hub's local fan-out), each event from another instance
	// delivered to the local hub, each message from the broker dropped,
	// each resynchronisation of the local listeners, and each change of
	// the connection to the broker. The node calls them synchronously:
	// OnPublishOut in the goroutine that called the hub's Publish;
	// OnReceive and the OnDrop of a message on the bridge's delivery
	// goroutine; OnConnection, the OnDrop of broker-side losses and
	// OnResync on the goroutine that reported them (the bridge's; a loss
	// resync may run on a timer's goroutine; Node.Resync's caller for a
	// manual one). They must be safe for concurrent use and quick, since
	// delivery waits for them, and must not call the bridge's Close. A
	// hook that panics on a bridge goroutine is recovered (Stats.Panics;
	// the message it was about counts as Drops.Panic); in Publish the
	// panic propagates to the caller.
	OnPublishOut func(PublishOutInfo)
	OnReceive    func(ReceiveInfo)
	OnDrop       func(DropInfo)
	OnResync     func(ResyncInfo)
	OnConnection func(ConnectionInfo)

	// Quota, if set, is carried by the node: it reports the quota's counts
	// to the other instances on the broker and takes theirs into account
	// (see the package documentation, Quotas). A Quota can be given to one
	// node at a time; Close hands it back (it then holds each key to its
	// local share).
	Quota *Quota
}

// resolved is Options with defaults applied.
type resolved struct {
	Options
	resync []listen.Kind
	hooks  hooks
}

func resolve(o Options) (resolved, error) {
	r := resolved{Options: o}
	switch {
	case r.MaxMessageBytes == 0:
		r.MaxMessageBytes = DefaultMaxMessageBytes
	case r.MaxMessageBytes < minMaxMessageBytes:
		return r, fmt.Errorf("%w: MaxMessageBytes must be at least %d (or 0 for the default), got %d",
			ErrInvalidOptions, minMaxMessageBytes, o.MaxMessageBytes)
	}
	if r.ResyncInterval == 0 {
		r.ResyncInterval = defaultResyncInterval
	}
	switch {
	case r.Freshness == 0:
		r.Freshness = defaultFreshness
	case r.Freshness < 0:
		return r, fmt.Errorf("%w: Freshness must not be negative, got %v", ErrInvalidOptions, o.Freshness)
	}
	if r.Resync == nil {
		r.resync = defaultResync
	} else {
		for _, k := range r.Resync {
			switch k {
			case listen.KindToolsListChanged, listen.KindPromptsListChanged, listen.KindResourcesListChanged:
			default:
				return r, fmt.Errorf("%w: Resync may hold only list change kinds, got %v", ErrInvalidOptions, k)
			}
		}
		r.resync = append([]listen.Kind(nil), r.Resync...)
	}
	r.Resync = nil
	if len(o.AuthKeys) > maxAuthKeys {
		return r, fmt.Errorf("%w: at most %d AuthKeys, got %d", ErrInvalidOptions, maxAuthKeys, len(o.AuthKeys))
	}
	r.AuthKeys = nil
	for i, k := range o.AuthKeys {
		if len(k) < MinAuthKeyBytes {
			return r, fmt.Errorf("%w: AuthKeys[%d] has %d bytes, at least %d needed",
				ErrInvalidOptions, i, len(k), MinAuthKeyBytes)
		}
		r.AuthKeys = append(r.AuthKeys, bytes.Clone(k))
	}
	r.hooks = newHooks(o, dropLogInterval)
	return r, nil
}

// Validate reports whether o is valid, with an error matching
// ErrInvalidOptions when it is not: what NewNode would refuse. A bridge
// checks its options with it before it dials its broker.
func (o Options) Validate() error {
	_, err := resolve(o)
	return err
}
