package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcplisten/listen"
)

// Defaults of Options. A zero field of Options means its default.
const (
	// DefaultMaxMessageBytes is the default Options.MaxMessageBytes (1 MiB).
	DefaultMaxMessageBytes = 1 << 20
	// MinMaxMessageBytes is the smallest MaxMessageBytes NewNode accepts:
	// every list change event fits in it.
	MinMaxMessageBytes = 512
	// DefaultResyncInterval is the default Options.ResyncInterval.
	DefaultResyncInterval = 100 * time.Millisecond
	// DefaultFreshness is the default Options.Freshness.
	DefaultFreshness = 30 * time.Second
)

// DefaultResync lists the kinds a node publishes locally when it
// resynchronises (Options.Resync nil): the three list changes.
var DefaultResync = []listen.Kind{
	listen.KindToolsListChanged,
	listen.KindPromptsListChanged,
	listen.KindResourcesListChanged,
}

// Options configure a Node: the part of a bridge's options that does not
// depend on its broker (natsbridge.Options and redisbridge.Options embed
// it). The zero Options is valid: 1 MiB messages, resync of the three list
// changes, no authentication, no hooks.
type Options struct {
	// MaxMessageBytes bounds an envelope. Publish refuses a larger event
	// (ErrTooLarge); a larger message received is dropped and counted
	// (Drops.TooLarge) without being decoded. The broker's own limit also
	// applies. Zero means DefaultMaxMessageBytes; otherwise it must be at
	// least MinMaxMessageBytes.
	MaxMessageBytes int

	// Resync lists the kinds published to the local hub when the node
	// resynchronises its listeners (after a reconnect, or after it found
	// messages missing). Only the list change kinds are allowed. Nil means
	// DefaultResync (tools, prompts and resources); an empty non-nil slice
	// turns the list-change resync off.
	Resync []listen.Kind

	// ResyncURIs, if set, is called on every resynchronisation, after the
	// Resync kinds are published, and a resources/updated event is
	// published locally for each URI it returns (URIs that are not
	// absolute are skipped). Return the resources your listeners may watch
	// (or all your resources), so that a client subscribed to a resource
	// also learns that it may have missed an update. It runs on the
	// goroutine that resynchronises (see Hooks.OnResync) and should be
	// quick.
	ResyncURIs func() []string

	// ResyncInterval is the least time between two resynchronisations
	// caused by lost messages (gaps, broker-side drops): more losses within
	// it are folded into one resync at its end. A reconnect always
	// resynchronises at once. Zero means DefaultResyncInterval; a negative
	// value means no throttling.
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
	// Each key must be at least MinAuthKeyBytes long; at most MaxAuthKeys
	// keys. NewNode copies them. Nil or empty: no authentication, every
	// publisher on the broker's channel is trusted.
	AuthKeys [][]byte

	// Freshness is how far, with AuthKeys, a received message's timestamp
	// may be from the receiver's clock, either way: a message outside it is
	// dropped (Drops.Stale). It bounds the clock difference tolerated
	// between instances and how late a message may arrive (a broker
	// client's reconnect buffer delays what it held). Zero means
	// DefaultFreshness; it must not be negative. Unused without AuthKeys.
	Freshness time.Duration

	// Hooks, if set, is told about publications, receptions, drops,
	// resynchronisations and connection changes. Nil means no
	// instrumentation. A value that also implements hub.Hooks (see
	// SharedHooks) can be given to the hub too.
	Hooks Hooks

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
}

func resolve(o Options) (resolved, error) {
	r := resolved{Options: o}
	switch {
	case r.MaxMessageBytes == 0:
		r.MaxMessageBytes = DefaultMaxMessageBytes
	case r.MaxMessageBytes < MinMaxMessageBytes:
		return r, fmt.Errorf("%w: MaxMessageBytes must be at least %d (or 0 for the default), got %d",
			ErrInvalidOptions, MinMaxMessageBytes, o.MaxMessageBytes)
	}
	if r.ResyncInterval == 0 {
		r.ResyncInterval = DefaultResyncInterval
	}
	switch {
	case r.Freshness == 0:
		r.Freshness = DefaultFreshness
	case r.Freshness < 0:
		return r, fmt.Errorf("%w: Freshness must not be negative, got %v", ErrInvalidOptions, o.Freshness)
	}
	if r.Resync == nil {
		r.resync = DefaultResync
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
	if len(o.AuthKeys) > MaxAuthKeys {
		return r, fmt.Errorf("%w: at most %d AuthKeys, got %d", ErrInvalidOptions, MaxAuthKeys, len(o.AuthKeys))
	}
	r.AuthKeys = nil
	for i, k := range o.AuthKeys {
		if len(k) < MinAuthKeyBytes {
			return r, fmt.Errorf("%w: AuthKeys[%d] has %d bytes, at least %d needed",
				ErrInvalidOptions, i, len(k), MinAuthKeyBytes)
		}
		r.AuthKeys = append(r.AuthKeys, bytes.Clone(k))
	}
	if r.Hooks == nil {
		r.Hooks = NopHooks{}
	}
	return r, nil
}

// Validate reports whether o is valid, with an error matching
// ErrInvalidOptions when it is not: what NewNode would refuse. A bridge
// checks its options with it before it dials its broker.
func (o Options) Validate() error {
	_, err := resolve(o)
	return err
}
