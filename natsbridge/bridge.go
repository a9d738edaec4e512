package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/hub"
)

const (
	// flushTimeout bounds New's wait for the server to confirm the
	// subscription, and a reconnect's round trip.
	flushTimeout = 5 * time.Second
	// retryWait is how soon the control goroutine tries again a reconnect
	// resync whose flush failed.
	retryWait = 50 * time.Millisecond
)

// AuthHeader is the NATS message header that carries an envelope's
// signature (cluster.Message.Sig) when Options.AuthKeys is set: the
// HMAC-SHA256, under the signing key, of the subject, a newline ("\n") and
// the exact bytes of the message's data (the envelope), encoded as
// unpadded base64url (43 characters). Another program may publish on the
// subject by computing the same value.
const AuthHeader = "Mcplisten-Hmac-Sha256"

// authOverhead is what the signature header adds to a message's size as
// the NATS server counts it against its max_payload.
const authOverhead = len("NATS/1.0\r\n") + len(AuthHeader) + len(": ") + cluster.SignatureLen + len("\r\n\r\n")

// Bridge joins a local hub.Hub to a NATS subject shared by every instance of
// one MCP server: every event published on the hub is also published on
// the subject, and the events other instances publish there are delivered
// to the hub's listeners. See the package documentation.
//
// All methods are safe for concurrent use.
type Bridge struct {
	nc    *nats.Conn
	hub   *hub.Hub
	node  *cluster.Node
	opts  resolved
	owned bool // Close closes nc

	// outMu guards outMsg, the message whose header carries the signature
	// (the node calls send under its own publish lock; this one keeps the
	// reused message safe whatever the caller).
	outMu  sync.Mutex
	outMsg *nats.Msg

	sub       *nats.Subscription
	statusCh  chan nats.Status
	subStatus <-chan nats.SubStatus
	stop      chan struct{}
	// ctx ends when Close begins; it bounds the control goroutine's flushes.
	ctx     context.Context
	cancel  context.CancelFunc
	ctlDone chan struct{}
	subDone chan struct{}

	closeOnce sync.Once
	closeErr  error

	// Control goroutine state.
	lastReconnects uint64

	// slowMu guards slowSeen, the subscription's Dropped count already
	// reported.
	slowMu   sync.Mutex
	slowSeen int
}

// New joins h to the subject Options.Prefix + ".events" on nc and returns
// the running bridge. It joins the hub as its relay (from
// now on every Publish on h also goes to NATS), subscribes (with the
// pending limits of opts) and, when nc is connected, waits up to 5 s for
// the server to confirm the subscription, so that events published by
// other instances after New returns reach h. It starts the bridge's
// control goroutine. It watches nc's status through nc.StatusChanged: it
// installs no handler on nc and replaces none of yours. nc stays yours:
// Close does not close it.
//
// New fails with an error matching cluster.ErrInvalidOptions for invalid
// opts or a nil nc or h, with hub.ErrRelayJoined when another bridge has
// joined h, and with nats.go's error when the subscription fails (a closed
// connection, for example).
func New(nc *nats.Conn, h *hub.Hub, opts Options) (*Bridge, error) {
	if nc == nil || h == nil {
		return nil, fmt.Errorf("%w: New needs a NATS connection and a hub", cluster.ErrInvalidOptions)
	}
	o, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	if len(o.AuthKeys) > 0 && nc.IsConnected() && !nc.HeadersSupported() {
		return nil, fmt.Errorf("natsbridge: AuthKeys needs a NATS server with message headers: %w", nats.ErrHeadersNotSupported)
	}
	b := &Bridge{
		nc:      nc,
		hub:     h,
		opts:    o,
		stop:    make(chan struct{}),
		ctlDone: make(chan struct{}),
		subDone: make(chan struct{}),
		outMsg:  &nats.Msg{Subject: o.subject, Header: nats.Header{AuthHeader: make([]string, 1)}},
	}
	b.node, err = cluster.NewNode(h, cluster.Transport{
		Scope:       o.subject,
		Send:        b.send,
		Limit:       func() int { return int(nc.MaxPayload()) },
		SigOverhead: authOverhead,
	}, o.Options.Options)
	if err != nil {
		return nil, err
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	// Watch the status first, then take the reconnect count: a reconnect
	// after this point is seen.
	b.statusCh = nc.StatusChanged(nats.CONNECTED, nats.RECONNECTING, nats.DISCONNECTED, nats.CLOSED)
	b.lastReconnects = nc.Stats().Reconnects
	fail := func(err error) (*Bridge, error) {
		nc.RemoveStatusListener(b.statusCh)
		b.cancel()
		b.node.Close()
		return nil, fmt.Errorf("natsbridge: subscribing to %s: %w", o.subject, err)
	}
	sub, err := nc.Subscribe(o.subject, b.onMsg)
	if err != nil {
		return fail(err)
	}
	sub.SetClosedHandler(func(string) { close(b.subDone) })
	if err := sub.SetPendingLimits(o.PendingMessages, o.PendingBytes); err != nil || !sub.IsValid() {
		// The connection closed under us: the delivery goroutine may have
		// exited before the closed handler was set, so do not wait for it.
		_ = sub.Unsubscribe()
		if err == nil {
			err = nats.ErrConnectionClosed
		}
		return fail(err)
	}
	b.sub = sub
	b.subStatus = sub.StatusChanged(nats.SubscriptionSlowConsumer)
	if nc.IsConnected() {
		_ = nc.FlushTimeout(flushTimeout)
	}
	go b.control()
	return b, nil
}

// Connect dials NATS at url with natsOpts (nats.go's own options: servers,
// credentials, TLS, reconnect policy, handlers) and joins h to it like New.
// Two options come first, so that yours override them:
// nats.Name("mcplisten-natsbridge") and nats.MaxReconnects(-1) (a bridge
// should not give up on its broker after nats.go's default 60 attempts).
// The bridge owns the connection: Close closes it. Use Conn to reach it.
func Connect(url string, h *hub.Hub, opts Options, natsOpts ...nats.Option) (*Bridge, error) {
	if _, err := resolve(opts); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("%w: Connect needs a hub", cluster.ErrInvalidOptions)
	}
	all := make([]nats.Option, 0, len(natsOpts)+2)
	all = append(all, nats.Name("mcplisten-natsbridge"), nats.MaxReconnects(-1))
	all = append(all, natsOpts...)
	nc, err := nats.Connect(url, all...)
	if err != nil {
		return nil, fmt.Errorf("natsbridge: connecting to %s: %w", url, err)
	}
	b, err := New(nc, h, opts)
	if err != nil {
		nc.Close()
		return nil, err
	}
	b.owned = true
	return b, nil
}

// Conn returns the bridge's NATS connection.
func (b *Bridge) Conn() *nats.Conn { return b.nc }

// ID returns the bridge's random instance id, the origin of its envelopes
// (cluster.ReceiveInfo.Origin at the other instances). A new bridge has a
// new one.
func (b *Bridge) ID() string { return b.node.ID() }

// Resync resynchronises the local listeners now, in the calling goroutine
// (see cluster.Node.Resync). It fails only after Close
// (cluster.ErrClosed).
func (b *Bridge) Resync() error { return b.node.Resync() }

// send hands one envelope to nats.go, which copies it (and, while
// reconnecting, buffers it up to nats.ReconnectBufSize).
func (b *Bridge) send(m cluster.Message) error {
	if m.Sig == "" {
		return b.nc.Publish(b.opts.subject, m.Data)
	}
	b.outMu.Lock()
	defer b.outMu.Unlock()
	b.outMsg.Header[AuthHeader][0] = m.Sig
	b.outMsg.Data = m.Data
	err := b.nc.PublishMsg(b.outMsg)
	b.outMsg.Data = nil
	return err
}

// onMsg hands one message of the subject to the node. nats.go calls it on
// the subscription's delivery goroutine, one message at a time, in arrival
// order.
func (b *Bridge) onMsg(m *nats.Msg) {
	sig := ""
	switch vals := m.Header[AuthHeader]; len(vals) {
	case 0:
	case 1:
		sig = vals[0]
	default:
		sig = "!" // two signatures: refused as a bad one
	}
	b.node.Receive(cluster.Message{Data: m.Data, Sig: sig})
}

// control is the bridge's goroutine: it follows the connection's status
// and the subscription's slow consumer reports, and tells the node about a
// reconnect once a round trip shows the server has the re-sent
// subscription.
func (b *Bridge) control() {
	defer close(b.ctlDone)
	statusCh, subStatus := b.statusCh, b.subStatus
	var retry *time.Timer
	var retryC <-chan time.Time
	defer func() {
		if retry != nil {
			retry.Stop()
		}
	}()
	for {
		select {
		case <-b.stop:
			return
		case st, ok := <-statusCh:
			if !ok {
				statusCh = nil
				continue
			}
			b.node.Connection(cluster.ConnectionInfo{Status: connStatus(st), Reconnects: b.nc.Stats().Reconnects})
		case _, ok := <-subStatus:
			if !ok {
				subStatus = nil
				continue
			}
			b.reportSlow()
		case <-retryC:
			retryC = nil
		}
		if b.nc.Status() != nats.CONNECTED {
			continue
		}
		rc := b.nc.Stats().Reconnects
		if rc == b.lastReconnects || retryC != nil {
			continue
		}
		// nats.go re-sent the subscription before reporting CONNECTED, but
		// the server may not have it yet: a round trip makes sure that
		// whatever is published after the resync reaches us.
		if !b.flush() {
			if b.ctx.Err() != nil {
				return
			}
			// Broken again (the next reconnect will do) or slow: look again
			// shortly.
			if retry == nil {
				retry = time.NewTimer(retryWait)
			} else {
				retry.Reset(retryWait)
			}
			retryC = retry.C
			continue
		}
		b.lastReconnects = rc
		b.node.Reconnected()
	}
}

// connStatus maps nats.go's status to the bridge's.
func connStatus(st nats.Status) string {
	switch st {
	case nats.CONNECTED:
		return "connected"
	case nats.RECONNECTING:
		return "reconnecting"
	case nats.CLOSED:
		return "closed"
	}
	return "disconnected"
}

// flush waits for a round trip to the server, bounded by flushTimeout and
// by Close.
func (b *Bridge) flush() bool {
	ctx, cancel := context.WithTimeout(b.ctx, flushTimeout)
	defer cancel()
	return b.nc.FlushWithContext(ctx) == nil
}

// reportSlow tells the node how many messages the subscription dropped
// (a slow consumer) since the last call.
func (b *Bridge) reportSlow() {
	b.node.Dropped(cluster.DropInfo{Reason: "slow_consumer", Count: b.refreshSlow()})
}

// refreshSlow returns how many messages the subscription dropped since the
// last call.
func (b *Bridge) refreshSlow() int {
	b.slowMu.Lock()
	defer b.slowMu.Unlock()
	n, err := b.sub.Dropped()
	if err != nil || n <= b.slowSeen {
		return 0
	}
	d := n - b.slowSeen
	b.slowSeen = n
	return d
}

// Close stops the bridge: it leaves the hub (later publications stay
// local), stops the control goroutine, unsubscribes, waits until the
// delivery goroutine has delivered its last message, and closes the NATS
// connection if Connect made it (a connection given to New stays open). It
// does not touch the hub's listeners. Resync fails with cluster.ErrClosed
// afterwards. Close is idempotent; every call returns the first call's
// result. Do not call it from a hook.
func (b *Bridge) Close() error {
	b.closeOnce.Do(func() {
		b.node.Close()
		b.cancel()
		close(b.stop)
		<-b.ctlDone
		b.nc.RemoveStatusListener(b.statusCh)
		b.reportSlow()
		err := b.sub.Unsubscribe()
		if err != nil && !errors.Is(err, nats.ErrConnectionClosed) && !errors.Is(err, nats.ErrBadSubscription) {
			b.closeErr = fmt.Errorf("natsbridge: unsubscribing: %w", err)
		}
		<-b.subDone
		if b.owned {
			b.nc.Close()
		}
	})
	return b.closeErr
}

// Stats returns the bridge's counters (see cluster.Stats; SlowConsumer
// counts nats.go's drops).
func (b *Bridge) Stats() cluster.Stats {
	b.reportSlow()
	return b.node.Stats()
}
