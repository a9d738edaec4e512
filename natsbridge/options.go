package natsbridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mcplisten/listen"
)

// Defaults of Options. A zero field of Options means its default.
const (
	// DefaultPrefix is the default subject prefix: events travel on
	// "mcp.listen.events".
	DefaultPrefix = "mcp.listen"
	// DefaultMaxMessageBytes is the default Options.MaxMessageBytes (1 MiB,
	// the NATS server's default max_payload).
	DefaultMaxMessageBytes = 1 << 20
	// MinMaxMessageBytes is the smallest MaxMessageBytes New accepts: every
	// list change event fits in it.
	MinMaxMessageBytes = 512
	// DefaultPendingMessages and DefaultPendingBytes are the default pending
	// limits of the bridge's NATS subscription (those of nats.go).
	DefaultPendingMessages = nats.DefaultSubPendingMsgsLimit
	DefaultPendingBytes    = nats.DefaultSubPendingBytesLimit
	// DefaultResyncInterval is the default Options.ResyncInterval.
	DefaultResyncInterval = 100 * time.Millisecond
	// eventsToken is the last token of the bridge's subject.
	eventsToken = "events"
)

// DefaultResync lists the kinds a bridge publishes locally when it
// resynchronises (Options.Resync nil): the three list changes.
var DefaultResync = []listen.Kind{
	listen.KindToolsListChanged,
	listen.KindPromptsListChanged,
	listen.KindResourcesListChanged,
}

// Options configure a Bridge. The zero Options is valid: subject
// "mcp.listen.events", 1 MiB messages, resync of the three list changes, no
// hooks.
type Options struct {
	// Prefix is the subject prefix: the bridge publishes and subscribes on
	// Prefix + ".events". Give each independent MCP server (each set of
	// instances that share one state) its own prefix when several use one
	// NATS system. It must be a literal NATS subject: dot-separated non-empty
	// tokens, no whitespace, no wildcards ("*", ">"). Empty means
	// DefaultPrefix.
	Prefix string

	// MaxMessageBytes bounds an envelope. Publish refuses a larger event
	// (ErrTooLarge); a larger message received on the subject is dropped and
	// counted (Drops.TooLarge) without being decoded. The NATS server's own
	// max_payload also applies to what this bridge publishes. Zero means
	// DefaultMaxMessageBytes; otherwise it must be at least
	// MinMaxMessageBytes.
	MaxMessageBytes int

	// PendingMessages and PendingBytes are the pending limits of the
	// bridge's NATS subscription (nats.Subscription.SetPendingLimits):
	// messages received but not yet delivered to the hub. Past them, nats.go
	// drops messages (a slow consumer); the bridge counts them
	// (Drops.SlowConsumer) and resynchronises. Zero means the default
	// (DefaultPendingMessages, DefaultPendingBytes); a negative value means
	// no limit. PendingBytes, when limited, must be at least MaxMessageBytes.
	PendingMessages int
	PendingBytes    int

	// Resync lists the kinds published to the local hub when the bridge
	// resynchronises its listeners (after a reconnect, or after it detected
	// lost messages). Only the list change kinds are allowed. Nil means
	// DefaultResync (tools, prompts and resources); an empty non-nil slice
	// turns the list-change resync off.
	Resync []listen.Kind

	// ResyncURIs, if set, is called on every resynchronisation, after the
	// Resync kinds are published, and a resources/updated event is
	// published locally for each URI it returns (URIs that are not absolute
	// are skipped). Return the resources your listeners may watch (or all
	// your resources) so that a client subscribed to a resource also learns
	// that it may have missed an update. It runs on the bridge's control
	// goroutine (or Resync's caller) and should be quick.
	ResyncURIs func() []string

	// ResyncInterval is the least time between two resynchronisations caused
	// by lost messages (gaps, slow consumer): more losses within it are
	// folded into one resync at its end. A reconnect always resynchronises
	// at once. Zero means DefaultResyncInterval; a negative value means no
	// throttling.
	ResyncInterval time.Duration

	// DecodePayload, if set, turns the JSON payload of a received extension
	// event back into the value its extension's shaper expects (for example
	// by json.Unmarshal into the extension's own type). An error drops the
	// event (Drops.InvalidEvent). Nil decodes the payload as a generic JSON
	// value: nil, bool, string, json.Number, []any or map[string]any.
	DecodePayload func(extensionID string, raw json.RawMessage) (any, error)

	// AuthKeys, if set, turns on envelope authentication with shared keys
	// (see "Trust model" in the package documentation). The bridge signs
	// every message it publishes with AuthKeys[0]: the HMAC-SHA256 of the
	// subject, a newline and the exact envelope bytes, in the NATS header
	// AuthHeader. It accepts a message from the subject only if that
	// header holds its HMAC under one of AuthKeys (compared in constant
	// time). It drops any other message before decoding it
	// (Drops.Unauthenticated): nothing is delivered and its sequence number
	// counts for nothing, so it cannot cause a resync. It also drops a
	// message whose sequence number is not above the last one accepted
	// from its origin: a replay of a captured message (Drops.Replayed).
	//
	// Every bridge on the subject must sign with a key the others accept.
	// To rotate keys without losing a message: give every instance
	// [old, new] (it still signs with old and accepts both), then
	// [new, old] (signs with new), then [new]. Turning authentication on
	// or off is not seamless: while some instances have keys and others
	// not, the former drop the latter's messages (see the package
	// documentation).
	//
	// Each key must be at least MinAuthKeyBytes long; at most MaxAuthKeys
	// keys. New copies them. Signed messages need a NATS server with
	// message headers (2.2 or later). Nil or empty: no authentication,
	// every publisher on the subject is trusted.
	AuthKeys [][]byte

	// Hooks, if set, is told about publications, receptions, drops,
	// resynchronisations and connection changes. Nil means no
	// instrumentation. See Hooks; a value that also implements hub.Hooks can
	// be given to the hub too.
	Hooks Hooks
}

// resolved is Options with defaults applied.
type resolved struct {
	Options
	subject string
	resync  []listen.Kind
}

func resolve(o Options) (resolved, error) {
	r := resolved{Options: o}
	if r.Prefix == "" {
		r.Prefix = DefaultPrefix
	}
	if !literalSubject(r.Prefix) {
		return r, fmt.Errorf("%w: Prefix %q is not a literal NATS subject", ErrInvalidOptions, o.Prefix)
	}
	r.subject = r.Prefix + "." + eventsToken
	switch {
	case r.MaxMessageBytes == 0:
		r.MaxMessageBytes = DefaultMaxMessageBytes
	case r.MaxMessageBytes < MinMaxMessageBytes:
		return r, fmt.Errorf("%w: MaxMessageBytes must be at least %d (or 0 for the default), got %d",
			ErrInvalidOptions, MinMaxMessageBytes, o.MaxMessageBytes)
	}
	if r.PendingMessages == 0 {
		r.PendingMessages = DefaultPendingMessages
	}
	if r.PendingBytes == 0 {
		r.PendingBytes = DefaultPendingBytes
	}
	if r.PendingBytes > 0 && r.PendingBytes < r.MaxMessageBytes {
		return r, fmt.Errorf("%w: PendingBytes (%d) must be at least MaxMessageBytes (%d)",
			ErrInvalidOptions, r.PendingBytes, r.MaxMessageBytes)
	}
	if r.ResyncInterval == 0 {
		r.ResyncInterval = DefaultResyncInterval
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

// literalSubject reports whether s is a NATS subject without wildcards.
func literalSubject(s string) bool {
	if s == "" || strings.ContainsAny(s, " \t\r\n") {
		return false
	}
	for tok := range strings.SplitSeq(s, ".") {
		if tok == "" || tok == "*" || tok == ">" {
			return false
		}
	}
	return true
}
