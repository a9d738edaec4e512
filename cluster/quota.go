package cluster

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
)

// Defaults and bounds of a Quota.
const (
	defaultQuotaInterval = 10 * time.Millisecond
	defaultQuotaTTL      = 3 * time.Second
	defaultTopTenants    = 20
	// maxQuotaPeers bounds the instances a quota keeps counts of; the
	// reports of more are ignored.
	maxQuotaPeers = 1024
	// maxRemoteKeys bounds the counts kept of all the other instances
	// together (one per tenant or principal and instance); a report's new
	// keys past it are ignored (QuotaStats.IgnoredKeys).
	maxRemoteKeys = 1 << 17
	// maxQuotaCount bounds a count in a report.
	maxQuotaCount = 1 << 30
	// quotaChunkBytes bounds the counts of one report message: a larger
	// report is sent as several.
	quotaChunkBytes = 16 << 10
	// quotaTokenLen is the length of a key's token on the wire: 12 bytes
	// of SHA-256, base64url.
	quotaTokenLen = 16
)

// The exact messages of a quota's refusals (JSON-RPC -32603, wrapping
// listen.ErrOverQuota).
const (
	msgTenantQuota    = "Subscription quota exceeded for this tenant"
	msgPrincipalQuota = "Subscription quota exceeded for this principal"
)

// QuotaOptions configure a Quota. Both keys are optional: a Quota without
// Tenant nor Principal admits every listen.
type QuotaOptions struct {
	// Tenant returns the tenant of a listen (from req.Auth, typically)
	// and the tenant's quota: the most listens it may hold open across
	// the deployment. An empty tenant is not counted at the tenant level;
	// a limit of 0 or less counts the tenant's listens without limiting
	// them. It runs in Acquire, for every listen: it must be quick; a
	// panic refuses the listen with an internal error.
	Tenant func(req *listen.Request) (tenant string, limit int)

	// Principal returns the principal of a listen within its tenant (the
	// user, the client) and its quota across the deployment, counted per
	// tenant and principal. Empty: not counted at this level; a limit of
	// 0 or less: counted, not limited. Same rules as Tenant.
	Principal func(req *listen.Request) (principal string, limit int)

	// Interval is the least time between two reports of this instance's
	// counts to the others: a change is reported at most Interval after it
	// happened (plus the broker's delivery time). It bounds the slack (see
	// the package documentation, Quotas). Zero means 10 ms.
	Interval time.Duration

	// TTL is how long the counts of another instance are kept without a
	// report from it; every instance also reports all its counts every
	// TTL/3, so that a lost report is repaired and a silent instance (one
	// that stopped, or is cut off) is forgotten after TTL. Zero means 3 s;
	// it must be at least 3 × Interval.
	TTL time.Duration

	// TopTenants is how many tenants QuotaStats.Tenants names, those with
	// the most listens open across the deployment; the others are summed
	// in one more entry, so that metrics have a bounded set of labels.
	// Zero means 20.
	TopTenants int
}

// Quota is a listen.Quota that holds tenants, and principals within
// them, to their quotas across the instances of a deployment, over the
// broker the instances share (see the package documentation, Quotas).
// Give it to the server as its quota hook (listen.Quota) and to the
// instance's bridge (Options.Quota), which carries the counts. Without a
// bridge, or while the bridge's broker is unreachable, it holds each key
// to a local share of its quota.
//
// All methods are safe for concurrent use.
type Quota struct {
	opts QuotaOptions
	hb   time.Duration // heartbeat: TTL/3

	mu        sync.Mutex
	keys      map[string]*quotaKey
	peers     map[string]*quotaPeer
	remoteN   int                 // entries of all peers' counts
	dirty     map[string]struct{} // keys changed since the last report (with a node)
	node      *Node
	connected bool
	instances int  // the divisor of the local share: instances seen when the broker was lost
	hello     bool // the next report asks the others for theirs (after attach, a reconnect)
	asked     bool // another instance asked: the next report holds every count
	stop      chan struct{}
	done      chan struct{}
	rest      uint64 // refusals of tenants no longer counted
	round     uint64 // this instance's reports so far: a round ends with each

	wake chan struct{} // cap 1: the counts changed, or a peer asked for a report

	admitted, refusedT, refusedP, sent, received, ignored atomic.Uint64
}

// quotaKey is one tenant's or principal's counts.
type quotaKey struct {
	local, remote int
	tenant        string // a tenant key's name, once a listen here named it
	refused       uint64
	// since counts the listens admitted here in round (Quota.round).
	since int
	round uint64
}

// quotaPeer is what a quota knows of another instance.
type quotaPeer struct {
	seen   time.Time
	counts map[string]peerCount
}

type peerCount struct {
	n  int
	at time.Time // last reported
	up time.Time // last reported higher than before
}

// NewQuota returns a quota with opts. It fails (ErrInvalidOptions) for a
// negative Interval, TTL or TopTenants, or a TTL under 3 × Interval. It
// starts no goroutine: the node it joins (Options.Quota) runs its
// reports.
func NewQuota(opts QuotaOptions) (*Quota, error) {
	if opts.Interval < 0 || opts.TTL < 0 || opts.TopTenants < 0 {
		return nil, fmt.Errorf("%w: QuotaOptions Interval, TTL and TopTenants must not be negative", ErrInvalidOptions)
	}
	opts.Interval = cmp.Or(opts.Interval, defaultQuotaInterval)
	opts.TTL = cmp.Or(opts.TTL, defaultQuotaTTL)
	opts.TopTenants = cmp.Or(opts.TopTenants, defaultTopTenants)
	if opts.TTL < 3*opts.Interval {
		return nil, fmt.Errorf("%w: QuotaOptions TTL (%v) must be at least 3 × Interval (%v)",
			ErrInvalidOptions, opts.TTL, opts.Interval)
	}
	return &Quota{
		opts:      opts,
		hb:        opts.TTL / 3,
		keys:      make(map[string]*quotaKey),
		peers:     make(map[string]*quotaPeer),
		instances: 1,
		wake:      make(chan struct{}, 1),
	}, nil
}

var _ listen.Quota = (*Quota)(nil)

// Acquire implements listen.Quota: it admits the listen when its tenant
// and its principal are both under their quotas, counting the listens
// open on this instance and those the other instances last reported, and
// within this instance's share of the room while others admit listens of
// the same key (see the package documentation, Quotas); in fallback, this
// instance's alone against its local share. A refusal
// is a *jsonrpc.Error -32603 "Subscription quota exceeded for this tenant"
// (or "... for this principal"), wrapping listen.ErrOverQuota. release
// uncounts the listen; calling it more than once does nothing.
func (q *Quota) Acquire(_ context.Context, req *listen.Request) (release func(), err error) {
	tenant, tlim, principal, plim, err := q.keysOf(req)
	if err != nil {
		return nil, err
	}
	var tt, pt string
	if tenant != "" {
		tt = quotaToken('t', tenant, "")
	}
	if principal != "" {
		pt = quotaToken('p', tenant, principal)
	}
	if tt == "" && pt == "" {
		q.admitted.Add(1)
		return func() {}, nil
	}
	now := time.Now()
	q.mu.Lock()
	switch {
	case tt != "" && !q.fits(tt, tlim, now):
		q.refuse(tt)
		q.mu.Unlock()
		q.refusedT.Add(1)
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, msgTenantQuota).WithCause(listen.ErrOverQuota)
	case pt != "" && !q.fits(pt, plim, now):
		q.refuse(tt)
		q.mu.Unlock()
		q.refusedP.Add(1)
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, msgPrincipalQuota).WithCause(listen.ErrOverQuota)
	}
	if tt != "" {
		q.key(tt).tenant = tenant
		q.change(tt, 1)
	}
	if pt != "" {
		q.change(pt, 1)
	}
	q.mu.Unlock()
	q.admitted.Add(1)
	q.signal()
	var once atomic.Bool
	return func() {
		if !once.CompareAndSwap(false, true) {
			return
		}
		q.mu.Lock()
		if tt != "" {
			q.change(tt, -1)
		}
		if pt != "" {
			q.change(pt, -1)
		}
		q.mu.Unlock()
		q.signal()
	}, nil
}

// keysOf runs the key functions, turning a panic into an error.
func (q *Quota) keysOf(req *listen.Request) (tenant string, tlim int, principal string, plim int, err error) {
	p := core.SafeCall(func() {
		if q.opts.Tenant != nil {
			tenant, tlim = q.opts.Tenant(req)
		}
		if q.opts.Principal != nil {
			principal, plim = q.opts.Principal(req)
		}
	})
	if p != nil {
		return "", 0, "", 0, fmt.Errorf("cluster: quota key function panicked: %v", p.Value)
	}
	return tenant, tlim, principal, plim, nil
}

// quotaToken returns the wire name of a tenant (level 't') or of a
// principal within its tenant (level 'p'): a hash, so that a report's
// size does not depend on the names and does not carry them.
func quotaToken(level byte, tenant, principal string) string {
	b := make([]byte, 0, 1+8+len(tenant)+len(principal))
	b = append(b, level)
	b = binary.BigEndian.AppendUint64(b, uint64(len(tenant)))
	b = append(b, tenant...)
	b = append(b, principal...)
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// fits reports whether one more listen of tok fits under limit. q.mu held.
func (q *Quota) fits(tok string, limit int, now time.Time) bool {
	if limit <= 0 {
		return true
	}
	k := q.keys[tok]
	if k == nil {
		return true // nobody holds a listen of tok
	}
	if q.fallback() {
		return k.local < max(1, limit/q.instances)
	}
	if k.local+k.remote >= limit {
		return false
	}
	// The headroom every instance sees is shared by those admitting.
	n := 1
	for _, p := range q.peers {
		if c, ok := p.counts[tok]; ok && now.Sub(c.up) <= q.hb {
			n++
		}
	}
	if n == 1 {
		return true
	}
	since := 0
	if k.round == q.round {
		since = k.since
	}
	headroom := limit - k.local - k.remote + since // when this round began
	return since < max(1, (headroom+n-1)/n)
}

// fallback reports whether the quota admits by local shares: no node, or
// its broker is unreachable. q.mu held.
func (q *Quota) fallback() bool { return q.node == nil || !q.connected }

// refuse counts a refusal against tenant key tt (may be ""). q.mu held.
func (q *Quota) refuse(tt string) {
	if k := q.keys[tt]; tt != "" && k != nil {
		k.refused++
		return
	}
	q.rest++
}

func (q *Quota) key(tok string) *quotaKey {
	k := q.keys[tok]
	if k == nil {
		k = &quotaKey{}
		q.keys[tok] = k
	}
	return k
}

// change adds d to tok's local count and marks it for the next report.
// q.mu held.
func (q *Quota) change(tok string, d int) {
	k := q.key(tok)
	k.local += d
	if d > 0 {
		if k.round != q.round {
			k.round, k.since = q.round, 0
		}
		k.since += d
	}
	if q.node != nil {
		q.dirty[tok] = struct{}{}
	}
	q.tidy(tok, k)
}

// addRemote adds d to tok's count at the other instances. q.mu held.
func (q *Quota) addRemote(tok string, d int) {
	if d == 0 {
		return
	}
	k := q.key(tok)
	k.remote += d
	q.tidy(tok, k)
}

// tidy forgets a key nobody holds a listen of. q.mu held.
func (q *Quota) tidy(tok string, k *quotaKey) {
	if k.local == 0 && k.remote == 0 {
		q.rest += k.refused
		delete(q.keys, tok)
	}
}

// signal wakes the reporter.
func (q *Quota) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// attach joins q to n and starts its reporter goroutine (ended by detach).
func (q *Quota) attach(n *Node) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.node != nil {
		return fmt.Errorf("%w: the Quota is already given to another bridge", ErrInvalidOptions)
	}
	q.node, q.connected, q.hello = n, true, true
	q.dirty = make(map[string]struct{})
	q.stop, q.done = make(chan struct{}), make(chan struct{})
	go q.run(n, q.stop, q.done)
	return nil
}

// detach stops the reporter, tells the other instances that this one
// leaves, and falls back to local shares. Idempotent.
func (q *Quota) detach(n *Node) {
	q.mu.Lock()
	if q.node != n || q.stop == nil {
		q.mu.Unlock()
		return
	}
	stop, done := q.stop, q.done
	q.stop = nil
	q.mu.Unlock()
	close(stop)
	<-done
	_, _, _ = n.send([]byte(`,"k":"` + wireQuota + `","q":{"b":true}}`))
	q.mu.Lock()
	defer q.mu.Unlock()
	q.lose(time.Now())
	q.node, q.dirty = nil, nil
	for origin, p := range q.peers {
		q.dropPeer(origin, p)
	}
}

// lose records the instances seen as the divisor of the local shares.
// q.mu held.
func (q *Quota) lose(now time.Time) {
	q.expire(now)
	q.instances = 1 + len(q.peers)
}

// connection tells q whether its node n's broker is reachable.
func (q *Quota) connection(n *Node, st string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.node != n {
		return
	}
	up := st == "connected"
	if q.connected && !up {
		q.lose(time.Now())
	}
	q.connected = up
}

// reconnected asks for a report of every count, asking the others for
// theirs.
func (q *Quota) reconnected(n *Node) {
	q.mu.Lock()
	if q.node != n {
		q.mu.Unlock()
		return
	}
	q.hello = true
	q.mu.Unlock()
	q.signal()
}

// run is the reporter goroutine: it reports the changed counts at most
// once per Interval, every count every TTL/3, and forgets the silent
// peers. It ends when stop is closed.
func (q *Quota) run(n *Node, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	hb := time.NewTicker(q.hb)
	defer hb.Stop()
	delay := time.NewTimer(time.Hour)
	delay.Stop()
	defer delay.Stop()
	var last time.Time
	report := func(full bool) {
		q.report(n, full)
		last = time.Now()
	}
	// The first report (a hello, asking the others for theirs) waits one
	// Interval, so that the bridge has subscribed when their answers come.
	delay.Reset(q.opts.Interval)
	delayC := delay.C
	for {
		select {
		case <-stop:
			return
		case <-hb.C:
			q.mu.Lock()
			q.expire(time.Now())
			q.mu.Unlock()
			report(true)
			continue
		case <-q.wake:
			if delayC != nil {
				continue // a report is already due
			}
		case <-delayC:
			delayC = nil
		}
		if wait := q.opts.Interval - time.Since(last); wait > 0 {
			delay.Reset(wait)
			delayC = delay.C
			continue
		}
		report(false)
	}
}

// report sends this instance's changed counts (full: all of them, which
// also tells the others it is alive), in as many messages as they need.
func (q *Quota) report(n *Node, full bool) {
	q.mu.Lock()
	// A report that answers a hello is full but asks for nothing, or two
	// instances would keep asking each other.
	hello := q.hello
	full = full || hello || q.asked
	q.hello, q.asked = false, false
	q.round++
	type entry struct {
		tok string
		n   int
	}
	var entries []entry
	if full {
		for tok, k := range q.keys {
			if k.local > 0 {
				entries = append(entries, entry{tok, k.local})
			}
		}
	}
	for tok := range q.dirty {
		if k := q.keys[tok]; k == nil || k.local == 0 || !full {
			var c int
			if k != nil {
				c = k.local
			}
			entries = append(entries, entry{tok, c})
		}
	}
	clear(q.dirty)
	q.mu.Unlock()
	if len(entries) == 0 && !full {
		return
	}
	budget := min(quotaChunkBytes, n.limit()) - len(n.head) - maxStampBytes - 64
	body := make([]byte, 0, 256)
	start := func() {
		body = append(body[:0], `,"k":"`+wireQuota+`","q":{`...)
		if hello {
			body = append(body, `"h":true,`...)
		}
		body = append(body, `"c":{`...)
	}
	flush := func() {
		body = append(body, "}}}"...)
		if _, _, err := n.send(body); err == nil {
			q.sent.Add(1)
		}
	}
	start()
	empty := true
	for _, e := range entries {
		if !empty && len(body)+quotaTokenLen+16 > budget {
			flush()
			start()
			empty = true
		}
		if !empty {
			body = append(body, ',')
		}
		body = append(body, '"')
		body = append(body, e.tok...)
		body = append(body, `":`...)
		body = strconv.AppendInt(body, int64(e.n), 10)
		empty = false
	}
	flush()
}

// receive applies another instance's report, received by n. Receive's
// goroutine.
func (q *Quota) receive(n *Node, origin string, w *wireQuotaBody) {
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.node != n {
		return // after detach
	}
	q.received.Add(1)
	p := q.peers[origin]
	if w.B {
		if p != nil {
			q.dropPeer(origin, p)
		}
		return
	}
	if p == nil {
		if len(q.peers) >= maxQuotaPeers {
			q.ignored.Add(uint64(len(w.C)))
			return
		}
		p = &quotaPeer{counts: make(map[string]peerCount)}
		q.peers[origin] = p
	}
	p.seen = now
	for tok, v := range w.C {
		old, had := p.counts[tok]
		switch {
		case v == 0:
			if had {
				delete(p.counts, tok)
				q.remoteN--
			}
		case !had && q.remoteN >= maxRemoteKeys:
			q.ignored.Add(1)
			continue
		default:
			if !had {
				q.remoteN++
			}
			c := peerCount{n: int(v), at: now, up: old.up}
			if c.n > old.n {
				c.up = now
			}
			p.counts[tok] = c
		}
		q.addRemote(tok, int(v)-old.n)
	}
	if w.H {
		q.asked = true
		q.signal()
	}
}

// dropPeer forgets an instance's counts. q.mu held.
func (q *Quota) dropPeer(origin string, p *quotaPeer) {
	for tok, c := range p.counts {
		q.addRemote(tok, -c.n)
	}
	q.remoteN -= len(p.counts)
	delete(q.peers, origin)
}

// expire forgets the peers and counts not reported for TTL. q.mu held.
func (q *Quota) expire(now time.Time) {
	for origin, p := range q.peers {
		if now.Sub(p.seen) > q.opts.TTL {
			q.dropPeer(origin, p)
			continue
		}
		for tok, c := range p.counts {
			if now.Sub(c.at) > q.opts.TTL {
				delete(p.counts, tok)
				q.remoteN--
				q.addRemote(tok, -c.n)
			}
		}
	}
}

// QuotaStats is a snapshot of a Quota.
type QuotaStats struct {
	// Admitted counts the listens admitted, RefusedTenant and
	// RefusedPrincipal those refused at each level, since NewQuota.
	Admitted, RefusedTenant, RefusedPrincipal uint64
	// Fallback is true while the quota admits by local shares: it has no
	// bridge, or its broker is unreachable.
	Fallback bool
	// Instances counts this instance and the others whose reports are
	// live; in fallback, the instances seen when the broker was lost (the
	// divisor of the local share).
	Instances int
	// ReportsSent and ReportsReceived count report messages;
	// IgnoredKeys the counts of reports ignored past the bounds on peers
	// and keys.
	ReportsSent, ReportsReceived, IgnoredKeys uint64
	// Tenants holds the TopTenants tenants with the most listens open
	// across the deployment (ties by name), then one entry with an empty
	// Tenant for all the others. Only tenants a listen on this instance
	// named are counted (the reports carry hashes, not names).
	Tenants []TenantStats
}

// TenantStats counts one tenant's listens (see QuotaStats.Tenants).
type TenantStats struct {
	Tenant string
	// Open counts the tenant's listens open on this instance; Deployment
	// adds those the other instances last reported.
	Open, Deployment int
	// Refused counts the tenant's listens refused here (at either level)
	// since its listens were last counted (a tenant with no listen open
	// anywhere is forgotten, its refusals going to the last entry).
	Refused uint64
}

// Stats returns the quota's counters.
func (q *Quota) Stats() QuotaStats {
	s := QuotaStats{
		Admitted:         q.admitted.Load(),
		RefusedTenant:    q.refusedT.Load(),
		RefusedPrincipal: q.refusedP.Load(),
		ReportsSent:      q.sent.Load(),
		ReportsReceived:  q.received.Load(),
		IgnoredKeys:      q.ignored.Load(),
	}
	q.mu.Lock()
	s.Fallback = q.fallback()
	if s.Fallback {
		s.Instances = q.instances
	} else {
		s.Instances = 1 + len(q.peers)
	}
	rest := TenantStats{Refused: q.rest}
	var named []TenantStats
	for _, k := range q.keys {
		if k.tenant != "" { // a tenant a listen here named (not a principal)
			named = append(named, TenantStats{Tenant: k.tenant, Open: k.local, Deployment: k.local + k.remote, Refused: k.refused})
		}
	}
	q.mu.Unlock()
	slices.SortFunc(named, func(a, b TenantStats) int {
		return cmp.Or(cmp.Compare(b.Deployment, a.Deployment), cmp.Compare(a.Tenant, b.Tenant))
	})
	if len(named) > q.opts.TopTenants {
		for _, t := range named[q.opts.TopTenants:] {
			rest.Open += t.Open
			rest.Deployment += t.Deployment
			rest.Refused += t.Refused
		}
		named = named[:q.opts.TopTenants]
	}
	s.Tenants = append(named, rest)
	return s
}
