package natsbridge

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
)

const (
	// flushTimeout bounds New's wait for the server to confirm the
	// subscription.
	flushTimeout = 5 * time.Second
	// maxSeqDigits is the widest sequence number, counted in the size of
	// every envelope Publish checks.
	maxSeqDigits = 20
	// maxPeers bounds the sequence numbers remembered for gap detection;
	// past it the memory is reset (the next message of each peer starts
	// over).
	maxPeers = 4096
	// keepOut is the largest publish buffer kept between publications.
	keepOut = 64 << 10
	// retryWait is how soon the control goroutine tries again a reconnect
	// resync whose flush failed.
	retryWait = 50 * time.Millisecond
)

// Bridge joins a local hub.Hub to a NATS subject shared by every instance of
// one MCP server: Publish delivers an event to the local hub and to the
// subject, and the events other instances publish there are delivered to
// the local hub. See the package documentation for the delivery semantics
// and the goroutine contract.
//
// All methods are safe for concurrent use.
type Bridge struct {
	nc    *nats.Conn
	hub   *hub.Hub
	opts  resolved
	id    string
	head  []byte // {"v":1,"o":"<id>","n":
	owned bool   // Close closes nc

	// pubMu orders sequence numbers with the messages handed to nats.go, so
	// that they leave in sequence.
	pubMu sync.Mutex
	seq   uint64
	out   []byte
	// signer and outMsg (whose header it fills) are set when
	// Options.AuthKeys is; used under pubMu.
	signer *signer
	outMsg *nats.Msg
	// verifier is set when Options.AuthKeys is; delivery goroutine only.
	verifier *verifier

	sub       *nats.Subscription
	statusCh  chan nats.Status
	subStatus <-chan nats.SubStatus
	// wake asks the control goroutine to look at lossPending.
	wake        chan struct{}
	lossPending atomic.Bool
	stop        chan struct{}
	// ctx ends when Close begins; it bounds the control goroutine's flushes.
	ctx     context.Context
	cancel  context.CancelFunc
	ctlDone chan struct{}
	subDone chan struct{}

	closeOnce sync.Once
	closed    atomic.Bool
	closeErr  error

	// Delivery goroutine state: the last sequence number of each peer.
	peers map[string]peer
	// resetEpoch is raised by a reconnect resync: the peers' sequence
	// numbers from before it no longer tell of a gap (but, with
	// authentication, still of a replay).
	resetEpoch atomic.Uint64

	// Control goroutine state.
	lastReconnects uint64

	// slowMu guards slowSeen, the subscription's Dropped count already
	// counted.
	slowMu   sync.Mutex
	slowSeen int

	published, publishErrors, rejected, received, echoes   atomic.Uint64
	gaps, resyncs, syncs, panics, sanitised                atomic.Uint64
	dTooLarge, dMalformed, dVersion, dInvalid, dSlow, dPan atomic.Uint64
	dUnauth, dReplayed                                     atomic.Uint64
}

// peer is what a bridge remembers of another: the last sequence number
// accepted from it, and the reset epoch it was accepted in.
type peer struct {
	last, epoch uint64
}

// bodyPool recycles the buffers Publish encodes events into.
var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// New joins h to the subject Options.Prefix + ".events" on nc and returns
// the running bridge. It subscribes (with the pending limits of opts) and,
// when nc is connected, waits up to 5 s for the server to confirm the
// subscription, so that events published by other instances after New
// returns reach h. It starts the bridge's control goroutine. It watches
// nc's status through nc.StatusChanged: it installs no handler on nc and
// replaces none of yours. nc stays yours: Close does not close it.
//
// New fails with an error matching ErrInvalidOptions for invalid opts or a
// nil nc or h, and with nats.go's error when the subscription fails (a
// closed connection, for example).
func New(nc *nats.Conn, h *hub.Hub, opts Options) (*Bridge, error) {
	if nc == nil || h == nil {
		return nil, fmt.Errorf("%w: New needs a NATS connection and a hub", ErrInvalidOptions)
	}
	o, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	id, err := newID()
	if err != nil {
		return nil, err
	}
	b := &Bridge{
		nc:      nc,
		hub:     h,
		opts:    o,
		id:      id,
		head:    envelopeHead(id),
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		ctlDone: make(chan struct{}),
		subDone: make(chan struct{}),
		peers:   make(map[string]peer),
	}
	if len(o.AuthKeys) > 0 {
		if nc.IsConnected() && !nc.HeadersSupported() {
			return nil, fmt.Errorf("natsbridge: AuthKeys needs a NATS server with message headers: %w", nats.ErrHeadersNotSupported)
		}
		b.signer = newSigner(o.AuthKeys[0], o.subject)
		b.outMsg = &nats.Msg{Subject: o.subject, Header: nats.Header{AuthHeader: make([]string, 1)}}
		b.verifier = newVerifier(o.AuthKeys, o.subject)
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	// Watch the status first, then take the reconnect count: a reconnect
	// after this point is seen.
	b.statusCh = nc.StatusChanged(nats.CONNECTED, nats.RECONNECTING, nats.DISCONNECTED, nats.CLOSED)
	b.lastReconnects = nc.Stats().Reconnects
	sub, err := nc.Subscribe(o.subject, b.onMsg)
	if err != nil {
		nc.RemoveStatusListener(b.statusCh)
		b.cancel()
		return nil, fmt.Errorf("natsbridge: subscribing to %s: %w", o.subject, err)
	}
	sub.SetClosedHandler(func(string) { close(b.subDone) })
	if err := sub.SetPendingLimits(o.PendingMessages, o.PendingBytes); err != nil || !sub.IsValid() {
		// The connection closed under us: the delivery goroutine may have
		// exited before the closed handler was set, so do not wait for it.
		_ = sub.Unsubscribe()
		nc.RemoveStatusListener(b.statusCh)
		b.cancel()
		if err == nil {
			err = nats.ErrConnectionClosed
		}
		return nil, fmt.Errorf("natsbridge: subscribing to %s: %w", o.subject, err)
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
		return nil, fmt.Errorf("%w: Connect needs a hub", ErrInvalidOptions)
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

// newID returns a random instance id: 16 bytes, base64url (22 characters).
func newID() (string, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("natsbridge: instance id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(raw[:]), nil
}

// ID returns the bridge's random instance id, the origin of its envelopes.
func (b *Bridge) ID() string { return b.id }

// Subject returns the NATS subject the bridge publishes and listens on.
func (b *Bridge) Subject() string { return b.opts.subject }

// Conn returns the bridge's NATS connection.
func (b *Bridge) Conn() *nats.Conn { return b.nc }

// Hub returns the bridge's local hub.
func (b *Bridge) Hub() *hub.Hub { return b.hub }

// Publish publishes ev on every instance: first to the local hub, then, once,
// to the NATS subject, from which every other instance's bridge delivers it
// to its own hub. It returns the local hub's report.
//
// It fails, publishing nothing anywhere, for an invalid event (the
// error of ev.Validate, matching listen.ErrInvalidEvent), for an event that does not encode
// (ErrEncode: a Payload json.Marshal refuses), for one whose envelope is
// too large (ErrTooLarge), and after Close (ErrClosed).
//
// Once the event reached the local hub, Publish returns no error: a NATS
// failure (the connection is closed, or nats.go's reconnect buffer is full)
// is counted in Stats.PublishErrors and reported to Hooks.OnPublishOut,
// and the other instances resynchronise when they notice the gap (see the
// package documentation). While nats.go is reconnecting it buffers the
// message (up to nats.ReconnectBufSize) and sends it after the reconnect;
// that counts as published.
//
// Publications made one after another (ordered by happens-before) leave in
// that order and reach every instance in that order. Maps in ev are shared
// with the local listeners: do not modify them afterwards.
func (b *Bridge) Publish(ev listen.Event) (hub.Report, error) {
	if b.closed.Load() {
		return hub.Report{}, ErrClosed
	}
	if err := ev.Validate(); err != nil {
		b.rejected.Add(1)
		return hub.Report{}, err
	}
	bp := bodyPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= keepOut {
			bodyPool.Put(bp)
		}
	}()
	body, err := appendBody((*bp)[:0], ev)
	if err != nil {
		b.rejected.Add(1)
		return hub.Report{}, err
	}
	*bp = body
	size := len(b.head) + maxSeqDigits + len(body)
	if limit := b.limit(); size > limit {
		b.rejected.Add(1)
		return hub.Report{}, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, size, limit)
	}

	r, err := b.hub.Publish(ev)
	if err != nil { // not reached: ev is valid
		b.rejected.Add(1)
		return r, err
	}
	seq, n, err := b.send(body)
	if err != nil {
		b.publishErrors.Add(1)
	} else {
		b.published.Add(1)
	}
	b.opts.Hooks.OnPublishOut(PublishOutInfo{
		Report: r, EventKind: ev.Kind, ExtensionID: ev.ExtensionID,
		Bytes: n, Seq: seq, Err: err,
	})
	return r, nil
}

// limit is the largest envelope Publish sends: MaxMessageBytes, or less
// when the server's max_payload (which counts the signature header too) is
// smaller.
func (b *Bridge) limit() int {
	limit := b.opts.MaxMessageBytes
	mp := b.nc.MaxPayload()
	if b.signer != nil {
		mp -= int64(authOverhead)
	}
	if mp > 0 && mp < int64(limit) {
		limit = int(mp)
	}
	return limit
}

// send numbers body and hands it to nats.go. It returns the sequence number
// used (also when the publish fails: the gap tells the other instances) and
// the message size.
func (b *Bridge) send(body []byte) (uint64, int, error) {
	b.pubMu.Lock()
	defer b.pubMu.Unlock()
	b.seq++
	msg := append(b.out[:0], b.head...)
	msg = strconv.AppendUint(msg, b.seq, 10)
	msg = append(msg, body...)
	var err error
	if b.signer != nil {
		b.outMsg.Header[AuthHeader][0] = b.signer.sign(msg)
		b.outMsg.Data = msg
		err = b.nc.PublishMsg(b.outMsg) // copies msg
		b.outMsg.Data = nil
	} else {
		err = b.nc.Publish(b.opts.subject, msg) // copies msg
	}
	if cap(msg) <= keepOut {
		b.out = msg
	} else {
		b.out = nil
	}
	return b.seq, len(msg), err
}

// ToolsListChanged publishes listen.ToolsListChanged() (see Publish).
func (b *Bridge) ToolsListChanged() (hub.Report, error) {
	return b.Publish(listen.ToolsListChanged())
}

// PromptsListChanged publishes listen.PromptsListChanged() (see Publish).
func (b *Bridge) PromptsListChanged() (hub.Report, error) {
	return b.Publish(listen.PromptsListChanged())
}

// ResourcesListChanged publishes listen.ResourcesListChanged() (see
// Publish).
func (b *Bridge) ResourcesListChanged() (hub.Report, error) {
	return b.Publish(listen.ResourcesListChanged())
}

// ResourceUpdated publishes listen.ResourceUpdated(uri) (see Publish). It
// fails like Publish when uri is not an absolute URI.
func (b *Bridge) ResourceUpdated(uri string) (hub.Report, error) {
	return b.Publish(listen.ResourceUpdated(uri))
}

// Resync resynchronises the local listeners now, in the calling goroutine:
// it publishes the Options.Resync kinds (and the Options.ResyncURIs
// updates) to the local hub only. The bridge does this by itself after a
// reconnect and after lost messages; call it when your application knows
// of another reason. It fails only after Close (ErrClosed).
func (b *Bridge) Resync() error {
	if b.closed.Load() {
		return ErrClosed
	}
	b.resync(ResyncManual)
	return nil
}

// resync publishes the resync kinds and URIs to the local hub.
func (b *Bridge) resync(reason ResyncReason) {
	for _, k := range b.opts.resync {
		_, _ = b.hub.Publish(listen.Event{Kind: k})
	}
	n := 0
	if b.opts.ResyncURIs != nil {
		for _, u := range b.opts.ResyncURIs() {
			if _, err := b.hub.Publish(listen.ResourceUpdated(u)); err == nil {
				n++
			}
		}
	}
	b.resyncs.Add(1)
	b.opts.Hooks.OnResync(ResyncInfo{Reason: reason, Kinds: b.opts.resync, URIs: n})
}

// onMsg handles one message of the subject. nats.go calls it on the
// subscription's delivery goroutine, one message at a time, in arrival
// order.
func (b *Bridge) onMsg(m *nats.Msg) {
	handled := false // delivered to the hub, or counted as dropped
	defer func() {
		if v := recover(); v != nil {
			b.panics.Add(1)
			if !handled {
				b.dPan.Add(1)
				b.safeHook(func() {
					b.opts.Hooks.OnDrop(DropInfo{Reason: ReasonPanic, Count: 1, Bytes: len(m.Data),
						Err: fmt.Errorf("natsbridge: panic while delivering: %v", v)})
				})
			}
		}
	}()
	data := m.Data
	if len(data) > b.opts.MaxMessageBytes {
		b.dTooLarge.Add(1)
		handled = true
		b.opts.Hooks.OnDrop(DropInfo{Reason: ReasonTooLarge, Count: 1, Bytes: len(data)})
		return
	}
	if b.verifier != nil {
		if err := b.verifier.verify(m.Header, data); err != nil {
			b.dUnauth.Add(1)
			handled = true
			b.opts.Hooks.OnDrop(DropInfo{Reason: ReasonUnauthenticated, Count: 1, Bytes: len(data), Err: err})
			return
		}
	}
	if bytes.HasPrefix(data, b.head) {
		b.echoes.Add(1)
		return
	}
	d, err := decodeEnvelope(data, b.opts.DecodePayload)
	if err != nil {
		reason := ReasonMalformed
		switch {
		case errors.Is(err, errUnknownVersion):
			reason, _ = ReasonUnknownVersion, b.dVersion.Add(1)
		case errors.Is(err, errInvalidEvent):
			reason, _ = ReasonInvalidEvent, b.dInvalid.Add(1)
		default:
			b.dMalformed.Add(1)
		}
		handled = true
		b.opts.Hooks.OnDrop(DropInfo{Reason: reason, Count: 1, Bytes: len(data), Err: err})
		return
	}
	if d.origin == b.id {
		b.echoes.Add(1)
		return
	}
	last, gap, ok := b.track(d.origin, d.seq)
	if !ok {
		b.dReplayed.Add(1)
		handled = true
		b.opts.Hooks.OnDrop(DropInfo{Reason: ReasonReplayed, Count: 1, Bytes: len(data),
			Err: fmt.Errorf("natsbridge: sequence number %d of %s is not above %d, the last accepted", d.seq, d.origin, last)})
		return
	}
	if d.event.Kind == 0 { // a sync message
		if gap {
			b.requestLossResync()
		}
		return
	}
	// Counted first, so that a listener that saw the event sees it counted.
	b.received.Add(1)
	if d.stripped > 0 {
		b.sanitised.Add(1)
	}
	handled = true
	r, _ := b.hub.Publish(d.event) // no error: decodeEnvelope validated the event
	if gap {
		// Asked for after the event that revealed the gap reached the hub,
		// so that the listeners see the event before the resync.
		b.requestLossResync()
	}
	b.opts.Hooks.OnReceive(ReceiveInfo{
		Report: r, EventKind: d.event.Kind, ExtensionID: d.event.ExtensionID,
		Origin: d.origin, Seq: d.seq, Bytes: len(data), Stripped: d.stripped,
	})
}

// track records a peer's sequence number and reports (gap) when messages
// are missing: the caller then asks for a resync. With authentication it refuses (ok false, with
// the last sequence number accepted) a sequence number that is not above
// the peer's last: a bridge numbers its messages from 1 up and NATS does
// not duplicate them, so that is a replay, which must neither be delivered
// nor move the peer's number back (the next genuine message would look
// like a gap). Without authentication anyone can forge any number, so
// refusing would only let a forger silence a peer by sending a high one:
// the number is taken as it comes. Delivery goroutine only.
func (b *Bridge) track(origin string, seq uint64) (last uint64, gap, ok bool) {
	epoch := b.resetEpoch.Load()
	p, known := b.peers[origin]
	if known && b.verifier != nil && seq <= p.last {
		return p.last, false, false
	}
	if !known && len(b.peers) >= maxPeers {
		clear(b.peers)
	}
	b.peers[origin] = peer{last: seq, epoch: epoch}
	// After a reconnect resync the first number of each peer starts over:
	// what it published meanwhile is covered by the resync.
	if known && p.epoch == epoch && seq > p.last+1 {
		b.gaps.Add(seq - p.last - 1)
		gap = true
	}
	return seq, gap, true
}

func (b *Bridge) requestLossResync() {
	b.lossPending.Store(true)
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// control is the bridge's goroutine: it follows the connection's status,
// the subscription's slow consumer reports and loss requests, and
// resynchronises the local listeners.
func (b *Bridge) control() {
	defer close(b.ctlDone)
	statusCh, subStatus := b.statusCh, b.subStatus
	var timer *time.Timer
	var timerC <-chan time.Time
	var lastLoss time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	// arm makes the loop look again after d (unless it already will).
	arm := func(d time.Duration) {
		if timerC != nil {
			return
		}
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		timerC = timer.C
	}
	for {
		select {
		case <-b.stop:
			return
		case st, ok := <-statusCh:
			if !ok {
				statusCh = nil
				continue
			}
			info := ConnectionInfo{Status: st, Reconnects: b.nc.Stats().Reconnects}
			b.safeHook(func() { b.opts.Hooks.OnConnection(info) })
		case _, ok := <-subStatus:
			if !ok {
				subStatus = nil
				continue
			}
			if n := b.refreshSlow(); n > 0 {
				b.safeHook(func() { b.opts.Hooks.OnDrop(DropInfo{Reason: ReasonSlowConsumer, Count: n}) })
			}
			b.lossPending.Store(true)
		case <-b.wake:
		case <-timerC:
			timerC = nil
		}

		// Resynchronise only while connected: a reconnect resynchronises
		// anyway, and covers every loss before it.
		if b.nc.Status() != nats.CONNECTED {
			continue
		}
		if rc := b.nc.Stats().Reconnects; rc != b.lastReconnects {
			// nats.go re-sent the subscription before reporting CONNECTED,
			// but the server may not have it yet: a round trip makes sure
			// that whatever is published after the resync reaches us.
			if !b.flush() {
				if b.ctx.Err() != nil {
					return
				}
				// Broken again (the next reconnect will do) or slow: look
				// again shortly.
				arm(retryWait)
				continue
			}
			b.lastReconnects = rc
			b.lossPending.Store(false)
			b.resetEpoch.Add(1)
			b.sendSync()
			b.safeHook(func() { b.resync(ResyncReconnect) })
			continue
		}
		if timerC != nil || !b.lossPending.Load() {
			continue
		}
		if wait := b.opts.ResyncInterval - time.Since(lastLoss); b.opts.ResyncInterval > 0 && wait > 0 {
			arm(wait)
			continue
		}
		b.lossPending.Store(false)
		lastLoss = time.Now()
		b.safeHook(func() { b.resync(ResyncLoss) })
	}
}

// flush waits for a round trip to the server, bounded by flushTimeout and
// by Close.
func (b *Bridge) flush() bool {
	ctx, cancel := context.WithTimeout(b.ctx, flushTimeout)
	defer cancel()
	return b.nc.FlushWithContext(ctx) == nil
}

// sendSync announces the bridge's next sequence number after a reconnect,
// so that other instances that missed its earlier messages notice the gap.
func (b *Bridge) sendSync() {
	if _, _, err := b.send([]byte(`,"k":"` + wireSync + `"}`)); err == nil {
		b.syncs.Add(1)
	}
}

// refreshSlow counts the subscription's new slow consumer drops and
// returns how many there were.
func (b *Bridge) refreshSlow() int {
	b.slowMu.Lock()
	defer b.slowMu.Unlock()
	n, err := b.sub.Dropped()
	if err != nil || n <= b.slowSeen {
		return 0
	}
	d := n - b.slowSeen
	b.slowSeen = n
	b.dSlow.Add(uint64(d))
	return d
}

// safeHook runs f, recovering (and counting) a panic: a hook never takes
// down a bridge goroutine.
func (b *Bridge) safeHook(f func()) {
	defer func() {
		if recover() != nil {
			b.panics.Add(1)
		}
	}()
	f()
}

// Close stops the bridge: it stops the control goroutine, unsubscribes,
// waits until the delivery goroutine has delivered its last message, and
// closes the NATS connection if Connect made it (a connection given to New
// stays open). It does not touch the hub or its listeners. Publish and
// Resync fail with ErrClosed afterwards. Close is idempotent; every call
// returns the first call's result. Do not call it from a hook.
func (b *Bridge) Close() error {
	b.closeOnce.Do(func() {
		b.closed.Store(true)
		b.cancel()
		close(b.stop)
		<-b.ctlDone
		b.nc.RemoveStatusListener(b.statusCh)
		b.refreshSlow()
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

// Drops counts dropped messages by reason.
type Drops struct {
	TooLarge        uint64
	Malformed       uint64
	UnknownVersion  uint64
	InvalidEvent    uint64
	SlowConsumer    uint64
	Panic           uint64
	Unauthenticated uint64
	Replayed        uint64
}

// Total returns the sum of all drops.
func (d Drops) Total() uint64 {
	return d.TooLarge + d.Malformed + d.UnknownVersion + d.InvalidEvent + d.SlowConsumer + d.Panic +
		d.Unauthenticated + d.Replayed
}

// Stats is a snapshot of a bridge's counters, all cumulative since New.
type Stats struct {
	// Published counts events Publish handed to NATS (buffered by nats.go
	// while reconnecting included).
	Published uint64
	// PublishErrors counts events NATS refused: they reached the local hub
	// only.
	PublishErrors uint64
	// Rejected counts Publish calls that failed and published nothing
	// (invalid, not encodable, too large).
	Rejected uint64
	// Received counts events from other instances delivered to the local
	// hub.
	Received uint64
	// Sanitised counts the received events (among Received) from which
	// reserved _meta keys were removed (see ReservedMetaKey): delivered,
	// not dropped. A bridge never sends such keys by itself, so a non-zero
	// count means a publisher on the subject put them there: an
	// application publishing them through Publish, or a peer that is no
	// bridge.
	Sanitised uint64
	// Echoes counts the bridge's own messages seen on the subject and
	// ignored.
	Echoes uint64
	// Dropped counts dropped messages by reason.
	Dropped Drops
	// Gaps counts messages of other instances found missing by their
	// sequence numbers.
	Gaps uint64
	// Resyncs counts resynchronisations of the local listeners (reconnect,
	// loss and manual).
	Resyncs uint64
	// Syncs counts sync messages sent after reconnects.
	Syncs uint64
	// Panics counts panics recovered on the bridge's goroutines (in hooks,
	// or in the hub's hooks during delivery).
	Panics uint64
}

// Stats returns the bridge's counters.
func (b *Bridge) Stats() Stats {
	if !b.closed.Load() {
		b.refreshSlow()
	}
	return Stats{
		Published:     b.published.Load(),
		PublishErrors: b.publishErrors.Load(),
		Rejected:      b.rejected.Load(),
		Received:      b.received.Load(),
		Echoes:        b.echoes.Load(),
		Sanitised:     b.sanitised.Load(),
		Dropped: Drops{
			TooLarge:        b.dTooLarge.Load(),
			Malformed:       b.dMalformed.Load(),
			UnknownVersion:  b.dVersion.Load(),
			InvalidEvent:    b.dInvalid.Load(),
			SlowConsumer:    b.dSlow.Load(),
			Panic:           b.dPan.Load(),
			Unauthenticated: b.dUnauth.Load(),
			Replayed:        b.dReplayed.Load(),
		},
		Gaps:    b.gaps.Load(),
		Resyncs: b.resyncs.Load(),
		Syncs:   b.syncs.Load(),
		Panics:  b.panics.Load(),
	}
}
