package cluster

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/internal/hubrelay"
)

const (
	// maxStampBytes is the widest sequence number and timestamp, counted
	// in the size of every envelope the node checks: 20 digits, `,"t":`,
	// 20 digits.
	maxStampBytes = 20 + len(`,"t":`) + 20
	// maxPeers bounds the origins remembered for gap and replay detection;
	// past it the memory is reset (see Node.Receive).
	maxPeers = 4096
	// keepOut is the largest publish buffer kept between publications.
	keepOut = 64 << 10
)

// Message is one message as it travels through a broker: an envelope (one
// JSON object, see the package documentation) and, with Options.AuthKeys,
// its signature.
type Message struct {
	// Data is the envelope.
	Data []byte
	// Sig is the signature: HMAC-SHA256 under a shared key of the
	// Transport's Scope, a newline and Data, in unpadded base64url
	// (SignatureLen characters). Empty for an unsigned message.
	Sig string
}

// Transport is what a bridge gives its Node: how to hand messages to the
// broker.
type Transport struct {
	// Scope names the channel the messages travel on (a NATS subject, a
	// Redis stream key). Signatures cover it, so that a message signed for
	// one scope is refused on another.
	Scope string
	// Send hands one message to the broker's client. The node calls it
	// under its publish lock, in sequence order, from the goroutine of the
	// hub's Publish: it must not wait for the broker (buffer instead). An
	// error counts the message as lost (Stats.PublishErrors); the other
	// instances find the gap. m.Data is reused once Send returns: copy it.
	Send func(m Message) error
	// Limit, if set, returns the largest message the broker takes now, in
	// bytes, or 0 for no limit of its own; the node refuses larger
	// envelopes (with SigOverhead taken off when it signs).
	Limit func() int
	// SigOverhead is what a signature (SignatureLen characters and its
	// framing) adds to a message's size as the broker counts it against
	// Limit.
	SigOverhead int
}

// Node is one instance's end of a cluster, for a bridge over a broker to
// build on: it joins the instance's hub as its relay, turns
// each event published there into a numbered, stamped and (with AuthKeys)
// signed envelope that it hands to Transport.Send, and delivers the
// envelopes the bridge receives (Receive) to the hub's listeners, after
// checking them. See the package documentation for the delivery
// semantics.
type Node struct {
	hub   *hub.Hub
	relay relay // what joined the hub
	t     Transport
	opts  resolved
	id    string
	head  []byte // {"v":1,"o":"<id>","n":

	// pubMu orders sequence numbers and stamps with the messages handed to
	// Send, so that they leave in sequence.
	pubMu     sync.Mutex
	seq       uint64
	lastStamp int64
	out       []byte
	signer    *signer

	// Receive state (one goroutine at a time): the verifier, what the node
	// remembers of each origin, and floor, the Unix millisecond before
	// which an origin it does not remember may not have stamped its
	// message (the node's start, or the last reset of peers).
	verifier *verifier
	peers    map[string]peer
	floor    int64
	// resetEpoch is raised by Reconnected: the peers' sequence numbers from
	// before it no longer tell of a gap (but, with authentication, still of
	// a replay).
	resetEpoch atomic.Uint64

	// Loss resynchronisation: at most one per ResyncInterval; a later one
	// waits on lossTimer (whose callback lossWG counts).
	lossMu    sync.Mutex
	lossTimer *time.Timer
	lastLoss  time.Time
	lossWG    sync.WaitGroup

	closeOnce sync.Once
	closed    atomic.Bool

	published, publishErrors, rejected, received, echoes   atomic.Uint64
	gaps, resyncs, syncs, panics, sanitised                atomic.Uint64
	dTooLarge, dMalformed, dVersion, dInvalid, dSlow, dPan atomic.Uint64
	dUnauth, dReplayed, dStale, dBytes                     atomic.Uint64
}

// peer is what a node remembers of another: the last sequence number
// accepted from it, and the reset epoch it was accepted in.
type peer struct {
	last, epoch uint64
}

// bodyPool recycles the buffers Relay encodes events into.
var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// NewNode returns a node for h over t and joins it to h as its relay:
// from then on every event published on h is also handed
// to t.Send. It fails with an error matching ErrInvalidOptions for invalid
// opts, a nil h, a t without Scope or Send or an Options.Quota another
// node holds, and with hub.ErrRelayJoined when another relay has joined
// h. The node starts no goroutine, except the reporter of its
// Options.Quota (see Quota); Close leaves the hub and ends it.
func NewNode(h *hub.Hub, t Transport, opts Options) (*Node, error) {
	if h == nil || t.Scope == "" || t.Send == nil {
		return nil, fmt.Errorf("%w: NewNode needs a hub, a scope and a Send function", ErrInvalidOptions)
	}
	o, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	id, err := newID()
	if err != nil {
		return nil, err
	}
	n := &Node{
		hub:   h,
		t:     t,
		opts:  o,
		id:    id,
		head:  envelopeHead(id),
		peers: make(map[string]peer),
		floor: time.Now().UnixMilli(),
	}
	if len(o.AuthKeys) > 0 {
		n.signer = newSigner(o.AuthKeys[0], t.Scope)
		n.verifier = newVerifier(o.AuthKeys, t.Scope)
	}
	if q := o.Quota; q != nil {
		if err := q.attach(n); err != nil {
			return nil, err
		}
	}
	n.relay = relay{n}
	if err := hubrelay.Join(h, n.relay); err != nil {
		if q := o.Quota; q != nil {
			q.detach(n)
		}
		return nil, err
	}
	return n, nil
}

// relay is what a node joins its hub with: the hubrelay.Relay that hands each
// event published there to Node.relayEvent.
type relay struct{ n *Node }

func (r relay) Relay(ev listen.Event) error { return r.n.relayEvent(ev) }

// newID returns a random instance id: 16 bytes, base64url (22 characters).
func newID() (string, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("cluster: instance id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(raw[:]), nil
}

// ID returns the node's random instance id, the origin of its envelopes.
// A new node (a restarted instance) has a new one.
func (n *Node) ID() string { return n.id }

// relayEvent is the node's hubrelay.Relay; the hub calls it from Publish with
// each valid event, before its local fan-out. It encodes ev, numbers,
// stamps and signs the envelope and hands it to Transport.Send. It refuses
// (and the hub publishes nothing) an event that does not encode
// (ErrEncode: a Payload json.Marshal refuses) or whose envelope is too
// large (ErrTooLarge). A failure of Send is counted (Stats.PublishErrors),
// not returned: the local listeners are still served. After Close it does
// nothing.
func (n *Node) relayEvent(ev listen.Event) error {
	if n.closed.Load() {
		return nil
	}
	bp := bodyPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= keepOut {
			bodyPool.Put(bp)
		}
	}()
	body, err := appendBody((*bp)[:0], ev)
	if err != nil {
		n.rejected.Add(1)
		return err
	}
	*bp = body
	size := len(n.head) + maxStampBytes + len(body)
	if limit := n.limit(); size > limit {
		n.rejected.Add(1)
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, size, limit)
	}
	seq, sz, err := n.send(body)
	if err != nil {
		n.publishErrors.Add(1)
	} else {
		n.published.Add(1)
	}
	n.opts.hooks.publishOut(PublishOutInfo{
		EventKind: ev.Kind, ExtensionID: ev.ExtensionID, Bytes: sz, Seq: seq, Err: err,
	})
	return nil
}

// limit is the largest envelope Relay sends: MaxMessageBytes, or less when
// the broker's limit (less the signature) is smaller.
func (n *Node) limit() int {
	limit := n.opts.MaxMessageBytes
	if n.t.Limit == nil {
		return limit
	}
	mp := n.t.Limit()
	if n.signer != nil {
		mp -= n.t.SigOverhead
	}
	if mp > 0 && mp < limit {
		limit = mp
	}
	return limit
}

// send numbers and stamps body and hands it to the transport. It returns
// the sequence number used (also when Send fails: the gap tells the other
// instances) and the message size.
func (n *Node) send(body []byte) (uint64, int, error) {
	n.pubMu.Lock()
	defer n.pubMu.Unlock()
	n.seq++
	// Stamps never go back, even if the wall clock does: a receiver may
	// then rely on an origin's stamps growing with its numbers.
	ms := max(time.Now().UnixMilli(), n.lastStamp)
	n.lastStamp = ms
	msg := append(n.out[:0], n.head...)
	msg = appendStamp(msg, n.seq, ms)
	msg = append(msg, body...)
	m := Message{Data: msg}
	if n.signer != nil {
		m.Sig = n.signer.sign(msg)
	}
	err := n.t.Send(m)
	if cap(msg) <= keepOut {
		n.out = msg
	} else {
		n.out = nil
	}
	return n.seq, len(msg), err
}

// syncBody is the body of a sync message.
var syncBody = []byte(`,"k":"` + wireSync + `"}`)

// SendSync sends a sync message: it announces the node's next sequence
// number, so that instances that missed its earlier messages notice the
// gap. A bridge sends one after it could not hand messages to its broker
// for a while (Reconnected does).
func (n *Node) SendSync() {
	if _, _, err := n.send(syncBody); err == nil {
		n.syncs.Add(1)
	}
}

// Receive handles one message from the broker: it checks its size and
// (with AuthKeys) its signature before decoding it, ignores the node's own
// messages, drops what is malformed, invalid, stale or replayed, removes
// the reserved _meta keys and delivers the event to the hub's local
// listeners only (not relayed again). It resynchronises the listeners
// when the message reveals lost ones. Every drop is counted and reported to
// OnDrop; a panic (in a hook) is recovered. Call it from one goroutine at
// a time, in the order the broker delivers. m.Data may be reused once it
// returns.
func (n *Node) Receive(m Message) {
	handled := false // delivered to the hub, or counted as dropped
	v := core.SafeCall(func() { n.receive(m, &handled) })
	if v == nil {
		return
	}
	n.panics.Add(1)
	if !handled {
		n.dPan.Add(1)
		n.dBytes.Add(uint64(len(m.Data)))
		n.safeHook(func() {
			n.opts.hooks.drop(DropInfo{Reason: reasonPanic, Count: 1, Bytes: len(m.Data),
				Err: fmt.Errorf("cluster: panic while delivering: %v", v.Value)})
		})
	}
}

// receive is Receive; *handled is set once the message was delivered to
// the hub or counted as dropped.
func (n *Node) receive(m Message, handled *bool) {
	data := m.Data
	drop := func(c *atomic.Uint64, reason string, err error) {
		c.Add(1)
		n.dBytes.Add(uint64(len(data)))
		*handled = true
		n.opts.hooks.drop(DropInfo{Reason: reason, Count: 1, Bytes: len(data), Err: err})
	}
	if len(data) > n.opts.MaxMessageBytes {
		drop(&n.dTooLarge, reasonTooLarge, nil)
		return
	}
	if n.verifier != nil {
		if err := n.verifier.verify(m.Sig, data); err != nil {
			drop(&n.dUnauth, reasonUnauthenticated, err)
			return
		}
	}
	if bytes.HasPrefix(data, n.head) {
		n.echoes.Add(1)
		return
	}
	d, err := decodeEnvelope(data, n.opts.DecodePayload)
	switch {
	case errors.Is(err, errUnknownVersion):
		drop(&n.dVersion, reasonUnknownVersion, err)
		return
	case errors.Is(err, errInvalidEvent):
		drop(&n.dInvalid, reasonInvalidEvent, err)
		return
	case err != nil:
		drop(&n.dMalformed, reasonMalformed, err)
		return
	}
	if d.origin == n.id {
		n.echoes.Add(1)
		return
	}
	if n.verifier != nil {
		if err := n.fresh(d.stamp); err != nil {
			drop(&n.dStale, reasonStale, err)
			return
		}
	}
	last, gap, v := n.track(d.origin, d.seq, d.stamp)
	switch v {
	case replayed:
		drop(&n.dReplayed, reasonReplayed, fmt.Errorf(
			"cluster: sequence number %d of %s is not above %d, the last accepted", d.seq, d.origin, last))
		return
	case heldBack:
		drop(&n.dReplayed, reasonReplayed, fmt.Errorf(
			"cluster: %s stamped its message before this node started", d.origin))
		// It may be a genuine message of an instance whose clock is
		// behind: resynchronise rather than lose it silently.
		n.requestLoss()
		return
	}
	if d.quota != nil {
		if gap {
			n.requestLoss()
		}
		if q := n.opts.Quota; q != nil {
			q.receive(n, d.origin, d.quota)
		}
		return
	}
	if d.event.Kind == 0 { // a sync message
		if gap {
			n.requestLoss()
		}
		return
	}
	// Counted first, so that a listener that saw the event sees it counted.
	n.received.Add(1)
	if d.stripped > 0 {
		n.sanitised.Add(1)
	}
	*handled = true
	rep, _ := hubrelay.PublishLocal(n.hub, d.event) // no error: decodeEnvelope validated the event
	r, _ := rep.(hub.Report)
	if gap {
		// Asked for after the event that revealed the gap reached the hub,
		// so that the listeners see the event before the resync.
		n.requestLoss()
	}
	n.opts.hooks.receive(ReceiveInfo{
		Report: r, EventKind: d.event.Kind, ExtensionID: d.event.ExtensionID,
		Origin: d.origin, Seq: d.seq, Bytes: len(data), Stripped: d.stripped,
	})
}

// fresh checks a signed message's stamp against the node's clock.
func (n *Node) fresh(stamp int64) error {
	if stamp <= 0 {
		return errors.New("cluster: no timestamp")
	}
	now, f := time.Now().UnixMilli(), n.opts.Freshness.Milliseconds()
	if stamp < now-f || stamp > now+f {
		return fmt.Errorf("cluster: stamped %v, more than %v from this node's clock",
			time.UnixMilli(stamp).UTC().Format(time.RFC3339Nano), n.opts.Freshness)
	}
	return nil
}

// verdict is what track decided about a message.
type verdict uint8

const (
	accepted verdict = iota
	replayed         // a number at or below its origin's last
	heldBack         // stamped before floor
)

// track records an origin's sequence number and reports (gap) when
// messages are missing: the caller then asks for a resync. With
// authentication it holds back (heldBack) a message stamped before floor:
// it was published before this node started (or forgot its peers), so it
// may be a copy captured then, and nothing this node remembers can tell;
// stamps grow with an origin's numbers, so every later copy is held back
// too. And it refuses a number that is not above the origin's last
// (replayed): a node numbers its messages from 1 up and a broker does not
// duplicate them, so that is a copy, which must neither be delivered nor
// move the origin's number back (the next genuine message would look like
// a gap). Without authentication anyone can forge any number and stamp,
// so refusing would only let a forger silence a peer by sending a high
// one: numbers are taken as they come. Receive's goroutine only.
func (n *Node) track(origin string, seq uint64, stamp int64) (last uint64, gap bool, v verdict) {
	if n.verifier != nil && stamp < n.floor {
		return 0, false, heldBack
	}
	epoch := n.resetEpoch.Load()
	p, known := n.peers[origin]
	if known && n.verifier != nil && seq <= p.last {
		return p.last, false, replayed
	}
	if !known && len(n.peers) >= maxPeers {
		// Forget every origin; from now on a message must be stamped after
		// this moment.
		clear(n.peers)
		n.floor = time.Now().UnixMilli()
		if n.verifier != nil && stamp < n.floor {
			return 0, false, heldBack
		}
	}
	n.peers[origin] = peer{last: seq, epoch: epoch}
	// After a reconnect resync the first number of each peer starts over:
	// what it published meanwhile is covered by the resync.
	if known && p.epoch == epoch && seq > p.last+1 {
		n.gaps.Add(seq - p.last - 1)
		gap = true
	}
	return seq, gap, accepted
}

// requestLoss resynchronises the listeners after a loss: at once, in the
// calling goroutine, unless the last loss resync is less than
// ResyncInterval old; then once at the end of the interval, on a timer,
// for every loss until then.
func (n *Node) requestLoss() {
	n.lossMu.Lock()
	if n.closed.Load() || n.lossTimer != nil {
		n.lossMu.Unlock()
		return
	}
	now := time.Now()
	if iv := n.opts.ResyncInterval; iv > 0 && !n.lastLoss.IsZero() {
		if wait := iv - now.Sub(n.lastLoss); wait > 0 {
			n.lossWG.Add(1)
			n.lossTimer = time.AfterFunc(wait, n.fireLoss)
			n.lossMu.Unlock()
			return
		}
	}
	n.lastLoss = now
	n.lossMu.Unlock()
	n.safeHook(func() { n.resync(resyncLoss) })
}

// fireLoss runs a delayed loss resync, on the timer's goroutine (Close
// waits for it through lossWG).
func (n *Node) fireLoss() {
	defer n.lossWG.Done()
	n.lossMu.Lock()
	n.lossTimer = nil
	closed := n.closed.Load()
	n.lastLoss = time.Now()
	n.lossMu.Unlock()
	if !closed {
		n.safeHook(func() { n.resync(resyncLoss) })
	}
}

// cancelLoss stops a delayed loss resync (a reconnect resync covers it).
func (n *Node) cancelLoss() {
	n.lossMu.Lock()
	defer n.lossMu.Unlock()
	if n.lossTimer != nil && n.lossTimer.Stop() {
		n.lossTimer = nil
		n.lossWG.Done()
	}
}

// Reconnected tells the node that its bridge is connected again to the
// broker after losing it, and that whatever is published from now on
// reaches it: the node sends a sync message (SendSync), stops counting
// gaps against the numbers seen before (what was published meanwhile is
// covered), and resynchronises its listeners ("reconnect"), in the
// calling goroutine. With Options.Quota it also has the quota report all
// its counts and ask the other instances for theirs. A pending loss resync is folded into it.
func (n *Node) Reconnected() {
	n.cancelLoss()
	n.resetEpoch.Add(1)
	n.SendSync()
	if q := n.opts.Quota; q != nil {
		q.reconnected(n)
	}
	n.safeHook(func() { n.resync(resyncReconnect) })
}

// Dropped tells the node that its bridge, or the broker's client, dropped
// messages before Receive saw them: i.Count messages (nothing when not
// positive) of i.Bytes bytes in all, for i.Reason. They are counted
// (Stats.Dropped under the reason, Stats.DroppedBytes) and reported to
// OnDrop (a panic there is recovered). Two reasons are a bridge's:
// "slow_consumer", messages the broker's client could not deliver in
// time (their size unknown), after which the node resynchronises the
// listeners as after a gap; and "too_large", a message larger than
// MaxMessageBytes the bridge skipped unread (as redisbridge does), to be
// reported from Receive's goroutine, in the order of the broker's
// messages. A reason the package does not define is ignored.
func (n *Node) Dropped(i DropInfo) {
	c := n.dropCounter(i.Reason)
	if i.Count <= 0 || c == nil {
		return
	}
	c.Add(uint64(i.Count))
	n.dBytes.Add(uint64(max(i.Bytes, 0)))
	n.safeHook(func() { n.opts.hooks.drop(i) })
	if i.Reason == reasonSlowConsumer {
		n.requestLoss()
	}
}

// dropCounter is the counter of a drop reason, nil for an unknown one.
func (n *Node) dropCounter(r string) *atomic.Uint64 {
	switch r {
	case reasonTooLarge:
		return &n.dTooLarge
	case reasonMalformed:
		return &n.dMalformed
	case reasonUnknownVersion:
		return &n.dVersion
	case reasonInvalidEvent:
		return &n.dInvalid
	case reasonSlowConsumer:
		return &n.dSlow
	case reasonPanic:
		return &n.dPan
	case reasonUnauthenticated:
		return &n.dUnauth
	case reasonReplayed:
		return &n.dReplayed
	case reasonStale:
		return &n.dStale
	}
	return nil
}

// SendFailed tells the node that count messages Send had taken were lost
// afterwards (a bridge that sends asynchronously and whose broker failed):
// they are counted in Stats.PublishErrors. The other instances find the
// gap.
func (n *Node) SendFailed(count int) {
	if count > 0 {
		n.publishErrors.Add(uint64(count))
	}
}

// Connection reports a change of the bridge's connection to OnConnection
// (a panic there is recovered and counted). With Options.Quota, a status
// other than "connected" puts the quota in fallback (local shares) until the
// next "connected".
func (n *Node) Connection(info ConnectionInfo) {
	if q := n.opts.Quota; q != nil {
		q.connection(n, info.Status)
	}
	n.safeHook(func() { n.opts.hooks.connection(info) })
}

// Resync resynchronises the local listeners now, in the calling goroutine:
// it publishes the Options.Resync kinds (and the Options.ResyncURIs
// updates) to the local hub only. A node does this by itself after a
// reconnect and after lost messages; call it when your application knows
// of another reason. It fails only after Close (ErrClosed).
func (n *Node) Resync() error {
	if n.closed.Load() {
		return ErrClosed
	}
	n.resync(resyncManual)
	return nil
}

// resync publishes the resync kinds and URIs to the local hub.
func (n *Node) resync(reason string) {
	for _, k := range n.opts.resync {
		_, _ = hubrelay.PublishLocal(n.hub, listen.Event{Kind: k})
	}
	count := 0
	if n.opts.ResyncURIs != nil {
		for _, u := range n.opts.ResyncURIs() {
			if _, err := hubrelay.PublishLocal(n.hub, listen.ResourceUpdated(u)); err == nil {
				count++
			}
		}
	}
	n.resyncs.Add(1)
	n.opts.hooks.resync(ResyncInfo{Reason: reason, Kinds: n.opts.resync, URIs: count})
}

// safeHook runs f, recovering (and counting) a panic: a hook never takes
// down a bridge goroutine.
func (n *Node) safeHook(f func()) {
	if core.SafeCall(f) != nil {
		n.panics.Add(1)
	}
}

// Close leaves the hub (later publications stay local), stops a pending
// loss resync and waits for one that is running. With Options.Quota it
// first stops the quota's reporter and tells the other instances that this
// one leaves; the quota then holds keys to their local shares. It does not touch the
// hub's listeners. Receive still delivers afterwards; Resync fails with
// ErrClosed. Close is idempotent.
func (n *Node) Close() {
	n.closeOnce.Do(func() {
		if q := n.opts.Quota; q != nil {
			q.detach(n)
		}
		hubrelay.Leave(n.hub, n.relay)
		n.lossMu.Lock()
		n.closed.Store(true)
		if n.lossTimer != nil && n.lossTimer.Stop() {
			n.lossWG.Done()
		}
		n.lossTimer = nil
		n.lossMu.Unlock()
		n.lossWG.Wait()
	})
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
	Stale           uint64
}

// Total returns the sum of all drops.
func (d Drops) Total() uint64 {
	return d.TooLarge + d.Malformed + d.UnknownVersion + d.InvalidEvent + d.SlowConsumer + d.Panic +
		d.Unauthenticated + d.Replayed + d.Stale
}

// Stats is a snapshot of a node's counters, all cumulative since NewNode.
type Stats struct {
	// Published counts events handed to the broker's client (which may
	// have buffered them while reconnecting).
	Published uint64
	// PublishErrors counts events the broker's client refused, or lost
	// after taking them (Node.SendFailed): they reached the local hub
	// only.
	PublishErrors uint64
	// Rejected counts publications the node refused, so that the hub
	// published nothing (not encodable, too large).
	Rejected uint64
	// Received counts events from other instances delivered to the local
	// hub.
	Received uint64
	// Sanitised counts the received events (among Received) from which
	// reserved _meta keys were removed (see the package documentation,
	// Trust): delivered, not dropped. A node never sends such keys by
	// itself, so a non-zero count means a publisher put them there: an
	// application publishing them, or a peer that is no bridge.
	Sanitised uint64
	// Echoes counts the node's own messages seen on the broker and
	// ignored.
	Echoes uint64
	// Dropped counts dropped messages by reason.
	Dropped Drops
	// DroppedBytes counts the bytes of the dropped messages (those of a
	// slow consumer excepted: the broker's client does not tell them).
	DroppedBytes uint64
	// Gaps counts messages of other instances found missing by their
	// sequence numbers.
	Gaps uint64
	// Resyncs counts resynchronisations of the local listeners (reconnect,
	// loss and manual).
	Resyncs uint64
	// Syncs counts sync messages sent.
	Syncs uint64
	// Panics counts panics recovered on the bridge's goroutines (in hooks,
	// or in the hub's hooks during delivery).
	Panics uint64
}

// Stats returns the node's counters.
func (n *Node) Stats() Stats {
	return Stats{
		Published:     n.published.Load(),
		PublishErrors: n.publishErrors.Load(),
		Rejected:      n.rejected.Load(),
		Received:      n.received.Load(),
		Echoes:        n.echoes.Load(),
		Sanitised:     n.sanitised.Load(),
		Dropped: Drops{
			TooLarge:        n.dTooLarge.Load(),
			Malformed:       n.dMalformed.Load(),
			UnknownVersion:  n.dVersion.Load(),
			InvalidEvent:    n.dInvalid.Load(),
			SlowConsumer:    n.dSlow.Load(),
			Panic:           n.dPan.Load(),
			Unauthenticated: n.dUnauth.Load(),
			Replayed:        n.dReplayed.Load(),
			Stale:           n.dStale.Load(),
		},
		DroppedBytes: n.dBytes.Load(),
		Gaps:         n.gaps.Load(),
		Resyncs:      n.resyncs.Load(),
		Syncs:        n.syncs.Load(),
		Panics:       n.panics.Load(),
	}
}
