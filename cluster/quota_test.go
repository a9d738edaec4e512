package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
)

// qbroker is an in-memory broker for quota tests: Send hands a copy of
// the message to every other node that is not cut off, one delivery at a
// time (under mu), so that each node's Receive runs on one goroutine at a
// time.
type qbroker struct {
	mu    sync.Mutex
	nodes []*cluster.Node
	cut   map[int]bool // by node index: its messages neither leave nor arrive
	lose  map[int]int  // by node index: how many of its next messages are lost
}

// start joins n instances, each with a Quota of qo, to the broker.
func (b *qbroker) start(t *testing.T, n int, qo cluster.QuotaOptions, co cluster.Options) []*cluster.Quota {
	t.Helper()
	quotas := make([]*cluster.Quota, n)
	if b.cut == nil {
		b.cut = make(map[int]bool)
	}
	base := len(b.nodes)
	for j := range n {
		i := base + j
		h, err := hub.New(hub.Options{})
		require.NoError(t, err)
		q, err := cluster.NewQuota(qo)
		require.NoError(t, err)
		o := co
		o.Quota = q
		node, err := cluster.NewNode(h, cluster.Transport{Scope: scope, Send: func(m cluster.Message) error {
			return b.send(i, m)
		}}, o)
		require.NoError(t, err)
		b.mu.Lock()
		b.nodes = append(b.nodes, node)
		b.mu.Unlock()
		t.Cleanup(node.Close)
		quotas[j] = q
	}
	return quotas
}

func (b *qbroker) send(from int, m cluster.Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cut[from] {
		return errors.New("cut off")
	}
	if b.lose[from] > 0 {
		b.lose[from]--
		return nil
	}
	m.Data = bytes.Clone(m.Data)
	for i, n := range b.nodes {
		if i != from && !b.cut[i] {
			n.Receive(m)
		}
	}
	return nil
}

func (b *qbroker) setCut(i int, cut bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cut[i] = cut
}

func (b *qbroker) node(i int) *cluster.Node {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.nodes[i]
}

// req is a listen whose Auth is "tenant/principal".
func req(auth string) *listen.Request { return &listen.Request{Auth: auth} }

// quotaOptions limits every tenant to tq and every principal to pq.
func quotaOptions(tq, pq int) cluster.QuotaOptions {
	return cluster.QuotaOptions{
		Tenant: func(r *listen.Request) (string, int) {
			t, _, _ := strings.Cut(r.Auth.(string), "/")
			return t, tq
		},
		Principal: func(r *listen.Request) (string, int) {
			_, p, _ := strings.Cut(r.Auth.(string), "/")
			return p, pq
		},
	}
}

// acquire takes n listens of auth on q, failing the test on a refusal.
func acquire(t *testing.T, q *cluster.Quota, auth string, n int) []func() {
	t.Helper()
	var rel []func()
	for range n {
		r, err := q.Acquire(context.Background(), req(auth))
		require.NoError(t, err)
		rel = append(rel, r)
	}
	return rel
}

// refused asserts that q refuses a listen of auth with msg.
func refused(t *testing.T, q *cluster.Quota, auth, msg string) {
	t.Helper()
	r, err := q.Acquire(context.Background(), req(auth))
	require.Error(t, err)
	assert.Nil(t, r)
	assert.ErrorIs(t, err, listen.ErrOverQuota)
	var je *jsonrpc.Error
	require.ErrorAs(t, err, &je)
	assert.Equal(t, jsonrpc.CodeInternalError, je.Code)
	assert.Equal(t, msg, je.Message)
}

const (
	msgTenant    = "Subscription quota exceeded for this tenant"
	msgPrincipal = "Subscription quota exceeded for this principal"
)

// settle lets every report reach every instance.
func settle() {
	time.Sleep(50 * time.Millisecond)
	synctest.Wait()
}

// TestQuotaAcrossInstances: a tenant's quota holds across three
// instances: listens open anywhere count everywhere once reported, a
// release frees a place on every instance, and another tenant is not
// affected.
func TestQuotaAcrossInstances(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b qbroker
		qs := b.start(t, 3, quotaOptions(5, 0), cluster.Options{})
		settle()
		rel := acquire(t, qs[0], "acme/a", 2)
		acquire(t, qs[1], "acme/b", 2)
		settle()
		acquire(t, qs[2], "acme/c", 1)
		settle()
		for _, q := range qs {
			refused(t, q, "acme/d", msgTenant)
		}
		acquire(t, qs[2], "other/x", 5) // another tenant has its own quota

		rel[0]()
		rel[0]() // a second release does nothing
		settle()
		acquire(t, qs[1], "acme/e", 1)
		settle()
		refused(t, qs[2], "acme/f", msgTenant)

		s := qs[2].Stats()
		assert.False(t, s.Fallback)
		assert.Equal(t, 3, s.Instances)
		assert.Equal(t, uint64(2), s.RefusedTenant)
		assert.Equal(t, []cluster.TenantStats{
			{Tenant: "acme", Open: 1, Deployment: 5, Refused: 2},
			{Tenant: "other", Open: 5, Deployment: 5},
			{},
		}, s.Tenants)
	})
}

// TestQuotaShare: while other instances admit listens of a key (within
// the last TTL/3), an instance takes at most its share of the room it
// sees, ⌈room/n⌉, per report of its own; alone, all of it.
func TestQuotaShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b qbroker
		qs := b.start(t, 3, quotaOptions(30, 0), cluster.Options{})
		settle()
		rel := make([][]func(), 3)
		for range 10 { // one a round: always within the share
			for i, q := range qs {
				rel[i] = append(rel[i], acquire(t, q, "acme/a", 1)...)
			}
			settle()
		}
		refused(t, qs[0], "acme/a", msgTenant)
		for _, r := range rel[0][:6] { // qs[0] frees 6 places
			r()
		}
		settle()
		acquire(t, qs[1], "acme/a", 1) // ⌈6/3⌉ = 2 in this round
		synctest.Wait()                // its report goes: a new round
		acquire(t, qs[1], "acme/a", 2) // ⌈5/3⌉ = 2
		refused(t, qs[1], "acme/a", msgTenant)
		settle()
		acquire(t, qs[2], "acme/a", 1) // the room left, 3, shared: 1
		synctest.Wait()
		acquire(t, qs[2], "acme/a", 1) // ⌈2/3⌉
		refused(t, qs[2], "acme/a", msgTenant)
		settle() // the next round
		acquire(t, qs[2], "acme/a", 1)
		assert.Equal(t, 30, qs[2].Stats().Tenants[0].Deployment)

		// Once the others have admitted nothing for TTL/3, the room is all
		// of one instance's again.
		time.Sleep(time.Second)
		synctest.Wait()
		for _, r := range rel[0][6:] {
			r()
		}
		settle()
		acquire(t, qs[0], "acme/a", 4)
	})
}

// TestQuotaPrincipal: a principal's quota holds across instances within
// its tenant; a refusal at this level has its own message and counts
// against the tenant.
func TestQuotaPrincipal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b qbroker
		qs := b.start(t, 2, quotaOptions(10, 2), cluster.Options{})
		settle()
		acquire(t, qs[0], "acme/alice", 1)
		settle()
		acquire(t, qs[1], "acme/alice", 1)
		settle()
		refused(t, qs[0], "acme/alice", msgPrincipal)
		refused(t, qs[1], "acme/alice", msgPrincipal)
		acquire(t, qs[1], "acme/bob", 2)
		acquire(t, qs[1], "beta/alice", 2) // the same name in another tenant
		settle()
		s := qs[0].Stats()
		assert.Equal(t, uint64(1), s.RefusedPrincipal)
		assert.Equal(t, uint64(0), s.RefusedTenant)
		assert.Equal(t, cluster.TenantStats{Tenant: "acme", Open: 1, Deployment: 4, Refused: 1}, s.Tenants[0])
	})
}

// TestQuotaFallback: with its broker lost, an instance holds each key to
// its local share, the quota divided by the instances it last saw (at
// least 1), and goes back to the deployment's counts when it returns.
func TestQuotaFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b qbroker
		qs := b.start(t, 3, quotaOptions(7, 0), cluster.Options{})
		settle()
		acquire(t, qs[1], "acme/a", 4)
		settle()
		b.setCut(0, true)
		b.node(0).Connection(cluster.ConnectionInfo{Status: "reconnecting"})
		s := qs[0].Stats()
		assert.True(t, s.Fallback)
		assert.Equal(t, 3, s.Instances)
		rel := acquire(t, qs[0], "acme/a", 2) // 7/3 = 2, whatever the others hold
		refused(t, qs[0], "acme/a", msgTenant)
		b.setCut(0, false)
		b.node(0).Connection(cluster.ConnectionInfo{Status: "connected"})
		b.node(0).Reconnected()
		settle()
		assert.False(t, qs[0].Stats().Fallback)
		acquire(t, qs[0], "acme/a", 1)
		settle()
		for _, q := range qs {
			refused(t, q, "acme/a", msgTenant)
		}
		for _, r := range rel {
			r()
		}
		settle()
		acquire(t, qs[2], "acme/a", 1) // the others admitted within TTL/3: a third of the room per round
		settle()
		acquire(t, qs[2], "acme/a", 1)

		// A quota no bridge carries admits its key's whole quota.
		alone, err := cluster.NewQuota(quotaOptions(3, 0))
		require.NoError(t, err)
		acquire(t, alone, "acme/a", 3)
		refused(t, alone, "acme/a", msgTenant)
		assert.True(t, alone.Stats().Fallback)
		assert.Equal(t, 1, alone.Stats().Instances)
	})
}

// TestQuotaHello: an instance that joins asks for the others' counts and
// has them within a few Intervals, not at their next full report.
func TestQuotaHello(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b qbroker
		qs := b.start(t, 2, quotaOptions(3, 0), cluster.Options{})
		settle()
		acquire(t, qs[0], "acme/a", 2)
		acquire(t, qs[1], "acme/a", 1)
		time.Sleep(500 * time.Millisecond) // well before the next full report
		late := b.start(t, 1, quotaOptions(3, 0), cluster.Options{})[0]
		time.Sleep(30 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 3, late.Stats().Instances)
		refused(t, late, "acme/a", msgTenant)
	})
}

// TestQuotaQuiet: once the instances have greeted each other, a quota
// without changes sends nothing until its next full report: answers to a
// hello ask for nothing back.
func TestQuotaQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b qbroker
		qs := b.start(t, 3, quotaOptions(5, 0), cluster.Options{})
		settle()
		var before []uint64
		for _, q := range qs {
			before = append(before, q.Stats().ReportsSent)
		}
		time.Sleep(900 * time.Millisecond) // the full reports are due at 1 s
		synctest.Wait()
		for i, q := range qs {
			assert.Equal(t, before[i], q.Stats().ReportsSent, "instance %d", i)
		}
	})
}

// TestQuotaLostReport: a lost report is repaired by the next full one
// (every TTL/3).
func TestQuotaLostReport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b qbroker
		qs := b.start(t, 2, quotaOptions(1, 0), cluster.Options{})
		settle()
		b.mu.Lock()
		b.lose = map[int]int{0: 1}
		b.mu.Unlock()
		acquire(t, qs[0], "acme/a", 1)
		settle()
		acquire(t, qs[1], "acme/a", 1)[0]() // admitted: qs[1] has not heard of qs[0]'s
		time.Sleep(time.Second)
		synctest.Wait()
		refused(t, qs[1], "acme/a", msgTenant)
	})
}

// TestQuotaForgets: the counts of an instance that leaves are dropped at
// once (its bridge's Close says so); those of one that goes silent after
// TTL, and a lost report is repaired by the next full one.
func TestQuotaForgets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b qbroker
		qs := b.start(t, 3, quotaOptions(4, 0), cluster.Options{})
		settle()
		for range 2 { // one a round: always within the share
			acquire(t, qs[1], "acme/a", 1)
			acquire(t, qs[2], "acme/a", 1)
			settle()
		}
		refused(t, qs[0], "acme/a", msgTenant)

		b.node(1).Close()
		synctest.Wait()
		assert.Equal(t, 2, qs[0].Stats().Instances)
		assert.True(t, qs[1].Stats().Fallback)
		acquire(t, qs[0], "acme/a", 1) // qs[2] admits too: half the room per round
		settle()
		acquire(t, qs[0], "acme/a", 1)
		refused(t, qs[0], "acme/a", msgTenant)

		b.setCut(2, true) // silent, without knowing
		time.Sleep(3*time.Second + time.Second + time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 1, qs[0].Stats().Instances)
		acquire(t, qs[0], "acme/a", 2)
	})
}

// TestQuotaChunks: a report larger than a message is split, and every
// count reaches the others.
func TestQuotaChunks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b qbroker
		qs := b.start(t, 2, quotaOptions(0, 1), cluster.Options{MaxMessageBytes: cluster.MinMaxMessageBytes})
		settle()
		const n = 200
		for i := range n {
			acquire(t, qs[0], fmt.Sprintf("acme/p%d", i), 1)
		}
		settle()
		for i := range n {
			refused(t, qs[1], fmt.Sprintf("acme/p%d", i), msgPrincipal)
		}
		assert.Greater(t, qs[0].Stats().ReportsSent, uint64(10))
		// The periodic full report is split too.
		time.Sleep(time.Second)
		synctest.Wait()
		refused(t, qs[1], "acme/p7", msgPrincipal)
		assert.Equal(t, cluster.TenantStats{Tenant: "acme", Open: n, Deployment: n}, qs[0].Stats().Tenants[0])
	})
}

// TestQuotaStatsTopTenants: Stats names the TopTenants tenants with the
// most listens and sums the others in one entry.
func TestQuotaStatsTopTenants(t *testing.T) {
	o := quotaOptions(0, 0)
	o.TopTenants = 2
	q, err := cluster.NewQuota(o)
	require.NoError(t, err)
	acquire(t, q, "a/x", 1)
	acquire(t, q, "b/x", 3)
	acquire(t, q, "c/x", 2)
	acquire(t, q, "d/x", 2)
	acquire(t, q, "/x", 1) // no tenant: not counted
	s := q.Stats()
	assert.Equal(t, uint64(9), s.Admitted)
	assert.Equal(t, []cluster.TenantStats{
		{Tenant: "b", Open: 3, Deployment: 3},
		{Tenant: "c", Open: 2, Deployment: 2},
		{Open: 3, Deployment: 3},
	}, s.Tenants)
}

// TestQuotaKeyPanics: a panicking key function refuses the listen with an
// error that is no quota refusal (an internal error).
func TestQuotaKeyPanics(t *testing.T) {
	q, err := cluster.NewQuota(cluster.QuotaOptions{Tenant: func(*listen.Request) (string, int) { panic("boom") }})
	require.NoError(t, err)
	r, err := q.Acquire(context.Background(), req("a/b"))
	assert.Nil(t, r)
	require.Error(t, err)
	assert.NotErrorIs(t, err, listen.ErrOverQuota)
	assert.Contains(t, err.Error(), "boom")
}

// TestQuotaOptions: invalid options and a second bridge are refused.
func TestQuotaOptions(t *testing.T) {
	for _, o := range []cluster.QuotaOptions{
		{Interval: -1}, {TTL: -1}, {TopTenants: -1},
		{Interval: time.Second, TTL: 2 * time.Second},
	} {
		_, err := cluster.NewQuota(o)
		assert.ErrorIs(t, err, cluster.ErrInvalidOptions, "%+v", o)
	}
	q, err := cluster.NewQuota(cluster.QuotaOptions{})
	require.NoError(t, err)
	send := func(cluster.Message) error { return nil }
	h1, err := hub.New(hub.Options{})
	require.NoError(t, err)
	n1, err := cluster.NewNode(h1, cluster.Transport{Scope: scope, Send: send}, cluster.Options{Quota: q})
	require.NoError(t, err)
	h2, err := hub.New(hub.Options{})
	require.NoError(t, err)
	_, err = cluster.NewNode(h2, cluster.Transport{Scope: scope, Send: send}, cluster.Options{Quota: q})
	assert.ErrorIs(t, err, cluster.ErrInvalidOptions)
	n1.Close()
	n2, err := cluster.NewNode(h2, cluster.Transport{Scope: scope, Send: send}, cluster.Options{Quota: q})
	require.NoError(t, err, "a closed node hands its quota back")
	assert.False(t, q.Stats().Fallback)
	n1.Connection(cluster.ConnectionInfo{Status: "disconnected"}) // the old node's bridge, late
	assert.False(t, q.Stats().Fallback, "the old node's connection changed the new one's quota")
	n2.Close()
	assert.True(t, q.Stats().Fallback)
}
