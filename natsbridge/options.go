package natsbridge

import (
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/mcplisten/listen/cluster"
)

// Defaults of Options. A zero field of Options means its default.
const (
	// defaultPrefix is the default subject prefix: events travel on
	// "mcp.listen.events".
	defaultPrefix = "mcp.listen"
	// eventsToken is the last token of the bridge's subject.
	eventsToken = "events"
)

// Options configure a Bridge. The zero Options is valid: subject
// "mcp.listen.events", nats.go's pending limits, and the defaults of
// cluster.Options (1 MiB messages, resync of the three list changes, no
// authentication, no logging, no hooks).
type Options struct {
	// Prefix is the subject prefix: the bridge publishes and subscribes on
	// Prefix + ".events". Give each independent MCP server (each set of
	// instances that share one state) its own prefix when several use one
	// NATS system. It must be a literal NATS subject: dot-separated non-empty
	// tokens, no whitespace, no wildcards ("*", ">"). Empty means
	// "mcp.listen".
	Prefix string

	// PendingMessages and PendingBytes are the pending limits of the
	// bridge's NATS subscription (nats.Subscription.SetPendingLimits):
	// messages received but not yet delivered to the hub. Past them, nats.go
	// drops messages (a slow consumer); the bridge counts them
	// (cluster.Drops.SlowConsumer) and resynchronises. Zero means nats.go's
	// defaults (nats.DefaultSubPendingMsgsLimit, 500,000 messages, and
	// nats.DefaultSubPendingBytesLimit, 64 MiB); a negative value means no
	// limit. PendingBytes, when limited, must be at least MaxMessageBytes.
	PendingMessages int
	PendingBytes    int

	// Options are the broker-neutral options: message size, resync,
	// AuthKeys (signed envelopes, in the NATS header AuthHeader), replay
	// window, logger and hooks. The server's max_payload also bounds what
	// the bridge publishes.
	cluster.Options
}

// resolved is Options with defaults applied.
type resolved struct {
	Options
	subject string
}

func resolve(o Options) (resolved, error) {
	r := resolved{Options: o}
	if err := o.Options.Validate(); err != nil {
		return r, err
	}
	if r.Prefix == "" {
		r.Prefix = defaultPrefix
	}
	if !literalSubject(r.Prefix) {
		return r, fmt.Errorf("%w: Prefix %q is not a literal NATS subject", cluster.ErrInvalidOptions, o.Prefix)
	}
	r.subject = r.Prefix + "." + eventsToken
	if r.PendingMessages == 0 {
		r.PendingMessages = nats.DefaultSubPendingMsgsLimit
	}
	if r.PendingBytes == 0 {
		r.PendingBytes = nats.DefaultSubPendingBytesLimit
	}
	maxMsg := r.MaxMessageBytes
	if maxMsg == 0 {
		maxMsg = cluster.DefaultMaxMessageBytes
	}
	if r.PendingBytes > 0 && r.PendingBytes < maxMsg {
		return r, fmt.Errorf("%w: PendingBytes (%d) must be at least MaxMessageBytes (%d)",
			cluster.ErrInvalidOptions, r.PendingBytes, maxMsg)
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
