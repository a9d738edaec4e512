package natsbridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/quotatest"
	"github.com/mcplisten/listen/natsbridge"
)

// TestQuotaChurn: three instances on a real NATS server hold a tenant to
// its quota Q = 100 under about 1,000 opens per second of churn spread
// over them (each listen held 100 to 300 ms, so the tenant asks for about
// twice its quota): sampled every 10 ms, and exactly at every admission,
// the tenant's open listens never exceed Q plus the documented slack (the
// listens admitted within one Interval plus the delivery time, here
// bounded by 20 ms), another tenant is never refused, and with the
// server gone each instance holds the tenant to its local share, ⌊Q/3⌋.
func TestQuotaChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("a churn of several seconds")
	}
	ns := startNATS(t, 0)
	const q = 100
	opts := quotatest.Options(q)
	var quotas []*cluster.Quota
	var recs []*recorder
	for range 3 {
		qt, err := cluster.NewQuota(opts)
		require.NoError(t, err)
		h, err := hub.New(hub.Options{})
		require.NoError(t, err)
		rec := newRecorder()
		br, err := natsbridge.Connect(ns.ClientURL(), h,
			natsbridge.Options{Options: cluster.Options{Quota: qt, Hooks: rec}},
			nats.ReconnectWait(50*time.Millisecond), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		require.NoError(t, err)
		t.Cleanup(func() { _ = br.Close() })
		quotas = append(quotas, qt)
		recs = append(recs, rec)
	}
	require.Eventually(t, func() bool {
		for _, qt := range quotas {
			if qt.Stats().Instances != 3 {
				return false
			}
		}
		return true
	}, failsafe, 5*time.Millisecond, "the instances see each other")

	cfg := quotatest.Config{
		Quotas: quotas, Rate: 1000, Duration: 3 * time.Second,
		MinLife: 100 * time.Millisecond, MaxLife: 300 * time.Millisecond,
		Sample: 10 * time.Millisecond, Window: 10*time.Millisecond + 20*time.Millisecond, Calm: 30,
	}
	r := quotatest.Run(context.Background(), cfg)
	t.Logf("broker up: max open %d (sampled %d over %d samples), Q %d, slack bound %d; admitted %d, refused %d; calm refused %d",
		r.MaxExact, r.MaxSampled, r.Samples, q, r.MaxWindow, r.Admitted, r.Refused, r.CalmRefused)
	assert.LessOrEqual(t, r.MaxExact, q+r.MaxWindow)
	assert.GreaterOrEqual(t, r.Samples, 250)
	assert.Positive(t, r.Refused, "the tenant asked for more than its quota")
	assert.Zero(t, r.CalmRefused)

	stopNATS(ns)
	for _, rec := range recs {
		await(t, rec.Conns, "the broker lost", func(i cluster.ConnectionInfo) bool { return i.Status != cluster.Connected })
	}
	for _, qt := range quotas {
		s := qt.Stats()
		assert.True(t, s.Fallback)
		assert.Equal(t, 3, s.Instances)
	}
	cfg.Duration = time.Second
	r = quotatest.Run(context.Background(), cfg)
	t.Logf("broker down: max open %d (sampled %d), per instance %v; calm refused %d", r.MaxExact, r.MaxSampled, r.MaxLocal, r.CalmRefused)
	for _, m := range r.MaxLocal {
		assert.Equal(t, q/3, m)
	}
	assert.LessOrEqual(t, r.MaxExact, 3*(q/3))
	assert.Zero(t, r.CalmRefused)
}
